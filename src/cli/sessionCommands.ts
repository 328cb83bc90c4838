import os from "node:os";
import type { Json } from "../engine/records";
import type { ProviderConfig, RunCommand } from "../protocol/runner";
import { runSession, type SessionResult } from "../runner/session";
import { CasefileError } from "../engine/errors";
import {
  jsonOption as jsonArg,
  parseOptions as parse,
  providerOption as providerArg,
  tokenBudgetOption,
  type Command,
  type Io,
} from "./args";
import { reporter } from "./report";

/**
 * `casefile run`, `resume` and `respond`: one command run in this process by runner/session.ts,
 * its events reported to the terminal (report.ts). main.ts loads this module on demand, so the
 * engine, the workflow bundler and the providers are not loaded for the other commands.
 */

/**
 * Runs one command in-process. `tokenBudget` is the --token-budget option's text (else
 * $CASEFILE_TOKEN_BUDGET): the hard budget of agent steps that declare none.
 */
async function session(
  command: RunCommand,
  provider: ProviderConfig | undefined,
  io: Io,
  tokenBudget: string | undefined,
): Promise<number> {
  const result: SessionResult = await runSession(command, {
    provider,
    defaultBudget: tokenBudgetOption(tokenBudget, io),
    env: io.env,
    ...reporter(io),
  });
  io.out(
    result.failedAt !== undefined
      ? `run ${result.runId} ${result.status} at superstep ${result.failedAt} (last checkpoint ${result.checkpointId})`
      : `run ${result.runId} ${result.status} at superstep ${result.superstep} (checkpoint ${result.checkpointId})`,
  );
  io.out(`case file: ${result.caseFile}`);
  if (result.error) io.err(`casefile: ${result.error.code}: ${result.error.message}`);
  return result.status === "completed" || result.status === "waiting" ? 0 : 1;
}

/** The run, resume and respond commands (main.ts's COMMANDS loads them on demand). */
export const sessionCommands = {
  async run(args, io) {
    const { values, positionals } = parse(
      args,
      {
        "case-file": { type: "string" },
        input: { type: "string" },
        provider: { type: "string" },
        "token-budget": { type: "string" },
      },
      1,
    );
    const workflowPath = positionals[0];
    if (!workflowPath) throw new CasefileError("USAGE", "run needs a workflow file");
    // No --case-file: the runner names it from the input (cases/<caseId>.casefile, engine/caseName.ts).
    const caseFile = values["case-file"];
    return session(
      { kind: "run", workflowPath, ...(caseFile ? { caseFile } : {}), input: jsonArg(values.input, "input") },
      providerArg(values.provider, io),
      io,
      values["token-budget"],
    );
  },

  async resume(args, io) {
    const { values, positionals } = parse(
      args,
      {
        checkpoint: { type: "string" },
        patch: { type: "string" },
        workflow: { type: "string" },
        provider: { type: "string" },
        "token-budget": { type: "string" },
      },
      1,
    );
    const caseFile = positionals[0];
    if (!caseFile || !values.checkpoint) throw new CasefileError("USAGE", "resume needs a case file and --checkpoint ID");
    const patch = jsonArg(values.patch, "patch");
    if (patch !== undefined && (typeof patch !== "object" || patch === null || Array.isArray(patch))) {
      throw new CasefileError("USAGE", "--patch must be a JSON object of state key -> new value");
    }
    return session(
      {
        kind: "resume",
        caseFile,
        checkpointId: values.checkpoint,
        patch: patch as Record<string, Json> | undefined,
        workflowPath: values.workflow,
      },
      providerArg(values.provider, io),
      io,
      values["token-budget"],
    );
  },

  async respond(args, io) {
    const { values, positionals } = parse(
      args,
      {
        request: { type: "string" },
        answer: { type: "string" },
        by: { type: "string" },
        workflow: { type: "string" },
        provider: { type: "string" },
        "token-budget": { type: "string" },
      },
      1,
    );
    const caseFile = positionals[0];
    if (!caseFile || !values.request || values.answer === undefined)
      throw new CasefileError("USAGE", "respond needs a case file, --request ID and --answer JSON");
    return session(
      {
        kind: "respond",
        caseFile,
        requestId: values.request,
        answer: jsonArg(values.answer, "answer"),
        by: values.by ?? osUser(),
        workflowPath: values.workflow,
      },
      providerArg(values.provider, io),
      io,
      values["token-budget"],
    );
  },
} satisfies Record<string, Command>;

/** Who answers a request from a terminal when --by is not given: the OS user. */
function osUser(): string | undefined {
  try {
    return os.userInfo().username;
  } catch {
    return undefined; // no passwd entry for this uid: the answer is recorded without a name
  }
}
