import { createHash } from "node:crypto";
import type { TableName } from "../engine/storeBatch";

/**
 * How a record of a table written every superstep (checkpoints, steps, state values, events) is
 * held in its row's `data` (schema v2): as a JSON array of its members' values in the order the
 * engine makes them, without their names, and without the members the row already holds in its
 * columns (a checkpoint's id, run, superstep, parent and time; an event's run, superstep and
 * seq) or that the case holds once (a checkpoint's workflow). Those names and duplicates were
 * most of the bytes of a superstep's rows: about 690 of the 1,280 bytes of JSON a superstep of
 * the growth benchmark wrote (bench:postgres), and the workflow another 110.
 *
 * The array's first element is a bit mask of the members present (bit i: member i of the table's
 * list); then the values of those present and not held in a column, in list order. A record
 * whose members are not a subsequence of the list (one the engine does not make), or whose
 * column-held member is not of its column's type, is stored as the object it is, as every row of
 * the other tables and of v1 stores: reading takes either, so a store written by v1 reads the same.
 * Unpacking gives the record back with its members in the order they were written.
 */

/**
 * A member held outside `data`: in a text or integer column of the row (the column the row is
 * looked up by), or, for a value many rows repeat, once in `shared_values`, named by its hash in
 * the row's `column`.
 */
type Held = { column: string; kind: "text" | "integer" } | { column: string; kind: "shared" };

interface Layout {
  members: readonly string[];
  columns: Readonly<Record<string, Held>>;
}

const text = (column: string): Held => ({ column, kind: "text" });
const integer = (column: string): Held => ({ column, kind: "integer" });
const shared = (column: string): Held => ({ column, kind: "shared" });

const LAYOUTS: Partial<Record<TableName, Layout>> = {
  checkpoints: {
    members: ["v", "id", "runId", "superstep", "parentId", "createdAt", "workflow", "keys", "pending", "fanIn", "local", "waiting"],
    columns: {
      id: text("id"),
      runId: text("run_id"),
      superstep: integer("superstep"),
      parentId: text("parent_id"),
      createdAt: text("created_at"),
      workflow: shared("workflow_ref"),
    },
  },
  steps: {
    members: ["id", "runId", "superstep", "executor", "kind", "status", "startedAt", "endedAt", "durationMs", "writes", "sent", "error"],
    columns: { id: text("id"), runId: text("run_id"), superstep: integer("superstep") },
  },
  values: {
    members: ["run", "key", "version", "value"],
    columns: { run: text("run"), key: text("key"), version: integer("version") },
  },
  // A row holds the consecutive events of one run and superstep a commit made (rows.ts, eventRows):
  // each event's seq is its place among the row's, counted back from the row's seq, the last.
  events: {
    members: ["runId", "superstep", "type", "at", "data", "seq"],
    columns: { runId: text("run_id"), superstep: integer("superstep"), seq: integer("seq") },
  },
};

/**
 * What a read of `table` (named `sqlName` in `schema`) selects beside data for unpack to restore
 * the members held outside it: columns, and a shared value by its hash (as `<column>_value`).
 */
export function packedSelect(table: TableName, schema: string, sqlName: string): string[] {
  const layout = LAYOUTS[table];
  if (!layout) return [];
  return Object.values(layout.columns).map((c) =>
    c.kind !== "shared"
      ? c.column
      : `(SELECT v.data FROM ${schema}.shared_values v WHERE v.tenant = ${sqlName}.tenant AND v.case_id = ${sqlName}.case_id ` +
        `AND v.hash = ${sqlName}.${c.column}) AS ${c.column}_value`,
  );
}

/** The name a shared value is held under: the start of the SHA-256 of its JSON text (96 bits). */
function sharedHash(json: string): string {
  return createHash("sha256").update(json).digest("base64url").slice(0, 16);
}

/** A row to write: its `data` as JSON text, the hash each shared member is held under (by column), and those values' JSON texts. */
export interface PackedRow {
  data: string;
  refs: Record<string, string>;
  shared: { hash: string; json: string }[];
}

/** The row writeStatement writes for `record` of `table`. */
export function packRow(table: TableName, record: unknown): PackedRow {
  const data = pack(table, record);
  const out: PackedRow = { data: JSON.stringify(data), refs: {}, shared: [] };
  const layout = LAYOUTS[table];
  if (!layout || !Array.isArray(data)) return out;
  for (const [name, held] of Object.entries(layout.columns)) {
    const value = (record as Record<string, unknown>)[name];
    if (held.kind !== "shared" || value === undefined) continue;
    const json = JSON.stringify(value);
    const hash = sharedHash(json);
    out.refs[held.column] = hash;
    out.shared.push({ hash, json });
  }
  return out;
}

const INT32 = 2 ** 31;

function fitsColumn(value: unknown, kind: Held["kind"]): boolean {
  if (kind === "shared") return value !== null && typeof value === "object";
  return kind === "text" ? typeof value === "string" : Number.isSafeInteger(value) && Math.abs(value as number) < INT32;
}

/** What `data` holds for `record` of `table` (an event: its element of its row's array): its packed array, or the record itself. */
export function pack(table: TableName, record: unknown): unknown {
  const layout = LAYOUTS[table];
  if (!layout || record === null || typeof record !== "object" || Array.isArray(record)) return record;
  const r = record as Record<string, unknown>;
  let mask = 0;
  const values: unknown[] = [];
  let next = 0;
  for (const [name, value] of Object.entries(r)) {
    if (value === undefined) continue; // JSON drops it; so does the packed form.
    const i = layout.members.indexOf(name, next);
    if (i < 0) return record;
    next = i + 1;
    mask |= 1 << i;
    const col = layout.columns[name];
    if (col === undefined) values.push(value);
    else if (!fitsColumn(value, col.kind)) return record;
  }
  return [mask, ...values];
}

/**
 * The record a row holds: `data` unpacked with the columns of `row` (selected by packedSelect),
 * or `data` as it is when it was stored whole. Undefined when a packed `data` does not fit its
 * table's list (a damaged row: the read refuses it).
 */
export function unpack(table: TableName, data: unknown, row: Record<string, unknown>): unknown {
  const layout = LAYOUTS[table];
  if (!layout || !Array.isArray(data)) return data;
  const [mask, ...values] = data as unknown[];
  if (!Number.isSafeInteger(mask) || (mask as number) < 0 || (mask as number) >= 2 ** layout.members.length) return undefined;
  const out: Record<string, unknown> = {};
  let v = 0;
  for (let i = 0; i < layout.members.length; i++) {
    if (((mask as number) & (1 << i)) === 0) continue;
    const name = layout.members[i]!;
    const col = layout.columns[name];
    if (col !== undefined) {
      const held = row[col.kind === "shared" ? `${col.column}_value` : col.column];
      if (held === null || held === undefined) return undefined;
      out[name] = held;
    } else if (v < values.length) out[name] = values[v++];
    else return undefined;
  }
  return v === values.length ? out : undefined;
}

/**
 * The events a row of `events` holds, each with its seq: the row's `data` array (schema v2: `n`
 * events, the last numbered `seq`), or a v1 row's one event (`n` NULL). Undefined for a row
 * whose array does not fit (a damaged row).
 */
export function unpackEvents(row: Record<string, unknown>): { record: unknown; seq: number }[] | undefined {
  const last = row.seq as number;
  if (row.n === null || row.n === undefined) return [{ record: row.data, seq: last }];
  const n = row.n as number;
  if (!Array.isArray(row.data) || row.data.length !== n) return undefined;
  const out: { record: unknown; seq: number }[] = [];
  for (let i = 0; i < n; i++) {
    const seq = last - n + 1 + i;
    const record = unpack("events", row.data[i], { ...row, seq });
    if (record === undefined) return undefined;
    out.push({ record, seq });
  }
  return out;
}
