import { loadSqlJs } from "../casefile/sqlite";
import type { Json } from "../engine/records";
import type { ProviderConfig, RunCommand } from "../protocol/runner";
import { runSession, type SessionResult } from "../runner/session";
import { STORE_OPTIONS, locationFromOptions, type StoreLocation } from "../runner/storeLocation";
import { CasefileError } from "../engine/errors";
import { otelSettings } from "../otel/config";
import { actingUser, jsonOption as jsonArg, parseOptions as parse, tokenBudgetOption, type Command, type Io } from "./args";
import { providerOption as providerArg } from "./providerArgs";
import { reporter, stopOnInterrupt } from "./report";

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
  location: StoreLocation | undefined,
  otel: OtelFlags,
): Promise<number> {
  const traces = otelSettings(io.env, {
    enabled: otel.otel === true || otel["otel-content"] === true,
    includeContent: otel["otel-content"],
  });
  // A case file's SQLite loads while the workflow is bundled: on the next turn of the event loop,
  // by when esbuild works in its own process (a cached bundle is read synchronously, before). A
  // failure is not kept: the open that needs it reports it.
  if (location?.kind !== "postgres") setImmediate(() => loadSqlJs().catch(() => {}));
  const report = reporter(io);
  const stopInterrupt = stopOnInterrupt(io, report.control);
  const result: SessionResult = await runSession(command, {
    ...(traces ? { otel: traces } : {}),
    // A case file is the command's caseFile (or, for a new run, named by the runner from its input).
    ...(location?.kind === "postgres" ? { location } : {}),
    provider,
    defaultBudget: tokenBudgetOption(tokenBudget, io),
    env: io.env,
    ...report,
  }).finally(stopInterrupt);
  io.out(
    result.failedAt !== undefined
      ? `run ${result.runId} ${result.status} at superstep ${result.failedAt} (last checkpoint ${result.checkpointId})`
      : `run ${result.runId} ${result.status} at superstep ${result.superstep} (checkpoint ${result.checkpointId})`,
  );
  io.out(`${location?.kind === "postgres" ? "case" : "case file"}: ${result.caseFile}`);
  if (result.error) io.err(`casefile: ${result.error.code}: ${result.error.message}`);
  return result.status === "completed" || result.status === "waiting" ? 0 : 1;
}

/**
 * `--otel`: send the run as an OpenTelemetry trace when the command ends (also on when an
 * OTEL_EXPORTER_OTLP_*ENDPOINT variable is set); `--otel-content` adds message content and
 * payloads to it (and turns it on). otel/config.ts resolves where to.
 */
const OTEL_OPTIONS = { otel: { type: "boolean" }, "otel-content": { type: "boolean" } } as const;
type OtelFlags = { otel?: boolean; "otel-content"?: boolean };

/** The run, resume and respond commands (main.ts's COMMANDS loads them on demand). */
export const sessionCommands = {
  async run(args, io) {
    const { values, positionals } = parse(
      args,
      {
        "case-file": { type: "string" },
        ...STORE_OPTIONS,
        input: { type: "string" },
        provider: { type: "string" },
        "token-budget": { type: "string" },
        ...OTEL_OPTIONS,
      },
      1,
    );
    const workflowPath = positionals[0];
    if (!workflowPath) throw new CasefileError("USAGE", "run needs a workflow file");
    // No --case-file: the runner names it from the input (cases/<caseId>.casefile, engine/caseName.ts).
    const location = locationFromOptions("run", values, values["case-file"]);
    return session(
      { kind: "run", workflowPath, ...(location ? { caseFile: caseFileOf(location) } : {}), input: jsonArg(values.input, "input") },
      providerArg(values.provider, io),
      io,
      values["token-budget"],
      location,
      values,
    );
  },

  async resume(args, io) {
    const { values, positionals } = parse(
      args,
      {
        ...STORE_OPTIONS,
        checkpoint: { type: "string" },
        patch: { type: "string" },
        workflow: { type: "string" },
        provider: { type: "string" },
        "token-budget": { type: "string" },
        ...OTEL_OPTIONS,
      },
      1,
    );
    const location = locationFromOptions("resume", values, positionals[0]);
    if (!location || !values.checkpoint)
      throw new CasefileError("USAGE", "resume needs a case file (or --store URL --case ID) and --checkpoint ID");
    const patch = jsonArg(values.patch, "patch");
    if (patch !== undefined && (typeof patch !== "object" || patch === null || Array.isArray(patch))) {
      throw new CasefileError("USAGE", "--patch must be a JSON object of state key -> new value");
    }
    return session(
      {
        kind: "resume",
        caseFile: caseFileOf(location),
        checkpointId: values.checkpoint,
        patch: patch as Record<string, Json> | undefined,
        workflowPath: values.workflow,
      },
      providerArg(values.provider, io),
      io,
      values["token-budget"],
      location,
      values,
    );
  },

  async respond(args, io) {
    const { values, positionals } = parse(
      args,
      {
        ...STORE_OPTIONS,
        request: { type: "string" },
        answer: { type: "string" },
        by: { type: "string" },
        workflow: { type: "string" },
        provider: { type: "string" },
        "token-budget": { type: "string" },
        ...OTEL_OPTIONS,
      },
      1,
    );
    const location = locationFromOptions("respond", values, positionals[0]);
    if (!location || !values.request || values.answer === undefined)
      throw new CasefileError("USAGE", "respond needs a case file (or --store URL --case ID), --request ID and --answer JSON");
    if (location.kind === "postgres") {
      const queued = await respondToQueuedCase(location, values.request, jsonArg(values.answer, "answer"), actingUser(values.by, io), io);
      if (queued !== undefined) return queued;
    }
    return session(
      {
        kind: "respond",
        caseFile: caseFileOf(location),
        requestId: values.request,
        answer: jsonArg(values.answer, "answer"),
        by: actingUser(values.by, io),
        workflowPath: values.workflow,
      },
      providerArg(values.provider, io),
      io,
      values["token-budget"],
      location,
      values,
    );
  },
} satisfies Record<string, Command>;

/**
 * A case a worker runs (it came through `casefile enqueue`): the answer is recorded here and the
 * case goes back on the queue for a worker to continue, instead of running in this process.
 * Undefined for a case of the store that is not on the queue (run with `casefile run --store`).
 */
async function respondToQueuedCase(
  location: Extract<StoreLocation, { kind: "postgres" }>,
  requestId: string,
  answer: Json | undefined,
  by: string | undefined,
  io: Io,
): Promise<number | undefined> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { PgQueue } = require("../pgstore/index") as typeof import("../pgstore/index"); // only for a store's case (cold start)
  const queue = new PgQueue(location.url);
  try {
    if (!queue.managed(location.caseId)) return undefined;
    const result = await runSession(
      { kind: "respond", caseFile: location.caseId, requestId, answer, by },
      { location, recordAnswerOnly: true, env: io.env, ...reporter(io) },
    );
    if (!queue.requeue(location.caseId)) {
      throw new CasefileError(
        "STORE_UNAVAILABLE",
        `${result.caseFile}: the answer is recorded, but the case could not be put back on the queue`,
      );
    }
    io.out(`answered ${requestId}: run ${result.runId} back on the queue at checkpoint ${result.checkpointId}`);
    io.out(`case: ${result.caseFile}`);
    return 0;
  } finally {
    queue.close();
  }
}

/** The command's caseFile field: the file, or for a case of a store its id (the session opens the location). */
function caseFileOf(location: StoreLocation): string {
  return location.kind === "file" ? location.file : location.caseId;
}
