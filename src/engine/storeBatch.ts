import { CasefileError } from "./errors";
import { CHECKPOINT_FORMAT } from "./records";
import type { Checkpoint, EventRecord, Json, KeyRef } from "./records";
import type { CheckpointSummary, CommitBatch } from "./store";

/**
 * Validation and copying of a CommitBatch, shared by every CaseStore so that they accept and
 * refuse exactly the same batches. A store calls `prepareBatch` before it writes anything: if it
 * returns, the batch can be applied without any further check failing, which is what makes a
 * commit all-or-nothing.
 */

export type TableName = keyof CommitBatch;

/** Every table a batch can carry, in the order rows are applied (runs before what refers to them). */
export const TABLES: readonly TableName[] = [
  "runs",
  "checkpoints",
  "values",
  "steps",
  "facts",
  "agentCalls",
  "verdicts",
  "intents",
  "rules",
  "events",
];

interface TableSpec {
  /** Fields the store indexes or keys on: they must be present and of this type. */
  strings: string[];
  integers: string[];
  /** Identity of a row. Upsert tables replace on it; append-only tables refuse a second row. */
  key?: (row: Record<string, unknown>) => string;
  upsert: boolean;
}

const byId = (row: Record<string, unknown>): string => row.id as string;

const SPECS: Record<TableName, TableSpec> = {
  runs: { strings: ["id", "status", "createdAt", "updatedAt"], integers: [], key: byId, upsert: true },
  checkpoints: { strings: ["id", "runId", "createdAt"], integers: ["superstep"], key: byId, upsert: false },
  values: {
    strings: ["run", "key"],
    integers: ["version"],
    key: (row) => valueKey(row.run as string, row.key as string, row.version as number),
    upsert: false,
  },
  steps: { strings: ["id", "runId", "executor"], integers: ["superstep"], key: byId, upsert: false },
  // Several facts may share a key and version (one state value holding several facts), so
  // facts have no identity of their own: they are only ever appended.
  facts: { strings: ["runId", "key", "executor"], integers: ["superstep", "version"], upsert: false },
  agentCalls: { strings: ["id", "runId", "executor", "hash"], integers: ["superstep"], key: byId, upsert: false },
  verdicts: { strings: ["id", "runId", "executor"], integers: ["superstep"], key: byId, upsert: false },
  intents: { strings: ["id", "runId", "status"], integers: ["superstep"], key: byId, upsert: true },
  rules: { strings: ["id"], integers: [], key: byId, upsert: true },
  // Events are identified by the seq the store assigns; a caller's seq is ignored.
  events: { strings: ["runId", "type", "at"], integers: ["superstep"], upsert: false },
};

/** The identity of a state value row; JSON so that no run or key name can collide with another. */
export function valueKey(run: string, key: string, version: number): string {
  return JSON.stringify([run, key, version]);
}

/** A batch after validation: every table present, rows deep-copied, events numbered. */
export type PreparedBatch = { [T in TableName]-?: NonNullable<CommitBatch[T]> };

export interface PrepareContext {
  /**
   * Whether an append-only table already holds a row with this identity. A store whose tables
   * refuse a second row themselves (SqlJsStore: a primary key on each identity, inside the
   * commit's transaction) answers false and raises `alreadyStored` when its insert is refused.
   */
  exists(table: TableName, key: string): boolean;
  /** The seq to give the batch's first event (or, when replaying, the least seq it may carry). */
  nextEventSeq: number;
  /** Replaying a journalled batch: its events already carry the seqs given at commit. */
  keepEventSeqs?: boolean;
}

/**
 * Checks every row of the batch and returns a private copy. Throws INVALID_BATCH naming the
 * table, the row and the JSON path at fault; nothing is returned (so nothing can be applied)
 * unless the whole batch is good.
 */
export function prepareBatch(batch: CommitBatch, ctx: PrepareContext): PreparedBatch {
  if (batch === null || typeof batch !== "object" || Array.isArray(batch)) {
    throw invalid("a commit batch must be an object of tables");
  }
  for (const name of Object.keys(batch)) {
    if (!(TABLES as readonly string[]).includes(name)) {
      throw invalid(`unknown table "${name}" in commit batch (expected one of ${TABLES.join(", ")})`);
    }
  }
  const out = {} as Record<TableName, Json[]>;
  for (const table of TABLES) {
    const rows = (batch as Record<string, unknown>)[table];
    out[table] = [];
    if (rows === undefined) continue;
    if (!Array.isArray(rows)) throw invalid(`${table} must be an array, got ${describe(rows)}`);
    const spec = SPECS[table];
    const seenInBatch = new Set<string>();
    rows.forEach((row: unknown, index) => {
      const where = `${table}[${index}]`;
      if (row === null || typeof row !== "object" || Array.isArray(row)) {
        throw invalid(`${where} must be an object, got ${describe(row)}`);
      }
      const r = row as Record<string, unknown>;
      const fieldProblem = fieldsProblem(spec, r, where);
      if (fieldProblem) throw invalid(fieldProblem);
      const key = spec.key?.(r);
      const label = key === undefined ? where : `${table} row ${key}`;
      const recordProblem = recordShapeProblem(table, r, label);
      if (recordProblem) throw invalid(recordProblem);
      if (key !== undefined && !spec.upsert) {
        if (seenInBatch.has(key)) throw invalid(`${label} appears twice in the batch; ${table} are append-only`);
        if (ctx.exists(table, key)) throw alreadyStored(table, key);
        seenInBatch.add(key);
      }
      out[table].push(copyJson(r, label));
    });
  }
  let seq = ctx.nextEventSeq;
  for (const event of out.events as unknown as EventRecord[]) {
    if (ctx.keepEventSeqs) {
      if (!Number.isSafeInteger(event.seq) || event.seq! < seq) throw invalid(`event seq ${describe(event.seq)} is not after ${seq - 1}`);
      seq = event.seq! + 1;
    } else {
      event.seq = seq++;
    }
  }
  return out as unknown as PreparedBatch;
}

function fieldsProblem(spec: TableSpec, r: Record<string, unknown>, where: string): string | undefined {
  for (const f of spec.strings) {
    if (typeof r[f] !== "string" || r[f] === "") return `${where}.${f} must be a non-empty string, got ${describe(r[f])}`;
  }
  for (const f of spec.integers) {
    if (!Number.isSafeInteger(r[f])) return `${where}.${f} must be an integer, got ${describe(r[f])}`;
  }
  return undefined;
}

/** The checks beyond the indexed fields: a checkpoint's refs and lists, a state value's value. */
function recordShapeProblem(table: TableName, r: Record<string, unknown>, label: string): string | undefined {
  if (table === "checkpoints") return checkpointProblem(r, label);
  if (table === "values" && r.value === undefined) return `${label}: value is missing (undefined is not JSON)`;
  return undefined;
}

/**
 * What is wrong with a row read back from a case file, by the same checks a commit makes (the
 * fields the store keys on, a checkpoint's refs and lists, a state value's value); undefined when
 * it has the shape of its table's record. The store calls it on every row it parses, so that a
 * damaged row is refused where it is read instead of failing later as an odd TypeError.
 */
export function storedRowProblem(table: TableName, row: unknown): string | undefined {
  if (row === null || typeof row !== "object" || Array.isArray(row)) return `the record must be a JSON object, got ${describe(row)}`;
  const r = row as Record<string, unknown>;
  return fieldsProblem(SPECS[table], r, "record") ?? recordShapeProblem(table, r, "record");
}

function checkpointProblem(r: Record<string, unknown>, label: string): string | undefined {
  if (r.v !== CHECKPOINT_FORMAT) return `${label}: checkpoint format v=${describe(r.v)}, this store writes v=${CHECKPOINT_FORMAT}`;
  const keys = r.keys;
  if (keys === null || typeof keys !== "object" || Array.isArray(keys)) return `${label}.keys must be an object of key refs`;
  for (const [k, ref] of Object.entries(keys as Record<string, unknown>)) {
    const kr = ref as Partial<KeyRef> | null;
    if (kr === null || typeof kr !== "object" || !Number.isSafeInteger(kr.version) || typeof kr.run !== "string") {
      return `${label}.keys.${k} must be { version: integer, run: string }, got ${describe(ref)}`;
    }
  }
  for (const f of ["pending", "waiting"]) {
    if (!Array.isArray(r[f])) return `${label}.${f} must be an array, got ${describe(r[f])}`;
  }
  return undefined;
}

/**
 * A deep copy that admits only what JSON can carry: plain objects, arrays, strings, finite
 * numbers, booleans and null. Object members that are undefined are dropped, as JSON.stringify
 * drops them, so that the in-memory store returns exactly what the SQLite store would.
 * Runs on every row of every commit, so the path to the current value is one mutable stack,
 * turned into text only for an error message.
 */
export function copyJson(value: unknown, label: string): Json {
  return copyValue(value, { label, path: [], ancestors: [] });
}

/** copyJson's walk; one function at module level, so a copy allocates no closures. */
interface CopyState {
  label: string;
  path: (string | number)[];
  ancestors: object[];
}

function copyValue(v: unknown, st: CopyState): Json {
  switch (typeof v) {
    case "string":
    case "boolean":
      return v;
    case "number":
      if (!Number.isFinite(v)) throw invalid(`${copyPath(st)}: ${v} is not a JSON number`);
      return v;
    case "object": {
      if (v === null) return null;
      if (st.ancestors.includes(v)) throw invalid(`${copyPath(st)}: circular reference`);
      st.ancestors.push(v);
      let result: Json;
      if (Array.isArray(v)) {
        const arr: Json[] = new Array(v.length);
        for (let i = 0; i < v.length; i++) {
          st.path.push(i);
          if (!(i in v) || v[i] === undefined) throw invalid(`${copyPath(st)}: undefined in an array is not JSON`);
          arr[i] = copyValue(v[i], st);
          st.path.pop();
        }
        result = arr;
      } else {
        const proto = Object.getPrototypeOf(v);
        if (proto !== Object.prototype && proto !== null) {
          throw invalid(`${copyPath(st)}: a ${proto?.constructor?.name ?? "non-plain"} object is not JSON (store plain data only)`);
        }
        const obj: { [k: string]: Json } = {};
        for (const k in v) {
          const member = (v as Record<string, unknown>)[k];
          if (member === undefined || !Object.prototype.hasOwnProperty.call(v, k)) continue;
          st.path.push(k);
          obj[k] = copyValue(member, st);
          st.path.pop();
        }
        result = obj;
      }
      st.ancestors.pop();
      return result;
    }
    default:
      throw invalid(`${copyPath(st)}: a ${typeof v} is not JSON`);
  }
}

function copyPath(st: CopyState): string {
  return st.label + st.path.map((p) => (typeof p === "number" ? `[${p}]` : `.${p}`)).join("");
}

export function summarize(cp: Checkpoint): CheckpointSummary {
  const s: CheckpointSummary = {
    id: cp.id,
    runId: cp.runId,
    superstep: cp.superstep,
    createdAt: cp.createdAt,
    pending: cp.pending.length,
    waiting: cp.waiting.length,
  };
  if (cp.parentId !== undefined) s.parentId = cp.parentId;
  return s;
}

/**
 * The identity batch.ts checks for a row of an append-only table (undefined for upsert tables and
 * facts, which have none): what `alreadyStored` names.
 */
export function appendOnlyKey(table: TableName, row: object): string | undefined {
  const spec = SPECS[table];
  return spec.upsert ? undefined : spec.key?.(row as Record<string, unknown>);
}

/** The refusal of a row whose identity an append-only table already holds. */
export function alreadyStored(table: TableName, key: string): CasefileError {
  return invalid(`${table} row ${key} already exists; ${table} are append-only and cannot be replaced`);
}

/** The error readValues raises when a checkpoint points at a value the store does not hold. */
export function missingValue(where: string, key: string, ref: KeyRef): CasefileError {
  return new CasefileError(
    "CORRUPT_CASE_FILE",
    `${where}: state key "${key}" version ${ref.version} of run ${ref.run} is referenced but not stored`,
    { key, ref },
  );
}

/** A record naming a run the store does not hold (its row deleted): the file is damaged, not the command wrong. */
export function missingRun(where: string, runId: string, referredBy: string): CasefileError {
  return new CasefileError("CORRUPT_CASE_FILE", `${where}: ${referredBy} refers to run ${runId}, which is not stored`, { run: runId });
}

function invalid(message: string): CasefileError {
  return new CasefileError("INVALID_BATCH", `commit refused: ${message}`);
}

function describe(v: unknown): string {
  if (v === undefined) return "undefined";
  if (typeof v === "string") return JSON.stringify(v.length > 40 ? v.slice(0, 40) + "…" : v);
  if (typeof v === "object") return v === null ? "null" : Array.isArray(v) ? "an array" : "an object";
  return `${typeof v} ${String(v)}`;
}
