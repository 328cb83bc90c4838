import os from "node:os";
import path from "node:path";
import { openCaseFile } from "../casefile/index";
import { CasefileError, fileError, isCasefileError, isErrnoError } from "../engine/errors";
import type { Json } from "../engine/records";
import type { ProviderConfig, RunCommand } from "../protocol/runner";
import { runSession, type SessionResult } from "../runner/session";
import {
  jsonOption as jsonArg,
  parseOptions as parse,
  providerOption as providerArg,
  tokenBudgetOption,
  type Command,
  type Io,
} from "./args";
import { compact } from "./compactCommand";
import { exportEval, runEval } from "./evalCommands";
import { formatInspection, inspectCaseFile } from "./inspect";
import { reporter } from "./report";
import { replay } from "./replayCommand";
import { rules, RULES_USAGE } from "./ruleCommands";

/**
 * `casefile` — the runner in-process, for terminals and CI.
 *
 * Exit codes: 0 the command did what was asked (a run completed or is waiting for a person);
 * 1 the run ended failed or stopped; 2 usage error; 3 refused (bad case file, invalid input,
 * workflow error...). Errors are one line on stderr: `casefile: CODE: message`.
 */

export type { Command, Io };

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

/** The handlers of the commands main.ts itself holds; COMMANDS below names them. */
const handlers = {
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
    const caseFile = values["case-file"] ?? defaultCaseFile(workflowPath);
    return session(
      { kind: "run", workflowPath, caseFile, input: jsonArg(values.input, "input") },
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

  async inspect(args, io) {
    const { values, positionals } = parse(args, { run: { type: "string" }, json: { type: "boolean" } }, 1);
    const caseFile = positionals[0];
    if (!caseFile) throw new CasefileError("USAGE", "inspect needs a case file");
    const store = await openCaseFile(caseFile, { readOnly: true });
    try {
      const file = path.resolve(caseFile);
      // What a killed writer left in the journal only (safe there; `casefile compact` folds it in),
      // and the rows whose stored JSON no longer reads: inspect names them and shows what it can.
      const journal = { uncompactedSupersteps: store.uncompactedSupersteps(), uncompactedRecords: store.uncompactedRecords() };
      const inspected = inspectCaseFile(store, file, values.run, { journal, damaged: store.damagedRecords() });
      if (values.run && inspected.runs.length === 0 && inspected.unreadable.length === 0)
        throw new CasefileError("UNKNOWN_RUN", `no run "${values.run}" in ${file}`);
      io.out(values.json ? JSON.stringify(inspected, null, 2) : formatInspection(file, inspected.runs, inspected));
      return 0;
    } finally {
      store.close();
    }
  },

  /** DAP on stdin/stdout: the debug adapter the extension runs inline, for any DAP client. */
  async dap(args, io) {
    parse(args, {}, 0);
    const { serveStdio } = await import("../debug/debugAdapter.js");
    return serveStdio({ env: io.env });
  },
} satisfies Record<string, Command>;

/**
 * Every command: its name, its synopsis (one line per form, as `--help` and README's CLI block
 * print it) and its handler. `--help`, the unknown-command error and `commands` are made from
 * this one table; test/unit/cli/usage.test.ts checks README's CLI block against it.
 */
export const COMMANDS: readonly { name: string; synopsis: readonly string[]; handler: Command }[] = [
  {
    name: "run",
    synopsis: ["casefile run <workflow.ts> [--case-file F] [--input JSON] [--provider JSON] [--token-budget N]"],
    handler: handlers.run,
  },
  {
    name: "resume",
    synopsis: ["casefile resume <case file> --checkpoint ID [--patch JSON] [--workflow F] [--provider JSON] [--token-budget N]"],
    handler: handlers.resume,
  },
  {
    name: "respond",
    synopsis: ["casefile respond <case file> --request ID --answer JSON [--by NAME] [--workflow F] [--provider JSON] [--token-budget N]"],
    handler: handlers.respond,
  },
  { name: "inspect", synopsis: ["casefile inspect <case file> [--run ID] [--json]"], handler: handlers.inspect },
  {
    name: "replay",
    synopsis: [
      "casefile replay <case file> --step AGENT_CALL_ID|SUPERSTEP:EXECUTOR [--run ID] [--mode recorded|live|edited] [--messages FILE.json] [--provider JSON] [--token-budget N] [--workflow F]",
    ],
    handler: replay,
  },
  {
    name: "export-eval",
    synopsis: [
      "casefile export-eval <case file> --step AGENT_CALL_ID|SUPERSTEP:EXECUTOR [--run ID] [--format json|openai-jsonl|promptfoo] [--out PATH] [--expect JSON] [--workflow F]",
    ],
    handler: exportEval,
  },
  { name: "eval", synopsis: ["casefile eval <dir or files...> [--provider JSON] [--junit PATH] [--workflow F]"], handler: runEval },
  { name: "compact", synopsis: ["casefile compact <case file>"], handler: compact },
  { name: "dap", synopsis: ["casefile dap"], handler: handlers.dap },
  { name: "rules", synopsis: RULES_USAGE.split("\n").map((l) => l.trim()), handler: rules },
];

/** The handlers by name, for main(). */
export const commands: Record<string, Command> = Object.fromEntries(COMMANDS.map((c) => [c.name, c.handler]));

/** What `casefile --help` prints. */
export const USAGE = ["usage:", ...COMMANDS.flatMap((c) => c.synopsis.map((l) => `  ${l}`))].join("\n");

/** Who answers a request from a terminal when --by is not given: the OS user. */
function osUser(): string | undefined {
  try {
    return os.userInfo().username;
  } catch {
    return undefined; // no passwd entry for this uid: the answer is recorded without a name
  }
}

/** `examples/invoice/workflow.ts` -> `examples/invoice/workflow.casefile`. */
function defaultCaseFile(workflowPath: string): string {
  return workflowPath.replace(/\.[cm]?[tj]s$/, "") + ".casefile";
}

export async function main(argv: string[], io: Io): Promise<number> {
  const [name, ...rest] = argv;
  if (name === "--help" || name === "-h") {
    io.out(USAGE);
    return 0;
  }
  const command = name === undefined ? undefined : Object.hasOwn(commands, name) ? commands[name] : undefined;
  if (!command) {
    const what = name === undefined ? "no command given" : `unknown command "${name}"`;
    io.err(`casefile: USAGE: ${what} (one of ${Object.keys(commands).join(", ")}); casefile --help for usage`);
    return 2;
  }
  try {
    return await command(rest, io);
  } catch (e) {
    if (isCasefileError(e)) {
      io.err(`casefile: ${e.code}: ${e.message.split("\n").join(" ")}`);
      return e.code === "USAGE" ? 2 : 3;
    }
    // A file-system error a command did not name itself is still the user's to fix, not a bug.
    if (isErrnoError(e)) {
      io.err(`casefile: FILE_ERROR: ${fileError(e, e.syscall ?? "use").message}`);
      return 3;
    }
    io.err(`casefile: INTERNAL: ${(e as Error).stack ?? String(e)}`);
    return 3;
  }
}

/** Entry point of bin/casefile.js: the process's arguments, streams and exit code. */
export function cli(): void {
  void main(process.argv.slice(2), {
    out: (l) => process.stdout.write(l + "\n"),
    err: (l) => process.stderr.write(l + "\n"),
    env: process.env,
  }).then((code) => {
    process.exitCode = code;
  });
}

if (require.main === module) cli();
