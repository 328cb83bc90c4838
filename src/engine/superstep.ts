import { CasefileError } from "./errors";
import { keySchema, type Workflow } from "./workflow";
import type { Checkpoint, Json, KeyRef, Message } from "./records";

/**
 * The pure parts of a superstep: checking and applying staged writes, and routing what
 * executors sent into the next superstep's messages. The loop in engine.ts calls these; tests
 * call them directly.
 */

export interface StagedWrite {
  executor: string;
  key: string;
  value: unknown;
}

/**
 * Checks every write of a superstep: the writer owns the key, the value parses with the key's
 * schema and is plain JSON, and no key is written twice (never last-write-wins). Returns the
 * parsed values by key.
 */
export function checkWrites(workflow: Workflow, writes: StagedWrite[]): Map<string, { executor: string; value: Json }> {
  const out = new Map<string, { executor: string; value: Json }>();
  for (const w of writes) {
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
    const parsed = keySchema(decl).safeParse(w.value);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      const at = issue.path.length ? `${w.key}.${issue.path.join(".")}` : w.key;
      throw new CasefileError("INVALID_STATE_VALUE", `executor "${w.executor}" wrote an invalid value at "${at}": ${issue.message}`, {
        executor: w.executor,
        key: w.key,
        path: issue.path.map(String),
      });
    }
    out.set(w.key, { executor: w.executor, value: toJson(parsed.data, w.key, w.executor) });
  }
  return out;
}

/** Returns the value as JSON, refusing what a case file cannot hold (functions, class instances, NaN). */
export function toJson(value: unknown, at: string, executor: string): Json {
  const fail = (path: string, what: string): never => {
    throw new CasefileError("INVALID_STATE_VALUE", `executor "${executor}" wrote ${what} at "${path}": state holds JSON data only`, {
      executor,
      key: at.split(".")[0],
    });
  };
  const walk = (v: unknown, path: string): Json => {
    if (v === null || typeof v === "string" || typeof v === "boolean") return v;
    if (typeof v === "number") return Number.isFinite(v) ? v : fail(path, String(v));
    if (Array.isArray(v)) return v.map((x, i) => walk(x, `${path}.${i}`));
    if (typeof v === "object") {
      const proto = Object.getPrototypeOf(v);
      if (proto !== Object.prototype && proto !== null) return fail(path, `a ${proto?.constructor?.name ?? "non-plain"} object`);
      const o: Record<string, Json> = {};
      for (const [k, x] of Object.entries(v)) if (x !== undefined) o[k] = walk(x, `${path}.${k}`);
      return o;
    }
    return fail(path, `a ${typeof v}`);
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
      let pass: boolean;
      try {
        pass = e.when(payload, state);
      } catch (err) {
        throw new CasefileError("EXECUTOR_FAILED", `condition of edge "${e.id}" threw: ${(err as Error).message}`, { executor: from });
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
