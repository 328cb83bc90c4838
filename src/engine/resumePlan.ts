import { randomUUID } from "node:crypto";
import { CasefileError, errorMessage, zodIssue } from "./errors";
import type { Checkpoint, EventRecord, EventType, Json, Message, RunRecord, StateValueRow } from "./records";
import type { CaseStore, CommitBatch } from "./store";
import { missingRun } from "./storeBatch";
import { checkpointId, deepFreeze, nextKeyRefs, toJson, workflowStamp } from "./superstep";
import { keySchema, parseSafely, type Workflow } from "./workflow";

/**
 * The resume side of a run, before its first superstep: the checkpoint to start from is loaded,
 * its state checked (or migrated to this workflow's version) and patched, its pending messages
 * rerouted if the graph changed, and the run that continues it decided (the same run, or a
 * branch). Engine.resume and Engine.respond call planResume and commit the batch it returns; the
 * functions here read the store and never write it.
 */

/** Which checkpoint to resume from and how. */
export interface ResumeFrom {
  fromId: string;
  patch?: Record<string, Json>;
  /** Answering a waiting request: only a waiting run continues as itself. */
  answering?: boolean;
  /** Always start a branch, even from the latest checkpoint of an unfinished run (a replay). */
  forceBranch?: boolean;
}

/** What planResume needs of the engine besides the workflow and the store. */
export interface ResumeContext {
  now: () => string;
  /** Recorded with a branch run (EngineOptions.workflowPath); the parent's when omitted. */
  workflowPath?: string;
  /** Engine.warn: a warning for the run's result and its log. */
  warn: (message: string) => void;
  /** The engine's warnings so far, recorded as events on a branch run. */
  warnings: readonly string[];
}

export interface ResumePlan {
  run: RunRecord;
  cp: Checkpoint;
  values: Record<string, Json>;
  /** The run record (resumed, or the new branch with its checkpoint and changed values) and its events. */
  batch: CommitBatch;
}

/** Loads a checkpoint, migrates and patches its state, and decides: same run or branch. */
export function planResume(workflow: Workflow, store: CaseStore, from: ResumeFrom, ctx: ResumeContext): ResumePlan {
  const wf = workflow;
  const { fromId, patch } = from;
  const event = (runId: string, superstep: number, type: EventType, data: Json): EventRecord => ({
    runId,
    superstep,
    type,
    at: ctx.now(),
    data,
  });
  const source = store.getCheckpoint(fromId);
  if (!source) throw new CasefileError("UNKNOWN_CHECKPOINT", `no checkpoint "${fromId}" in this case file`);
  const parent = store.getRun(source.runId);
  if (!parent) throw missingRun("this case file", source.runId, `checkpoint "${fromId}"`);
  if (source.workflow.name !== wf.name) {
    throw new CasefileError("WORKFLOW_MISMATCH", `checkpoint "${fromId}" was made by workflow "${source.workflow.name}", not "${wf.name}"`);
  }
  let values = store.readValues(source.keys);
  const changed = new Set<string>();
  if (source.workflow.version > wf.version) {
    throw new CasefileError(
      "WORKFLOW_MISMATCH",
      `checkpoint "${fromId}" was made by version ${source.workflow.version} of "${wf.name}", newer than this workflow's version ${wf.version}`,
    );
  }
  if (source.workflow.version < wf.version) values = migrate(wf, values, source.workflow.version, fromId, changed);
  else checkStored(wf, values, source);

  let pending = source.pending;
  if (source.workflow.graphHash !== wf.graphHash) {
    const before = new Set(source.workflow.executors);
    const now = Object.keys(wf.executors);
    const added = now.filter((e) => !before.has(e));
    const removed = [...before].filter((e) => !wf.executors[e]);
    ctx.warn(
      `graph of "${wf.name}" changed since checkpoint "${fromId}"` +
        (added.length ? `; executors added: ${added.join(", ")}` : "") +
        (removed.length ? `; executors removed: ${removed.join(", ")}` : "") +
        (!added.length && !removed.length ? "; edges or keys changed" : ""),
    );
    pending = reroute(wf, pending, source, ctx.warn);
  }
  const waiting = stillWaiting(wf, store, source, from.answering ?? false, ctx.warn);

  if (patch) {
    for (const [key, value] of Object.entries(patch)) {
      const decl = wf.state[key];
      if (!decl)
        throw new CasefileError("UNKNOWN_KEY", `patch names unknown state key "${key}"; keys are: ${Object.keys(wf.state).join(", ")}`, {
          key,
        });
      const parsed = parseSafely(keySchema(decl), value);
      if (!parsed.success) {
        const { at, path, message } = zodIssue(parsed.error, key);
        throw new CasefileError("INVALID_PATCH", `patch value for "${key}" is invalid at "${at}": ${message}`, { key, path });
      }
      values[key] = toJson(parsed.data, key, "patch");
      changed.add(key);
    }
  }

  const latest = store.latestCheckpoint(parent.id);
  const sameRun =
    !from.forceBranch &&
    changed.size === 0 &&
    source.workflow.version === wf.version && // a migrated checkpoint always continues in a branch
    source.workflow.graphHash === wf.graphHash &&
    latest?.id === source.id &&
    (from.answering ? parent.status === "waiting" : ["running", "stopped", "failed", "paused"].includes(parent.status));
  const at = ctx.now();
  if (sameRun) {
    const run: RunRecord = { ...parent, status: "running", updatedAt: at };
    delete run.error;
    const batch: CommitBatch = { runs: [run], events: [event(run.id, source.superstep, "run_resumed", { from: source.id })] };
    return { run, cp: { ...source, pending, waiting }, values: freezeValues(values), batch };
  }

  const run: RunRecord = {
    id: newRunId(),
    parentRunId: parent.id,
    parentCheckpointId: source.id,
    workflow: { name: wf.name, version: wf.version, graphHash: wf.graphHash, path: ctx.workflowPath ?? parent.workflow.path },
    status: "running",
    createdAt: at,
    updatedAt: at,
    input: parent.input,
    outputs: [],
  };
  if (patch) run.patch = Object.keys(patch);
  const keys = nextKeyRefs(source.keys, changed, run.id);
  const cp: Checkpoint = {
    ...source,
    id: checkpointId(run.id, source.superstep),
    runId: run.id,
    parentId: source.id,
    createdAt: at,
    workflow: workflowStamp(wf),
    keys,
    pending,
    waiting: waiting.map((w) => ({ ...w })),
  };
  const rows: StateValueRow[] = [...changed].map((key) => ({ run: run.id, key, version: keys[key]!.version, value: values[key]! }));
  const batch: CommitBatch = {
    runs: [run],
    checkpoints: [cp],
    values: rows,
    events: [
      event(run.id, cp.superstep, "run_started", {
        workflow: wf.name,
        version: wf.version,
        branchOf: { run: parent.id, checkpoint: source.id },
        patched: patch ? Object.keys(patch) : [],
        migratedFrom: source.workflow.version !== wf.version ? source.workflow.version : null,
      }),
      ...ctx.warnings.map((w) => event(run.id, cp.superstep, "warning", { message: w })),
    ],
  };
  return { run, cp, values: freezeValues(values), batch };
}

/** The first answer to a request (its `request_answered` event), if it has one. */
export function answerOf(store: CaseStore, requestId: string): EventRecord | undefined {
  // Stryker disable next-line ConditionalExpression: only request_answered events carry data.requestId (Engine.respond writes them), so the type test alone decides nothing
  return store.listEvents().find((e) => e.type === "request_answered" && (e.data as { requestId?: string }).requestId === requestId);
}

/** REQUEST_ANSWERED naming the first answer: what, who, when, in which run. */
function answeredError(requestId: string, first: EventRecord, hint = "a request is answered once"): CasefileError {
  const d = first.data as { answer?: Json; by?: string | null; run?: string };
  return new CasefileError(
    "REQUEST_ANSWERED",
    `request "${requestId}" was already answered ${JSON.stringify(d.answer ?? null)}` +
      `${d.by ? ` by ${d.by}` : ""} at ${first.at}, in run ${d.run ?? first.runId}; ${hint}`,
    { requestId, run: d.run ?? first.runId },
  );
}

/**
 * The checkpoint waiting on a request, for Engine.respond. A request answered before is refused
 * naming the first answer (what, who, when, which run); an unknown one lists those waiting. When
 * several runs wait on it (a branch made by a resume inherits its parent's request), the one of
 * `version` (the workflow answering) is taken, else the first.
 */
export function findWaiting(
  store: CaseStore,
  requestId: string,
  version?: number,
): { checkpoint: Checkpoint; request: Checkpoint["waiting"][number] } {
  const first = answerOf(store, requestId);
  if (first) throw answeredError(requestId, first);
  const waiting: string[] = [];
  const found: { checkpoint: Checkpoint; request: Checkpoint["waiting"][number] }[] = [];
  for (const run of store.listRuns()) {
    if (run.status !== "waiting") continue;
    const cp = store.latestCheckpoint(run.id);
    for (const w of cp?.waiting ?? []) {
      if (w.id === requestId) found.push({ checkpoint: cp!, request: w });
      else waiting.push(w.id);
    }
  }
  const pick = found.find((f) => f.checkpoint.workflow.version === version) ?? found[0];
  if (pick) return pick;
  throw new CasefileError(
    "UNKNOWN_REQUEST",
    `no run is waiting on request "${requestId}"` + (waiting.length ? `; waiting: ${waiting.join(", ")}` : "; no run is waiting"),
  );
}

/**
 * The requests a resumed checkpoint still waits on. One answered already (in any run) refuses
 * the resume, as an answer would: a run waiting on it could never be answered. One whose step
 * this version no longer has (or is no longer a request) refuses it too, unless a migration
 * drops it (`messages: { review: null }`, as for a pending message).
 */
function stillWaiting(
  wf: Workflow,
  store: CaseStore,
  source: Checkpoint,
  answering: boolean,
  warn: (message: string) => void,
): Checkpoint["waiting"] {
  const out: Checkpoint["waiting"] = [];
  for (const w of source.waiting) {
    const first = answering ? undefined : answerOf(store, w.id);
    if (first) {
      throw answeredError(
        w.id,
        first,
        `checkpoint "${source.id}" waits on it, and a request is answered once: resume from a checkpoint before superstep ${w.superstep} to ask it again`,
      );
    }
    if (wf.executors[w.executor]?.kind === "request") {
      out.push(w);
      continue;
    }
    let by: number | undefined;
    for (let v = source.workflow.version + 1; v <= wf.version && by === undefined; v++) {
      const step = wf.migrations?.[v];
      if (typeof step === "object" && step.messages?.[w.executor] === null) by = v;
    }
    if (by !== undefined) {
      warn(`dropped waiting request "${w.id}" of removed request step "${w.executor}", as the migration to version ${by} says`);
      continue;
    }
    const next = source.workflow.version === wf.version ? wf.version + 1 : wf.version;
    throw new CasefileError(
      "UNDELIVERABLE_MESSAGE",
      `checkpoint "${source.id}" waits on request "${w.id}" of executor "${w.executor}", which version ${wf.version} of "${wf.name}" ` +
        `no longer has as a request step; drop it in a migration: migrations: { ${next}: { state: (s) => s, messages: { ${JSON.stringify(w.executor)}: null } } }` +
        (source.workflow.version === wf.version ? ` (with version: ${next})` : ""),
      { executor: w.executor, checkpoint: source.id, requestId: w.id },
    );
  }
  return out;
}

/** Every key of `state` that this workflow's schemas refuse, with the path and message. */
function unparsable(workflow: Workflow, state: Record<string, Json>): { key: string; path: string[]; at: string; message: string }[] {
  const out: { key: string; path: string[]; at: string; message: string }[] = [];
  for (const [key, value] of Object.entries(state)) {
    const decl = workflow.state[key];
    if (!decl) {
      out.push({ key, path: [], at: key, message: `is not a state key of version ${workflow.version}` });
      continue;
    }
    const parsed = parseSafely(keySchema(decl), value);
    if (parsed.success) continue;
    for (const issue of parsed.error.issues) {
      const p = issue.path.map(String);
      out.push({ key, path: p, at: [key, ...p].join("."), message: `no longer parses: ${issue.message}` });
    }
  }
  return out;
}

/**
 * Every value loaded into a run is parsed with its key's schema first: a case file edited by
 * hand, or a schema changed without a new workflow version, is refused here, naming the key and
 * path, rather than handed to an executor (an effect would build its intent from it).
 */
export function checkStored(workflow: Workflow, values: Record<string, Json>, cp: Checkpoint): void {
  for (const [key, value] of Object.entries(values)) {
    const decl = workflow.state[key];
    if (!decl) continue; // a key the workflow no longer has: the graph-change warning names it
    const parsed = parseSafely(keySchema(decl), value);
    if (parsed.success) continue;
    const { at, path, message } = zodIssue(parsed.error, key);
    const ref = cp.keys[key]!;
    throw new CasefileError(
      "INVALID_STATE_VALUE",
      `stored value of "${key}" (version ${ref.version} of run ${ref.run}) at checkpoint "${cp.id}" is invalid at "${at}": ${message}; ` +
        `the case file was changed, or the key's schema changed without a new workflow version (declare version ${workflow.version + 1} with a migration)`,
      { key, path, checkpoint: cp.id },
    );
  }
}

/**
 * Messages a checkpoint holds for executors this workflow no longer has are delivered only
 * where a migration routes them (`messages: { old: "new" }`, or `null` to drop them on
 * purpose); any other one refuses the resume, so a run never "completes" by losing its work.
 */
export function reroute(workflow: Workflow, pending: Message[], source: Checkpoint, warn: (message: string) => void): Message[] {
  const wf = workflow;
  const out: Message[] = [];
  for (const m of pending) {
    if (wf.executors[m.to]) {
      out.push(m);
      continue;
    }
    let to: string | null = m.to;
    let by: number | undefined;
    for (let v = source.workflow.version + 1; v <= wf.version && to !== null && !wf.executors[to]; v++) {
      const step = wf.migrations?.[v];
      const routes = typeof step === "object" ? step.messages : undefined;
      if (routes && to in routes) [to, by] = [routes[to] ?? null, v];
    }
    if (to === null) {
      warn(`dropped a pending message for removed executor "${m.to}" (from "${m.from}"), as the migration to version ${by} says`);
    } else if (wf.executors[to]) {
      warn(`routed a pending message for removed executor "${m.to}" (from "${m.from}") to "${to}", as the migration to version ${by} says`);
      out.push({ ...m, to });
    } else {
      const payload = JSON.stringify(m.payload);
      const next = source.workflow.version === wf.version ? wf.version + 1 : wf.version;
      throw new CasefileError(
        "UNDELIVERABLE_MESSAGE",
        `checkpoint "${source.id}" holds a message for executor "${m.to}" (from "${m.from}": ${payload.length > 120 ? payload.slice(0, 117) + "..." : payload}), ` +
          `which version ${wf.version} of "${wf.name}" no longer has; route it in a migration: ` +
          `migrations: { ${next}: { state: (s) => s, messages: { ${JSON.stringify(m.to)}: "<executor>" or null to drop it } } }` +
          (source.workflow.version === wf.version ? ` (with version: ${next})` : ""),
        { executor: m.to, checkpoint: source.id },
      );
    }
  }
  return out;
}

/**
 * Runs the migrations from version `from` up to this workflow's, then parses the result with
 * this version's schemas; adds to `changed` every key whose value the migration changed.
 */
export function migrate(
  workflow: Workflow,
  values: Record<string, Json>,
  from: number,
  cpId: string,
  changed: Set<string>,
): Record<string, Json> {
  const wf = workflow;
  let state = structuredClone(values);
  for (let v = from + 1; v <= wf.version; v++) {
    const step = wf.migrations?.[v];
    if (!step) {
      // Say what the missing migration must do: what of the state no longer parses as it is.
      const broken = unparsable(wf, state);
      throw new CasefileError(
        "MIGRATION_FAILED",
        `checkpoint "${cpId}" was made by version ${from} of "${wf.name}", and no migration to version ${v} is declared; ` +
          (broken.length
            ? `as it is, its state no longer parses at: ${broken.map((b) => `"${b.at}" (${b.message})`).join("; ")}`
            : `its state parses as it is: declare migrations: { ${v}: (state) => state }`),
        { problems: broken },
      );
    }
    const migrateState = typeof step === "function" ? step : (step.state ?? ((s: Record<string, Json>) => s));
    try {
      state = migrateState(state);
    } catch (e) {
      throw new CasefileError("MIGRATION_FAILED", `migration to version ${v} of "${wf.name}" threw: ${errorMessage(e)}`);
    }
  }
  const broken = unparsable(wf, state);
  if (broken.length) {
    throw new CasefileError(
      "MIGRATION_FAILED",
      `after migrating checkpoint "${cpId}" to version ${wf.version}, ${broken.map((b) => `"${b.at}" ${b.message}`).join("; ")}`,
      { key: broken[0]!.key, path: broken[0]!.path, problems: broken },
    );
  }
  for (const [key, value] of Object.entries(state)) {
    const parsed = parseSafely(keySchema(wf.state[key]!), value);
    if (!parsed.success) continue; // unparsable() found none
    if (JSON.stringify(parsed.data) !== JSON.stringify(values[key])) changed.add(key);
    state[key] = toJson(parsed.data, key, "migration");
  }
  return state;
}

/** A new run's id: a fresh run (Engine.run) or a branch (planResume). */
export function newRunId(): string {
  return "run-" + randomUUID().slice(0, 8);
}

function freezeValues(values: Record<string, Json>): Record<string, Json> {
  for (const v of Object.values(values)) deepFreeze(v);
  return values;
}
