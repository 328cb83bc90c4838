import { CasefileError, describeReturned, errorMessage, isCasefileError, zodIssue } from "./errors";
import { keySchema, parseSafely, type Workflow } from "./workflow";
import { CHECKPOINT_FORMAT, type Checkpoint, type EventRecord, type Json, type KeyRef, type Message, type RunRecord } from "./records";
import type { StagedWrite, TaskOutcome } from "./task";
import type { CommitBatch } from "./store";

/**
 * The pure parts of a superstep: checking and applying staged writes, and routing what
 * executors sent into the next superstep's messages. The loop in engine.ts calls these; tests
 * call them directly.
 */

/**
 * Checks every write of a superstep: the writer owns the key, the value parses with the key's
 * schema and is plain JSON, and no key is written twice (never last-write-wins). Returns the
 * parsed values by key.
 */
export function checkWrites(workflow: Workflow, writes: StagedWrite[]): Map<string, { executor: string; value: Json }> {
  const out = new Map<string, { executor: string; value: Json }>();
  for (const w of writes) {
    try {
      checkWrite(workflow, w, out);
    } catch (e) {
      throw w.step === undefined ? e : naming(w.step, e);
    }
  }
  return out;
}

/**
 * The error with the step at fault named in its details. One executor may run twice in a
 * superstep (two edges into it): the engine records the step the error names failed, not its
 * namesake. Called by checkWrites and nextCheckpoint for what failed after a step ran.
 */
function naming(step: string, e: unknown): unknown {
  return isCasefileError(e) ? new CasefileError(e.code, e.message, { ...e.details, step }) : e;
}

function checkWrite(workflow: Workflow, w: StagedWrite, out: Map<string, { executor: string; value: Json }>): void {
  const decl = workflow.state[w.key];
  if (!decl) {
    throw new CasefileError("UNKNOWN_KEY", `executor "${w.executor}" wrote unknown state key "${w.key}"`, {
      executor: w.executor,
      key: w.key,
    });
  }
  const extract = workflow.extracts[w.key];
  if (extract) {
    throw new CasefileError(
      "WRITE_NOT_OWNED",
      `executor "${w.executor}" wrote extract key "${w.key}": extracts are made by the engine from "${extract.from}", never written by an executor`,
      { executor: w.executor, key: w.key },
    );
  }
  if (workflow.owners[w.key] !== w.executor) {
    const owner = workflow.owners[w.key];
    throw new CasefileError(
      "WRITE_NOT_OWNED",
      `executor "${w.executor}" wrote state key "${w.key}", which ${owner ? `is owned by "${owner}"` : "no executor owns"}`,
      { executor: w.executor, key: w.key },
    );
  }
  const prior = out.get(w.key);
  if (prior) {
    throw new CasefileError(
      "DOUBLE_WRITE",
      `state key "${w.key}" was written twice in one superstep (by "${prior.executor}" and "${w.executor}")`,
      { executor: w.executor, key: w.key },
    );
  }
  const parsed = parseSafely(keySchema(decl), w.value);
  if (!parsed.success) {
    const { at, path, message } = zodIssue(parsed.error, w.key);
    throw new CasefileError("INVALID_STATE_VALUE", `executor "${w.executor}" wrote an invalid value at "${at}": ${message}`, {
      executor: w.executor,
      key: w.key,
      path,
    });
  }
  out.set(w.key, { executor: w.executor, value: toJson(parsed.data, w.key, w.executor) });
}

/**
 * Returns the value as JSON, refusing what a case file cannot hold (functions, class instances,
 * NaN) and what cannot be read (a getter that throws): the copy is all the engine reads after.
 */
export function toJson(value: unknown, at: string, executor: string): Json {
  const refuse = (message: string): never => {
    throw new CasefileError("INVALID_STATE_VALUE", message, { executor, key: at.split(".")[0] });
  };
  const fail = (path: string, what: string): never =>
    refuse(`executor "${executor}" wrote ${what} at "${path}": state holds JSON data only`);
  const walk = (v: unknown, path: string): Json => {
    try {
      if (v === null || typeof v === "string" || typeof v === "boolean") return v;
      if (typeof v === "number") return Number.isFinite(v) ? v : fail(path, String(v));
      if (Array.isArray(v)) return v.map((x, i) => walk(x, `${path}.${i}`));
      if (typeof v === "object") {
        const proto = Object.getPrototypeOf(v);
        if (proto !== Object.prototype && proto !== null) return fail(path, `a ${proto.constructor?.name ?? "non-plain"} object`);
        const o: Record<string, Json> = {};
        for (const [k, x] of Object.entries(v)) if (x !== undefined) o[k] = walk(x, `${path}.${k}`);
        return o;
      }
      return fail(path, `a ${typeof v}`);
    } catch (e) {
      // What threw reading the value's parts (a getter, a proxy's trap) is user code: the value is
      // bad output of its step, named where it was read, not an untyped error without a step.
      if (isCasefileError(e)) throw e;
      return refuse(`executor "${executor}" wrote a value that threw when read at "${path}": ${errorMessage(e)}`);
    }
  };
  return walk(value, at);
}

/** Key refs after a superstep: changed keys get the next version, stored under this run. */
export function nextKeyRefs(prev: Record<string, KeyRef>, changed: Iterable<string>, runId: string): Record<string, KeyRef> {
  const keys = { ...prev };
  for (const key of changed) keys[key] = { version: (prev[key]?.version ?? 0) + 1, run: runId };
  return keys;
}

/**
 * Routes one payload an executor sent along its outgoing edges. Conditional edges see the
 * state after the sender's superstep. A fan-in edge buffers the payload until every source
 * has sent, then delivers one message holding all of them.
 */
export function route(
  workflow: Workflow,
  from: string,
  payload: Json,
  state: Readonly<Record<string, Json>>,
  fanIn: Checkpoint["fanIn"],
): Message[] {
  const out: Message[] = [];
  for (const e of workflow.edges) {
    if (!e.from.includes(from)) continue;
    if (e.when) {
      let pass: unknown;
      try {
        pass = e.when(payload, state);
      } catch (err) {
        throw new CasefileError("EDGE_FAILED", `condition of edge "${e.id}" threw: ${errorMessage(err)}`, { executor: from, edge: e.id });
      }
      // Truthiness would route on a bug (a string, a Promise from an async `when`, undefined
      // from a branch that forgot to return): the edge is refused like one that threw.
      if (typeof pass !== "boolean") {
        throw new CasefileError("EDGE_FAILED", `condition of edge "${e.id}" returned ${describeReturned(pass)}, not true or false`, {
          executor: from,
          edge: e.id,
        });
      }
      if (!pass) continue;
    }
    if (e.from.length > 1) {
      const buffer = (fanIn[e.id] ??= {});
      buffer[from] = payload;
      if (!e.from.every((f) => f in buffer)) continue;
      delete fanIn[e.id];
      for (const to of e.to) out.push({ to, from: e.from.join("+"), payload: buffer, kind: "data" });
    } else {
      for (const to of e.to) out.push({ to, from, payload, kind: "data" });
    }
  }
  return out;
}

/** What a superstep that ran needs to become the next checkpoint. */
export interface SuperstepInput {
  workflow: Workflow;
  run: RunRecord;
  /** The checkpoint the superstep started from. */
  from: Checkpoint;
  superstep: number;
  /** State as of `from`. */
  values: Readonly<Record<string, Json>>;
  outcomes: readonly TaskOutcome[];
  /** The checked writes of the superstep (checkWrites) and the extracts made, by key. */
  changed: ReadonlyMap<string, { executor: string; value: Json }>;
  /** Events the superstep produced before its steps' (extracts made). */
  events?: readonly EventRecord[];
  /** When the checkpoint is made: every record built here carries it. */
  at: string;
  stamp: Checkpoint["workflow"];
}

export interface SuperstepResult {
  checkpoint: Checkpoint;
  values: Record<string, Json>;
  /** The run record after the superstep (outputs added, updated time). */
  run: RunRecord;
  /** Everything the superstep produced, committed durably as one batch. */
  batch: CommitBatch;
}

/**
 * Builds the checkpoint after a superstep whose steps succeeded and whose writes were checked:
 * new key versions, what the executors sent routed along the edges (a `when` that throws, or a
 * payload, local value or output that is not JSON, throws a CasefileError naming the step, executor
 * or edge), and the batch to commit. Pure: it reads its input and returns new objects, so the
 * loop can call it inside its failure handling and commit nothing when it throws.
 */
export function nextCheckpoint(input: SuperstepInput): SuperstepResult {
  const { workflow, from, superstep, at } = input;
  const runId = input.run.id;
  const event = (type: EventRecord["type"], data: Json): EventRecord => ({ runId, superstep, type, at, data });
  const values: Record<string, Json> = { ...input.values };
  for (const [key, { value }] of input.changed) values[key] = deepFreeze(value);
  const keys = nextKeyRefs(from.keys, input.changed.keys(), runId);
  const fanIn = structuredClone(from.fanIn);
  const pending: Message[] = [];
  const local = { ...from.local };
  const outputs = [...(input.run.outputs ?? [])];
  const events: EventRecord[] = [...(input.events ?? [])];
  for (const o of input.outcomes) {
    try {
      const executor = o.step.executor;
      for (const payload of o.sends) pending.push(...route(workflow, executor, toJson(payload, "message", executor), values, fanIn));
      if (o.local) local[executor] = toJson(o.local.value, "local", executor);
      events.push(
        event("step_completed", {
          step: o.step.id,
          executor,
          kind: o.step.kind,
          status: o.step.status,
          writes: o.step.writes,
          durationMs: o.step.durationMs,
        }),
      );
      for (const out of o.outputs) {
        const output = toJson(out, "output", executor);
        outputs.push(output);
        events.push(event("output", { executor, output }));
      }
      for (const w of o.warnings) events.push(event("warning", { executor, message: w }));
      if (o.waiting) {
        events.push(event("request_waiting", { request: o.waiting.id, executor, prompt: toJson(o.waiting.prompt, "prompt", executor) }));
      }
    } catch (e) {
      // The step whose payload, output or edge failed.
      throw naming(o.step.id, e);
    }
  }
  const checkpoint: Checkpoint = {
    v: CHECKPOINT_FORMAT,
    id: checkpointId(runId, superstep),
    runId,
    superstep,
    parentId: from.id,
    createdAt: at,
    workflow: input.stamp,
    keys,
    pending,
    fanIn,
    local,
    waiting: [...from.waiting, ...input.outcomes.flatMap((o) => (o.waiting ? [o.waiting] : []))],
  };
  events.push(event("checkpoint", { checkpoint: checkpoint.id, changed: [...input.changed.keys()], pending: pending.map((m) => m.to) }));
  const run: RunRecord = { ...input.run, outputs, updatedAt: at };
  const batch: CommitBatch = {
    runs: [run],
    checkpoints: [checkpoint],
    values: [...input.changed].map(([key, { value }]) => ({ run: runId, key, version: keys[key]!.version, value })),
    steps: input.outcomes.map((o) => o.step),
    facts: input.outcomes.flatMap((o) =>
      o.facts.map((f) => ({
        ...f.provenance,
        runId,
        superstep,
        key: f.key,
        version: keys[f.key]!.version,
        executor: o.step.executor,
      })),
    ),
    agentCalls: input.outcomes.flatMap((o) => (o.agentCall ? [o.agentCall] : [])),
    verdicts: input.outcomes.flatMap((o) => (o.verdict ? [o.verdict] : [])),
    events,
  };
  return { checkpoint, values, run, batch };
}

/** A checkpoint's id: the run's id and the superstep it ends. */
export function checkpointId(runId: string, superstep: number): string {
  return `${runId}:${superstep}`;
}

/** What a checkpoint records of the workflow that made it: name, version, graph hash, executors. */
export function workflowStamp(wf: Workflow): Checkpoint["workflow"] {
  return { name: wf.name, version: wf.version, graphHash: wf.graphHash, executors: Object.keys(wf.executors) };
}

export function deepFreeze<T>(v: T): T {
  if (v && typeof v === "object" && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const x of Object.values(v)) deepFreeze(x);
  }
  return v;
}
