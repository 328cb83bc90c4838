import { mkdirSync } from "node:fs";
import path from "node:path";
import type { SqlJsStore } from "../casefile/index";
import type { AgentReplay, EngineHooks } from "../engine/task";
import { RunControl } from "../engine/control";
import { caseIdOf, defaultCaseFile } from "../engine/caseName";
import { Engine, type RunResult } from "../engine/engine";
import { findWaiting } from "../engine/resumePlan";
import { CasefileError, errorMessage } from "../engine/errors";
import { missingRun } from "../engine/storeBatch";
import type { ModelProvider } from "../engine/model";
import { withRunModel } from "../engine/modelChoice";
import { runModelOf } from "../engine/providers/index";
import { providerFor } from "./provider";
import type { AgentCallRecord, EventRecord, Json } from "../engine/records";
import type { CaseStore } from "../engine/store";
import type { ProviderConfig, RunCommand, TokenBudget } from "../protocol/runner";
import type { OtelSettings } from "../otel/config";
import { readRunRecords, type RunRecords } from "../otel/spans";
import { traceRun } from "../otel/trace";
import { withDefaultBudget } from "./budget";
import { loadWorkflow } from "./bundle";
import { compactAtFromEnv, openRuleBook } from "./ruleBook";
import { withStepInto, type StepInto } from "./stepInto";
import type { Workflow } from "../engine/workflow";
import { SHORT_WRITER_LOCK_WAIT_MS, locationLabel, openLocation, type StoreLocation } from "./storeLocation";

export interface SessionOptions {
  control?: RunControl;
  provider?: ProviderConfig;
  /** Token budget for agent steps that declare none; a step's own budget wins (budget.ts). */
  defaultBudget?: TokenBudget;
  /** Overrides `provider` (the runner passes a provider that asks the editor's host). */
  providerInstance?: ModelProvider;
  onEvent?: (event: EventRecord) => void;
  log?: (message: string) => void;
  env?: NodeJS.ProcessEnv;
  replay?: AgentReplay;
  tenant?: string;
  /** A case of a Postgres store (`--store URL --case ID`) instead of the command's case file. */
  location?: StoreLocation;
  /** The debugger's Step Into (executor-code mode): the workflow's executor functions are called through it. */
  stepInto?: StepInto;
  /** respond only: record the answer and return, the run left `running` for a worker to continue. */
  recordAnswerOnly?: boolean;
  /** Send the run as an OpenTelemetry trace when the command ends (otel/config.ts says whether and where). */
  otel?: OtelSettings;
}

export interface SessionResult extends RunResult {
  /** The case file's absolute path, or `<store url> case <id>` for a case of a store. */
  caseFile: string;
  workflowPath: string;
}

/**
 * Runs one command (run, resume, respond, replay) against a case file, in this process: the CLI calls
 * it directly and the runner child process calls it for the editor. It owns the case file for
 * the command's duration (the store's lock) and always closes it, which compacts the journal
 * (SqlJsStore.close): the one place every command's clean exit folds the journal in.
 */
export async function runSession(command: RunCommand, opts: SessionOptions = {}): Promise<SessionResult> {
  const env = opts.env ?? process.env;
  // The model the run names replaces each agent step's (a step that pins its own refuses it).
  const runModel = runModelOf(opts.provider);
  const instrument = (workflow: Workflow): Workflow => (opts.stepInto ? withStepInto(workflow, opts.stepInto) : workflow);
  const prepare = async (workflowPath: string, overrides?: Record<string, string>) =>
    instrument(withRunModel(withDefaultBudget((await loadWorkflow(workflowPath)).workflow, opts.defaultBudget), runModel, overrides));
  // A new run's workflow is known before its case file: a refusal (a pinned model) creates none.
  const prepared = command.kind === "run" ? await prepare(path.resolve(command.workflowPath)) : undefined;
  // A new run's input is checked (and its case named) before the case file exists: refused, it leaves none.
  if (command.kind === "run") caseIdOf(prepared!, command.input as Json | undefined);
  const location: StoreLocation = opts.location ?? {
    kind: "file",
    file: path.resolve(
      command.kind === "run"
        ? (command.caseFile ??
            defaultCaseFile(command.workflowPath, caseIdOf(prepared!, command.input as Json | undefined), {
              folder: command.caseFolder,
              root: command.caseFolderRoot,
            }))
        : command.caseFile!,
    ),
  };
  const caseFile = locationLabel(location);
  // The default folder (cases/ beside the workflow, or the configured one) is made on a case's first run.
  if (command.kind === "run" && !opts.location && !command.caseFile) mkdirSync(path.dirname(caseFile), { recursive: true });
  const { store, warnings } = await openLocation(location, {
    create: command.kind === "run",
    tenant: opts.tenant,
    compactAtBytes: compactAtFromEnv(env),
    // Two people answering one request at once: the second waits for the first's lock, then is
    // refused naming the first answer (REQUEST_ANSWERED), rather than told the file is locked.
    ...(command.kind === "respond" ? { waitForLockMs: SHORT_WRITER_LOCK_WAIT_MS } : {}),
  });
  let ruleBook: SqlJsStore | undefined;
  let traced: RunRecords | undefined;
  const reported = warnings.length;
  for (const w of warnings) opts.log?.(`warning: ${w}`);
  try {
    const workflowPath = command.kind === "run" ? path.resolve(command.workflowPath) : resolveWorkflowPath(store, caseFile, command);
    const replayed = command.kind === "replay" ? replayOf(store, caseFile, command) : undefined;
    // A recorded replay reuses the recorded answer: its step asks for the model that gave it,
    // whatever the run names, so the hash compares like with like.
    const recorded = replayed?.replay.mode === "recorded" ? replayed.replay.recorded : undefined;
    const workflow = prepared ?? (await prepare(workflowPath, recorded ? { [recorded.executor]: recorded.request.model } : undefined));
    ruleBook = await openRuleBook(workflowPath, env);
    const provider =
      opts.providerInstance ?? providerFor(opts.provider ?? { kind: "scripted" }, { workflowPath, env: opts.env ?? process.env });
    const engine = new Engine(workflow, store, {
      provider,
      control: opts.control ?? new RunControl(),
      onEvent: opts.onEvent,
      log: opts.log,
      replay: replayed?.replay ?? opts.replay,
      workflowPath,
      ruleBook,
      hooks: hooksFromEnv(env),
    });
    let result: RunResult;
    switch (command.kind) {
      case "run":
        result = await engine.run((command.input ?? null) as Json);
        break;
      case "resume":
        result = await engine.resume(command.checkpointId, {
          patch: command.patch as Record<string, Json> | undefined,
          ...(command.branch ? { branch: true } : {}),
        });
        break;
      case "respond":
        result = await engine.respond(command.requestId, command.answer as Json, {
          by: command.by,
          ...(opts.recordAnswerOnly ? { recordOnly: true } : {}),
        });
        break;
      case "replay":
        // Always a branch: the run that recorded the step stays exactly as it was.
        result = await engine.resume(replayed!.checkpointId, { branch: true });
        break;
      default: {
        const never: never = command;
        throw new CasefileError("USAGE", `unknown command ${JSON.stringify(never)}`);
      }
    }
    if (opts.otel) traced = readRunRecords(store, result.runId);
    return { ...result, caseFile, workflowPath };
  } finally {
    try {
      ruleBook?.close();
    } finally {
      // However the command ended (completed, waiting, failed, stopped, or the engine threw),
      // closing the writer folds the journal into the database file: after a clean exit a
      // plain SQLite client sees the whole case. Warnings raised since open (a compaction that
      // failed mid-run or on close) are reported here, once.
      store.close();
      for (const w of warnings.slice(reported)) opts.log?.(`warning: ${w}`);
      // The trace goes once the case file is released: a receiver that is slow or away delays nothing else.
      if (traced && opts.otel) await sendTrace(traced, opts.otel, opts.log);
    }
  }
}

/**
 * Sends the run's trace; a receiver that cannot be reached or refuses it is a warning, never a
 * failure of the run, which is recorded whatever happens to its trace (export-otel sends it later).
 */
async function sendTrace(records: RunRecords, otel: OtelSettings, log: ((m: string) => void) | undefined): Promise<void> {
  try {
    const sent = await traceRun(records, otel);
    log?.(`trace: run ${records.run.id} sent to ${otel.url} (${sent.spans} spans, trace ${sent.traceId})`);
  } catch (e) {
    log?.(`warning: the trace of run ${records.run.id} was not sent to ${otel.url}: ${errorMessage(e)}`);
  }
}

/**
 * The engine's test hooks, from the variables the kill and reconcile tests set on a spawned CLI
 * (test/integration/killHarness.ts, forkEffects.test.ts); unset outside tests, so no pauses.
 */
export function hooksFromEnv(env: NodeJS.ProcessEnv): EngineHooks {
  const ms = (name: string): number | undefined => (env[name] === undefined ? undefined : Number(env[name]));
  return { pauseBeforeActMs: ms("CASEFILE_TEST_PAUSE_BEFORE_ACT_MS"), pauseAfterActMs: ms("CASEFILE_TEST_PAUSE_AFTER_ACT_MS") };
}

/** A resumed or answered run finds its workflow file where the run that made it recorded it. */
function resolveWorkflowPath(store: CaseStore, caseFile: string, command: Exclude<RunCommand, { kind: "run" }>): string {
  if (command.workflowPath) return path.resolve(command.workflowPath);
  let runId: string | undefined;
  if (command.kind === "resume") {
    runId = store.getCheckpoint(command.checkpointId)?.runId;
    if (!runId) throw new CasefileError("UNKNOWN_CHECKPOINT", `no checkpoint "${command.checkpointId}" in ${caseFile}`);
  } else if (command.kind === "replay") {
    runId = findAgentCall(store, caseFile, command.agentCallId).runId;
  } else {
    // The run the answer goes to, as Engine.respond finds it: an answered request is refused here
    // naming its first answer, before any workflow is loaded.
    runId = findWaiting(store, command.requestId).checkpoint.runId;
  }
  const run = store.getRun(runId);
  if (!run)
    throw missingRun(
      caseFile,
      runId,
      command.kind === "resume"
        ? `checkpoint "${command.checkpointId}"`
        : command.kind === "replay"
          ? `agent call "${command.agentCallId}"`
          : `request "${command.requestId}"`,
    );
  const recorded = run.workflow.path;
  if (!recorded) throw new CasefileError("USAGE", `run "${runId}" did not record its workflow file: pass --workflow`);
  return recorded;
}

/**
 * What replaying an agent step needs: its recorded call (the recorded answer and hash, for the
 * `recorded` mode's check) and the checkpoint the branch starts from, the last one of the call's
 * run before the call's superstep.
 */
function replayOf(
  store: CaseStore,
  caseFile: string,
  command: Extract<RunCommand, { kind: "replay" }>,
): { replay: AgentReplay; checkpointId: string } {
  const call = findAgentCall(store, caseFile, command.agentCallId);
  if (command.mode === "edited" && !command.messages?.length) {
    throw new CasefileError("USAGE", `replaying step "${call.id}" in edited mode needs the edited context messages (--messages FILE.json)`);
  }
  if (command.mode !== "edited" && command.messages) {
    throw new CasefileError(
      "USAGE",
      `edited messages were given for step "${call.id}", but the replay mode is "${command.mode}"; use --mode edited`,
    );
  }
  const before = store
    .listCheckpoints(call.runId)
    .filter((c) => c.superstep < call.superstep)
    .at(-1);
  if (!before) {
    throw new CasefileError(
      "UNKNOWN_CHECKPOINT",
      `run "${call.runId}" in ${caseFile} has no checkpoint before superstep ${call.superstep}, where step "${call.id}" ran`,
    );
  }
  const replay: AgentReplay = { executor: call.executor, mode: command.mode, recorded: call };
  if (command.messages) replay.messages = command.messages;
  return { replay, checkpointId: before.id };
}

/** The agent call with that id, or a usage error listing the ones the case file has. */
export function findAgentCall(store: CaseStore, caseFile: string, id: string): AgentCallRecord {
  const call = store.getAgentCall(id);
  if (call) return call;
  const known = store.listAgentCalls().map((c) => c.id);
  throw new CasefileError(
    "USAGE",
    `no agent step "${id}" in ${caseFile}` +
      (known.length ? `; agent steps: ${known.slice(0, 10).join(", ")}${known.length > 10 ? ", ..." : ""}` : "; it records no agent steps"),
    { step: id, file: caseFile },
  );
}
