import type { Database } from "sql.js";
import { CasefileError, errorMessage } from "../engine/errors";
import type { Checkpoint, EventRecord, FactRecord, IntentRecord, RuleRecord, RunRecord } from "../engine/records";
import type { AgentCallRecord, StateValueRow, StepRecord, VerdictRecord } from "../engine/records";
import type { TableName } from "./batch";

/**
 * The SQLite layout of a case file. Each table has the columns the store looks rows up by, plus
 * a `data` column holding the whole record as JSON: reading a row is JSON.parse of `data`, and a
 * record type can gain optional fields without a migration.
 *
 * The `meta` table is a single row. Its `app` and `schema_version` columns are frozen for every
 * future version, because an older Casefile reads them to refuse a newer file.
 */

export const APP_ID = "casefile";

const V1: string[] = [
  `CREATE TABLE IF NOT EXISTS meta (
     id INTEGER PRIMARY KEY CHECK (id = 1),
     app TEXT NOT NULL,
     schema_version INTEGER NOT NULL,
     created_at TEXT NOT NULL,
     tenant TEXT,
     journal_seq INTEGER NOT NULL DEFAULT 0
   )`,
  `CREATE TABLE IF NOT EXISTS runs (
     id TEXT PRIMARY KEY, parent_run_id TEXT, status TEXT NOT NULL, created_at TEXT NOT NULL, data TEXT NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS checkpoints (
     id TEXT PRIMARY KEY, run_id TEXT NOT NULL, superstep INTEGER NOT NULL, parent_id TEXT,
     created_at TEXT NOT NULL, pending INTEGER NOT NULL, waiting INTEGER NOT NULL, data TEXT NOT NULL)`,
  `CREATE INDEX IF NOT EXISTS checkpoints_by_run ON checkpoints (run_id, superstep)`,
  `CREATE TABLE IF NOT EXISTS state_values (
     run TEXT NOT NULL, key TEXT NOT NULL, version INTEGER NOT NULL, data TEXT NOT NULL,
     PRIMARY KEY (run, key, version))`,
  `CREATE TABLE IF NOT EXISTS steps (
     id TEXT PRIMARY KEY, run_id TEXT NOT NULL, superstep INTEGER NOT NULL, data TEXT NOT NULL)`,
  `CREATE INDEX IF NOT EXISTS steps_by_run ON steps (run_id, superstep)`,
  `CREATE TABLE IF NOT EXISTS facts (
     id INTEGER PRIMARY KEY, run_id TEXT NOT NULL, key TEXT NOT NULL, version INTEGER NOT NULL,
     superstep INTEGER NOT NULL, data TEXT NOT NULL)`,
  `CREATE INDEX IF NOT EXISTS facts_by_run ON facts (run_id, key, version)`,
  `CREATE TABLE IF NOT EXISTS agent_calls (
     id TEXT PRIMARY KEY, run_id TEXT NOT NULL, superstep INTEGER NOT NULL, hash TEXT NOT NULL, data TEXT NOT NULL)`,
  `CREATE INDEX IF NOT EXISTS agent_calls_by_run ON agent_calls (run_id)`,
  `CREATE INDEX IF NOT EXISTS agent_calls_by_hash ON agent_calls (hash)`,
  `CREATE TABLE IF NOT EXISTS verdicts (
     id TEXT PRIMARY KEY, run_id TEXT NOT NULL, superstep INTEGER NOT NULL, agent_call_id TEXT, data TEXT NOT NULL)`,
  `CREATE INDEX IF NOT EXISTS verdicts_by_run ON verdicts (run_id)`,
  `CREATE TABLE IF NOT EXISTS intents (
     id TEXT PRIMARY KEY, run_id TEXT NOT NULL, status TEXT NOT NULL, data TEXT NOT NULL)`,
  `CREATE INDEX IF NOT EXISTS intents_by_run ON intents (run_id)`,
  `CREATE INDEX IF NOT EXISTS intents_by_status ON intents (status)`,
  `CREATE TABLE IF NOT EXISTS rules (id TEXT PRIMARY KEY, deleted INTEGER NOT NULL, data TEXT NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS events (
     seq INTEGER PRIMARY KEY, run_id TEXT NOT NULL, superstep INTEGER NOT NULL, type TEXT NOT NULL, data TEXT NOT NULL)`,
  `CREATE INDEX IF NOT EXISTS events_by_run ON events (run_id, seq)`,
];

/**
 * Indexes added after v1 for the inspector's per-superstep reads. An index changes no row and an
 * older Casefile reads a file that has it, so they need no schema version: a new file gets them
 * when it is laid out, and every open of an older file adds them to the database in memory (a
 * writer's next compaction then writes them to disk). `reader: false` marks the one too costly to
 * build each time a reader opens an older file (~80 ms at 100 MB: it reads every agent call);
 * nothing a reader needs at once uses it.
 */
const INDEXES: readonly { sql: string; reader: boolean }[] = [
  { sql: `CREATE INDEX IF NOT EXISTS agent_calls_by_superstep ON agent_calls (run_id, superstep)`, reader: false },
  { sql: `CREATE INDEX IF NOT EXISTS verdicts_by_superstep ON verdicts (run_id, superstep)`, reader: true },
  { sql: `CREATE INDEX IF NOT EXISTS verdicts_by_agent_call ON verdicts (agent_call_id)`, reader: true },
  // A superstep's events (requests asked and answered there): a reader of an older file scans instead.
  { sql: `CREATE INDEX IF NOT EXISTS events_by_superstep ON events (run_id, superstep)`, reader: false },
];

/**
 * Adds the indexes a file made before them lacks (a no-op on a file that has them). Called by
 * SqlJsStore when it opens a file, after migrating it, and when it lays out a new one.
 */
export function ensureIndexes(db: Database, opts: { readOnly: boolean }): void {
  for (const { sql, reader } of INDEXES) if (reader || !opts.readOnly) db.run(sql);
}

/** The statements of schema v1, for tools (the benchmark) that lay out the same tables elsewhere. */
export const SCHEMA_V1_SQL: readonly string[] = V1;

export interface Migration {
  /** The schema version this migration produces; the list is ordered by it. */
  to: number;
  description: string;
  /** Runs inside a savepoint; may read and rewrite rows (JSON in `data`) as well as DDL. */
  up(db: Database): void;
}

/**
 * Every schema change, oldest first. A file at version N gets migrations N+1.. applied when it is
 * opened (in memory for a reader; a writer then compacts, so the file on disk moves to the new
 * version only under the lock). A file above the last version is refused.
 */
export const MIGRATIONS: readonly Migration[] = [{ to: 1, description: "initial schema", up: (db) => V1.forEach((sql) => db.run(sql)) }];

export const SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1]!.to;

export interface StoredMeta {
  app: string;
  schemaVersion: number;
  createdAt: string;
  tenant?: string;
  /** The sequence number of the last journal record whose batch this database already holds. */
  journalSeq: number;
}

/**
 * Reads the meta row without assuming more than the frozen columns, so that it works on any
 * SQLite file. Returns undefined for a database that is not a case file. Throws what sql.js throws
 * for a database it cannot read (the caller turns that into CORRUPT_CASE_FILE).
 */
export function readMeta(db: Database): StoredMeta | undefined {
  const hasMeta = db.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'");
  if (hasMeta.length === 0) return undefined;
  const res = db.exec("SELECT * FROM meta LIMIT 2");
  if (res.length === 0 || res[0]!.values.length !== 1) return undefined;
  const { columns, values } = res[0]!;
  const row: Record<string, unknown> = {};
  columns.forEach((c, i) => (row[c] = values[0]![i]));
  if (row.app !== APP_ID || typeof row.schema_version !== "number") return undefined;
  const meta: StoredMeta = {
    app: APP_ID,
    schemaVersion: row.schema_version,
    createdAt: typeof row.created_at === "string" ? row.created_at : "",
    journalSeq: typeof row.journal_seq === "number" ? row.journal_seq : 0,
  };
  if (typeof row.tenant === "string") meta.tenant = row.tenant;
  return meta;
}

/**
 * Lays out a new, empty case file: the meta row at version 0, then every migration. In one
 * transaction (the migrations' savepoints nest in it): statement by statement, each its own
 * commit, cost a first run ~4 ms more of sql.js's time (measured side by side, CPU).
 */
export function createSchema(db: Database, meta: { createdAt: string; tenant?: string }): void {
  db.run("BEGIN");
  try {
    db.run(V1[0]!);
    db.run("INSERT INTO meta (id, app, schema_version, created_at, tenant, journal_seq) VALUES (1, ?, 0, ?, ?, 0)", [
      APP_ID,
      meta.createdAt,
      meta.tenant ?? null,
    ]);
    migrate(db, 0, "new case file");
    ensureIndexes(db, { readOnly: false });
    db.run("COMMIT");
  } catch (e) {
    db.run("ROLLBACK");
    throw e;
  }
}

/**
 * Brings a database from schema `from` to the newest version, one savepoint per step so that a
 * failing migration leaves the database at the last version that succeeded. Returns the versions
 * applied. `migrations` is a parameter so that tests can exercise the mechanism with more steps
 * than the product has.
 */
export function migrate(db: Database, from: number, file: string, migrations: readonly Migration[] = MIGRATIONS): number[] {
  const applied: number[] = [];
  for (const m of migrations) {
    if (m.to <= from) continue;
    db.run("SAVEPOINT migrate");
    try {
      m.up(db);
      db.run("UPDATE meta SET schema_version = ? WHERE id = 1", [m.to]);
      db.run("RELEASE migrate");
    } catch (e) {
      db.run("ROLLBACK TO migrate");
      db.run("RELEASE migrate");
      throw new CasefileError(
        "MIGRATION_FAILED",
        `${file}: migrating the case file to schema v${m.to} (${m.description}) failed: ${errorMessage(e)}`,
        {
          file,
          to: m.to,
        },
      );
    }
    applied.push(m.to);
  }
  return applied;
}

export type SqlParam = string | number | null;
/** A parameter of WRITE_SQL: the `data` column's JSON is handed over as its UTF-8 bytes. */
export type WriteParam = SqlParam | Uint8Array;

/**
 * The statement that writes one row of each table. Runs, intents and rules are upserted with
 * ON CONFLICT DO UPDATE rather than INSERT OR REPLACE, so a row keeps its rowid (and with it its
 * place in every list) when its status changes.
 *
 * The `data` JSON is bound as its UTF-8 bytes and cast to TEXT in SQL (stored as TEXT, the same
 * bytes): sql.js turns a string parameter into UTF-8 with a loop in JavaScript, a blob with one
 * copy, and a superstep's rows are mostly `data` (replaying an 8 MB journal: ~40 ms less).
 */
export const WRITE_SQL: Record<TableName, string> = {
  runs:
    "INSERT INTO runs (id, parent_run_id, status, created_at, data) VALUES (?, ?, ?, ?, CAST(? AS TEXT)) " +
    "ON CONFLICT (id) DO UPDATE SET parent_run_id = excluded.parent_run_id, status = excluded.status, created_at = excluded.created_at, data = excluded.data",
  checkpoints:
    "INSERT INTO checkpoints (id, run_id, superstep, parent_id, created_at, pending, waiting, data) VALUES (?, ?, ?, ?, ?, ?, ?, CAST(? AS TEXT))",
  values: "INSERT INTO state_values (run, key, version, data) VALUES (?, ?, ?, CAST(? AS TEXT))",
  steps: "INSERT INTO steps (id, run_id, superstep, data) VALUES (?, ?, ?, CAST(? AS TEXT))",
  facts: "INSERT INTO facts (run_id, key, version, superstep, data) VALUES (?, ?, ?, ?, CAST(? AS TEXT))",
  agentCalls: "INSERT INTO agent_calls (id, run_id, superstep, hash, data) VALUES (?, ?, ?, ?, CAST(? AS TEXT))",
  verdicts: "INSERT INTO verdicts (id, run_id, superstep, agent_call_id, data) VALUES (?, ?, ?, ?, CAST(? AS TEXT))",
  intents:
    "INSERT INTO intents (id, run_id, status, data) VALUES (?, ?, ?, CAST(? AS TEXT)) " +
    "ON CONFLICT (id) DO UPDATE SET run_id = excluded.run_id, status = excluded.status, data = excluded.data",
  rules:
    "INSERT INTO rules (id, deleted, data) VALUES (?, ?, CAST(? AS TEXT)) ON CONFLICT (id) DO UPDATE SET deleted = excluded.deleted, data = excluded.data",
  events: "INSERT INTO events (seq, run_id, superstep, type, data) VALUES (?, ?, ?, ?, CAST(? AS TEXT))",
};

/** Each table's columns beside `data`, in WRITE_SQL's order (which ends with data). */
export const WRITE_COLUMNS: Record<TableName, string[]> = Object.fromEntries(
  Object.entries(WRITE_SQL).map(([table, sql]) => {
    const cols = /\(([^)]*)\) VALUES/
      .exec(sql)![1]!
      .split(",")
      .map((c) => c.trim());
    return [table, cols.slice(0, -1)];
  }),
) as Record<TableName, string[]>;

/**
 * The parameters of WRITE_SQL[table] for one (validated) row: its columns, then its JSON as UTF-8
 * bytes (`data`, when the caller has them), which WRITE_SQL casts to TEXT.
 */
export function writeParams(table: TableName, row: object, data: Uint8Array = Buffer.from(JSON.stringify(row), "utf8")): WriteParam[] {
  const params: WriteParam[] = columnValues(table, row);
  params.push(data);
  return params;
}

/**
 * The values a row's columns (WRITE_COLUMNS[table], every one but `data`) hold for its record:
 * what a write stores beside the JSON, and what a read checks the stored columns against.
 */
export function columnValues(table: TableName, row: object): SqlParam[] {
  switch (table) {
    case "runs": {
      const r = row as RunRecord;
      return [r.id, r.parentRunId ?? null, r.status, r.createdAt];
    }
    case "checkpoints": {
      const c = row as Checkpoint;
      return [c.id, c.runId, c.superstep, c.parentId ?? null, c.createdAt, c.pending.length, c.waiting.length];
    }
    case "values": {
      const v = row as StateValueRow;
      return [v.run, v.key, v.version];
    }
    case "steps": {
      const s = row as StepRecord;
      return [s.id, s.runId, s.superstep];
    }
    case "facts": {
      const f = row as FactRecord;
      return [f.runId, f.key, f.version, f.superstep];
    }
    case "agentCalls": {
      const a = row as AgentCallRecord;
      return [a.id, a.runId, a.superstep, a.hash];
    }
    case "verdicts": {
      const v = row as VerdictRecord;
      return [v.id, v.runId, v.superstep, v.agentCallId ?? null];
    }
    case "intents": {
      const i = row as IntentRecord;
      return [i.id, i.runId, i.status];
    }
    case "rules": {
      const r = row as RuleRecord;
      return [r.id, r.deleted === true ? 1 : 0];
    }
    case "events": {
      const e = row as EventRecord;
      return [e.seq!, e.runId, e.superstep, e.type];
    }
    default: {
      const never: never = table;
      throw new Error(`no statement for table ${String(never)}`);
    }
  }
}
