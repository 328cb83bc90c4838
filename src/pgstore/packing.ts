import type { TableName } from "../engine/storeBatch";

/**
 * How a record of a table written every superstep (checkpoints, steps, state values, events) is
 * held in its row's `data` (schema v2): as a JSON array of its members' values in the order the
 * engine makes them, without their names, and without the members the row already holds in its
 * columns (a checkpoint's id, run, superstep, parent and time; an event's run, superstep, type
 * and seq). Those names and duplicates were most of the bytes of a superstep's rows: about 690
 * of the 1,280 bytes of JSON a superstep of the growth benchmark wrote (bench:postgres).
 *
 * The array's first element is a bit mask of the members present (bit i: member i of the table's
 * list); then the values of those present and not held in a column, in list order. A record
 * whose members are not a subsequence of the list (one the engine does not make), or whose
 * column-held member is not of its column's type, is stored as the object it is, as every row of
 * the other tables and of v1 stores: reading takes either, so a store written by v1 reads the same.
 * Unpacking gives the record back with its members in the order they were written.
 */

interface Layout {
  members: readonly string[];
  /** Members whose value the row holds in a column: the column and its SQL type. */
  columns: Readonly<Record<string, { column: string; kind: "text" | "integer" }>>;
}

const text = (column: string) => ({ column, kind: "text" as const });
const integer = (column: string) => ({ column, kind: "integer" as const });

const LAYOUTS: Partial<Record<TableName, Layout>> = {
  checkpoints: {
    members: ["v", "id", "runId", "superstep", "parentId", "createdAt", "workflow", "keys", "pending", "fanIn", "local", "waiting"],
    columns: {
      id: text("id"),
      runId: text("run_id"),
      superstep: integer("superstep"),
      parentId: text("parent_id"),
      createdAt: text("created_at"),
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
  events: {
    members: ["runId", "superstep", "type", "at", "data", "seq"],
    columns: { runId: text("run_id"), superstep: integer("superstep"), type: text("type"), seq: integer("seq") },
  },
};

/** The columns a read of `table` must select for unpack to restore the members they hold. */
export function packedColumns(table: TableName): string[] {
  const layout = LAYOUTS[table];
  return layout ? Object.values(layout.columns).map((c) => c.column) : [];
}

const INT32 = 2 ** 31;

function fitsColumn(value: unknown, kind: "text" | "integer"): boolean {
  return kind === "text" ? typeof value === "string" : Number.isSafeInteger(value) && Math.abs(value as number) < INT32;
}

/** What `data` holds for `record` of `table`: its packed array, or the record itself. Called by writeStatement for every row. */
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
 * The record a row holds: `data` unpacked with the columns of `row` (selected by packedColumns),
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
    if (col !== undefined) out[name] = row[col.column];
    else if (v < values.length) out[name] = values[v++];
    else return undefined;
  }
  return v === values.length ? out : undefined;
}
