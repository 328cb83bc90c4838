import type { SqlParam } from "./schema";

/**
 * Rows that name another row the file no longer holds (a row deleted by hand, a file put together
 * from parts): what `casefile inspect` lists beside the rows that do not parse, so a deleted run,
 * checkpoint, state value, agent call or intent is said, not silently missing. Each check is one
 * SQL query over the indexed columns (and, for checkpoints' key references and intent events,
 * SQLite's JSON functions on rows whose JSON is valid), so nothing is parsed into objects.
 * Called by SqlTables.damagedRecords.
 */
interface ReferenceCheck {
  table: string;
  /** The identity columns the query returns first, as damagedRecords names rows. */
  identity: string[];
  /** Returns the identity columns, then the missing reference. */
  sql: string;
  problem: (missing: SqlParam[]) => string;
}

/**
 * The ids `table` holds, for `x NOT IN (...)`: without the NULLs a hand-inserted row may hold (its
 * TEXT primary key allows one), since one NULL in the list makes every NOT IN unknown and would
 * hide each dangling reference to the table.
 */
const ids = (table: string): string => `(SELECT id FROM ${table} WHERE id IS NOT NULL)`;

const RUN_ROWS: [string, string[], string][] = [
  ["checkpoints", ["run_id", "superstep", "id"], "run_id"],
  ["state_values", ["run", "key", "version"], "run"],
  ["steps", ["run_id", "superstep", "id"], "run_id"],
  ["facts", ["run_id", "key", "version", "superstep", "id"], "run_id"],
  ["agent_calls", ["run_id", "superstep", "id"], "run_id"],
  ["verdicts", ["run_id", "superstep", "id"], "run_id"],
  ["intents", ["run_id", "id"], "run_id"],
  ["events", ["run_id", "superstep", "seq"], "run_id"],
];

const CHECKS: ReferenceCheck[] = [
  ...RUN_ROWS.map(([table, identity, runColumn]): ReferenceCheck => ({
    table,
    identity,
    sql: `SELECT ${identity.join(", ")}, ${runColumn} FROM ${table} WHERE ${runColumn} NOT IN ${ids("runs")} ORDER BY rowid`,
    problem: ([run]) => `its run ${String(run)} is not stored`,
  })),
  {
    table: "runs",
    identity: ["id"],
    sql: `SELECT id, parent_run_id FROM runs WHERE parent_run_id IS NOT NULL AND parent_run_id NOT IN ${ids("runs")} ORDER BY rowid`,
    problem: ([parent]) => `its parent run ${String(parent)} is not stored`,
  },
  {
    table: "checkpoints",
    identity: ["run_id", "superstep", "id"],
    sql: `SELECT run_id, superstep, id, parent_id FROM checkpoints WHERE parent_id IS NOT NULL AND parent_id NOT IN ${ids("checkpoints")} ORDER BY rowid`,
    problem: ([parent]) => `its parent checkpoint ${String(parent)} is not stored`,
  },
  {
    table: "checkpoints",
    identity: ["run_id", "superstep", "id"],
    sql:
      "SELECT c.run_id, c.superstep, c.id, k.key, json_extract(k.value, '$.version'), json_extract(k.value, '$.run') " +
      "FROM checkpoints c, json_each(c.data, '$.keys') k WHERE json_valid(c.data) AND json_type(c.data, '$.keys') = 'object' " +
      "AND NOT EXISTS (SELECT 1 FROM state_values v WHERE v.run = json_extract(k.value, '$.run') AND v.key = k.key " +
      "AND v.version = json_extract(k.value, '$.version')) ORDER BY c.rowid",
    problem: ([key, version, run]) =>
      `state key "${String(key)}" version ${String(version)} of run ${String(run)} is referenced but not stored`,
  },
  {
    table: "verdicts",
    identity: ["run_id", "superstep", "id"],
    sql: `SELECT run_id, superstep, id, agent_call_id FROM verdicts WHERE agent_call_id IS NOT NULL AND agent_call_id NOT IN ${ids("agent_calls")} ORDER BY rowid`,
    problem: ([call]) => `its agent call ${String(call)} is not stored`,
  },
  {
    table: "events",
    identity: ["run_id", "superstep", "seq"],
    sql:
      "SELECT run_id, superstep, seq, json_extract(data, '$.data.id') FROM events WHERE type = 'intent' AND json_valid(data) " +
      `AND json_extract(data, '$.data.id') NOT IN ${ids("intents")} ORDER BY seq`,
    problem: ([intent]) => `it records intent ${String(intent)}, which is not stored`,
  },
];

export function danglingReferences(
  query: (sql: string) => SqlParam[][],
): { table: string; row: Record<string, string | number>; problem: string }[] {
  const out: { table: string; row: Record<string, string | number>; problem: string }[] = [];
  for (const check of CHECKS) {
    for (const r of query(check.sql)) {
      const row: Record<string, string | number> = {};
      check.identity.forEach((c, i) => {
        const v = r[i];
        row[c] = typeof v === "number" ? v : v === null || v === undefined ? "NULL" : String(v);
      });
      out.push({ table: check.table, row, problem: check.problem(r.slice(check.identity.length)) });
    }
  }
  return out;
}
