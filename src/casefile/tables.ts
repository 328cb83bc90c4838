import type { Database, Statement } from "sql.js";
import type {
  AgentCallRecord,
  Checkpoint,
  EventRecord,
  FactRecord,
  IntentRecord,
  Json,
  KeyRef,
  RuleRecord,
  RunRecord,
  StateValueRow,
  StepRecord,
  VerdictRecord,
} from "../engine/records";
import type { AgentCallSummary, CheckpointSummary } from "../engine/store";
import { CasefileError, errorMessage } from "../engine/errors";
import { TABLES, alreadyStored, appendOnlyKey, missingValue, storedRowProblem } from "./batch";
import type { PreparedBatch, TableName } from "./batch";
import { encodeParts } from "./journal";
import { danglingReferences } from "./references";
import { WRITE_COLUMNS, WRITE_SQL, columnValues, writeParams } from "./schema";
import type { SqlParam } from "./schema";

/**
 * The case-file tables over an in-memory sql.js database: applying a validated batch and every
 * read of the CaseStore port. SqlJsStore extends this with the file, journal and lock. Reads parse
 * the `data` column with JSON.parse and nothing else, so loading a record never runs code, and
 * check it has its record's shape (see `records`).
 * Lists come back in rowid order, i.e. in the order rows were first committed.
 */
export class SqlTables {
  private readonly statements = new Map<string, Statement>();
  /** agentCallSummaries' rows so far, of the database they were read from (a reopen replaces it). */
  private callSummaries: { db: Database; lastRowid: number; list: readonly AgentCallSummary[] } | undefined;

  protected constructor(
    protected db: Database,
    /** Named in error messages. */
    protected readonly file: string,
  ) {}

  /**
   * Writes every row inside the caller's transaction (commit, replay). Returns the batch as JSON (what `JSON.stringify(batch)` gives) in UTF-8, after `room`
   * bytes left for a journal record's header: each row is serialised and encoded once, and the
   * bytes bound to its `data` column are a view of that buffer, which commit then journals.
   *
   * A row an append-only table already holds is refused by that table's primary key, inside the
   * caller's transaction: INVALID_BATCH naming the row (alreadyStored), as a check before the
   * write would say, without a lookup per row.
   */
  protected writeRows(batch: PreparedBatch, room = 0): Buffer {
    // The batch's JSON in pieces: text between rows at even indexes, each row's JSON after it.
    const parts: string[] = [];
    let between = "{";
    TABLES.forEach((table, t) => {
      between += `${t ? "," : ""}"${table}":[`;
      (batch[table] as object[]).forEach((row, i) => {
        parts.push(i ? between + "," : between, JSON.stringify(row));
        between = "";
      });
      between += "]";
    });
    parts.push(between + "}");
    const { bytes, offsets } = encodeParts(parts, room);
    let part = 1;
    for (const table of TABLES) {
      const rows = batch[table] as object[];
      if (!rows.length) continue;
      const stmt = this.statement(WRITE_SQL[table]);
      for (const row of rows) {
        try {
          stmt.run(writeParams(table, row, bytes.subarray(offsets[part]!, offsets[part + 1]!)));
        } catch (e) {
          const key = appendOnlyKey(table, row);
          // Stryker disable next-line ConditionalExpression: only a table with an identity hits its primary key (upserts resolve theirs, SQLite numbers facts)
          if (key !== undefined && (e as { code?: unknown }).code === "SQLITE_CONSTRAINT_PRIMARYKEY") throw alreadyStored(table, key);
          throw e;
        }
        part += 2;
      }
    }
    return bytes;
  }

  /**
   * Stamps the database with the last journal record it holds. Only a database written out reads
   * it back (replay skips the records it holds), so compaction stamps it once, just before.
   */
  protected stampJournalSeq(journalSeq: number): void {
    this.statement("UPDATE meta SET journal_seq = ? WHERE id = 1").run([journalSeq]);
  }

  /** Runs a statement without parameters or results (BEGIN, SAVEPOINT...), prepared once per store. */
  protected execute(sql: string): void {
    this.statement(sql).run();
  }

  /** Rolls back the open transaction, if SQLite has not already ended it after an error. */
  protected rollback(): void {
    try {
      this.db.run("ROLLBACK");
    } catch {
      // "no transaction is active": nothing to undo.
    }
  }

  protected lastEventSeq(): number {
    const rows = this.query("SELECT max(seq) FROM events", []);
    return (rows[0]?.[0] as number | null) ?? 0;
  }

  /** Frees the cached statements; the caller closes the database. */
  protected freeStatements(): void {
    for (const s of this.statements.values()) s.free();
    this.statements.clear();
  }

  getRun(id: string): RunRecord | undefined {
    return this.one<RunRecord>("runs", "WHERE id = ?", [id]);
  }

  /** The ids of every run, from the indexed column: readable even when a run's record is damaged. */
  runIds(): string[] {
    return this.query("SELECT id FROM runs ORDER BY rowid", []).map((r) => String(r[0]));
  }

  listRuns(): RunRecord[] {
    // Stryker disable next-line StringLiteral: a whole table with no WHERE is scanned in rowid order anyway
    return this.records<RunRecord>("runs", "ORDER BY rowid", []);
  }

  getCheckpoint(id: string): Checkpoint | undefined {
    return this.one<Checkpoint>("checkpoints", "WHERE id = ?", [id]);
  }

  listCheckpoints(runId: string, superstep?: number): CheckpointSummary[] {
    // Summaries come from the indexed columns, so listing never parses a checkpoint's JSON.
    const columns = "SELECT id, run_id, superstep, created_at, parent_id, pending, waiting FROM checkpoints";
    const rows =
      superstep === undefined
        ? this.query(`${columns} WHERE run_id = ? ORDER BY superstep, rowid`, [runId])
        : this.query(`${columns} WHERE run_id = ? AND superstep = ? ORDER BY rowid`, [runId, superstep]);
    return rows.map(([id, run, superstep, createdAt, parentId, pending, waiting]) => {
      // Read from the columns alone, so their types are checked here (a record read checks them against its data).
      const bad = (
        [
          ["superstep", superstep, Number.isInteger(superstep)],
          ["pending", pending, Number.isInteger(pending)],
          ["waiting", waiting, Number.isInteger(waiting)],
          ["created_at", createdAt, typeof createdAt === "string"],
          ["parent_id", parentId, parentId === null || typeof parentId === "string"],
        ] as const
      ).find(([, , ok]) => !ok);
      if (bad) {
        const row = { run_id: String(run), superstep: typeof superstep === "number" ? superstep : String(superstep), id: String(id) };
        throw this.damaged(
          "checkpoints",
          row,
          `column ${bad[0]} holds ${JSON.stringify(bad[1])}, not ${bad[0] === "created_at" ? "a time" : bad[0] === "parent_id" ? "a checkpoint id" : "an integer"}`,
        );
      }
      const s: CheckpointSummary = {
        id: id as string,
        runId: run as string,
        superstep: superstep as number,
        createdAt: createdAt as string,
        pending: pending as number,
        waiting: waiting as number,
      };
      if (parentId !== null) s.parentId = parentId as string;
      return s;
    });
  }

  latestCheckpoint(runId: string, before?: number): Checkpoint | undefined {
    return before === undefined
      ? this.one<Checkpoint>("checkpoints", "WHERE run_id = ? ORDER BY superstep DESC, rowid DESC LIMIT 1", [runId])
      : this.one<Checkpoint>("checkpoints", "WHERE run_id = ? AND superstep < ? ORDER BY superstep DESC, rowid DESC LIMIT 1", [
          runId,
          before,
        ]);
  }

  readValues(refs: Record<string, KeyRef>): Record<string, Json> {
    const out: Record<string, Json> = {};
    for (const [key, ref] of Object.entries(refs)) {
      const row = this.one<StateValueRow>("values", "WHERE run = ? AND key = ? AND version = ?", [ref.run, key, ref.version]);
      if (!row) throw missingValue(this.file, key, ref);
      out[key] = row.value;
    }
    return out;
  }

  listSteps(runId: string, superstep?: number): StepRecord[] {
    return superstep === undefined
      ? this.records<StepRecord>("steps", "WHERE run_id = ? ORDER BY rowid", [runId])
      : this.records<StepRecord>("steps", "WHERE run_id = ? AND superstep = ? ORDER BY rowid", [runId, superstep]);
  }

  listFacts(runId: string): FactRecord[] {
    return this.records<FactRecord>("facts", "WHERE run_id = ? ORDER BY id", [runId]);
  }

  listAgentCalls(runId?: string, superstep?: number): AgentCallRecord[] {
    if (runId === undefined) {
      return superstep === undefined
        ? // Stryker disable next-line StringLiteral: a whole table with no WHERE is scanned in rowid order anyway
          this.records<AgentCallRecord>("agentCalls", "ORDER BY rowid", [])
        : this.records<AgentCallRecord>("agentCalls", "WHERE superstep = ? ORDER BY rowid", [superstep]);
    }
    return superstep === undefined
      ? this.records<AgentCallRecord>("agentCalls", "WHERE run_id = ? ORDER BY rowid", [runId])
      : this.records<AgentCallRecord>("agentCalls", "WHERE run_id = ? AND superstep = ? ORDER BY rowid", [runId, superstep]);
  }

  /**
   * Read once from the columns and one json_extract (the executor and token count: the call's JSON
   * is parsed by SQLite, not turned into objects), then only the rows added since: agent calls are
   * append-only, so the rows after the last rowid read are all that can be new. A reopen (new
   * database) reads them afresh.
   */
  agentCallSummaries(): readonly AgentCallSummary[] {
    let cached = this.callSummaries;
    if (cached?.db !== this.db) cached = this.callSummaries = { db: this.db, lastRowid: 0, list: [] };
    const sql =
      "SELECT rowid, id, run_id, superstep, hash, json_extract(data, '$.executor', '$.tokens.count') FROM agent_calls WHERE rowid > ? ORDER BY rowid";
    let rows: SqlParam[][];
    try {
      rows = this.query(sql, [cached.lastRowid]);
    } catch (e) {
      throw this.summaryRefused(cached.lastRowid, e as Error); // json_extract refuses data that is not JSON
    }
    if (rows.length === 0) return cached.list;
    const added: AgentCallSummary[] = [];
    for (const [, id, runId, superstep, hash, extracted] of rows) {
      const [executor, tokens] = JSON.parse(extracted as string) as [unknown, unknown];
      if (typeof executor !== "string" || executor === "" || (tokens !== null && typeof tokens !== "number")) {
        // The full read names a bad executor; the token count is not part of its record check.
        const row = { run_id: String(runId), superstep: superstep as number, id: String(id) };
        throw this.summaryRefused(
          cached.lastRowid,
          this.damaged("agentCalls", row, `its token count holds ${JSON.stringify(tokens)}, not a number`),
        );
      }
      added.push(
        Object.freeze({ id: id as string, runId: runId as string, superstep: superstep as number, executor, hash: hash as string, tokens }),
      );
    }
    cached.list = Object.freeze([...cached.list, ...added]);
    cached.lastRowid = rows[rows.length - 1]![0] as number;
    return cached.list;
  }

  /**
   * What the full read of the rows says about the one that could not be summarised (CORRUPT_CASE_FILE
   * naming it), or `otherwise` when the full read finds nothing wrong.
   */
  private summaryRefused(afterRowid: number, otherwise: Error): Error {
    try {
      this.records<AgentCallRecord>("agentCalls", "WHERE rowid > ? ORDER BY rowid", [afterRowid]);
    } catch (e) {
      return e as Error;
    }
    return otherwise;
  }

  getAgentCall(id: string): AgentCallRecord | undefined {
    return this.one<AgentCallRecord>("agentCalls", "WHERE id = ?", [id]);
  }

  listVerdicts(runId?: string, filter: { superstep?: number; agentCallId?: string } = {}): VerdictRecord[] {
    // Only the conditions asked for, so SQLite picks the index that fits (by run, superstep or agent call).
    const conditions: [string, SqlParam | undefined][] = [
      ["run_id = ?", runId],
      ["superstep = ?", filter.superstep],
      ["agent_call_id = ?", filter.agentCallId],
    ];
    const asked = conditions.filter((c): c is [string, SqlParam] => c[1] !== undefined);
    const where = asked.length ? `WHERE ${asked.map(([sql]) => sql).join(" AND ")} ` : "";
    return this.records<VerdictRecord>(
      "verdicts",
      `${where}ORDER BY rowid`,
      asked.map(([, p]) => p),
    );
  }

  listIntents(filter: { runId?: string; status?: IntentRecord["status"] } = {}): IntentRecord[] {
    return this.records<IntentRecord>("intents", "WHERE (?1 IS NULL OR run_id = ?1) AND (?2 IS NULL OR status = ?2) ORDER BY rowid", [
      filter.runId ?? null,
      filter.status ?? null,
    ]);
  }

  getIntent(id: string): IntentRecord | undefined {
    return this.one<IntentRecord>("intents", "WHERE id = ?", [id]);
  }

  listRules(includeDeleted = false): RuleRecord[] {
    return includeDeleted
      ? // Stryker disable next-line StringLiteral: a whole table with no WHERE is scanned in rowid order anyway
        this.records<RuleRecord>("rules", "ORDER BY rowid", [])
      : this.records<RuleRecord>("rules", "WHERE deleted = 0 ORDER BY rowid", []);
  }

  listEvents(filter: { runId?: string; superstep?: number; afterSeq?: number } = {}): EventRecord[] {
    // Only the filters given, so SQLite can use events_by_run / events_by_superstep (an
    // `?1 IS NULL OR run_id = ?1` clause would scan the table on every superstep click).
    const where: string[] = [];
    const params: SqlParam[] = [];
    if (filter.runId !== undefined) where.push(`run_id = ?${params.push(filter.runId)}`);
    if (filter.superstep !== undefined) where.push(`superstep = ?${params.push(filter.superstep)}`);
    if (filter.afterSeq !== undefined) where.push(`seq > ?${params.push(filter.afterSeq)}`);
    return this.records<EventRecord>("events", `${where.length ? `WHERE ${where.join(" AND ")} ` : ""}ORDER BY seq`, params);
  }

  private statement(sql: string): Statement {
    let stmt = this.statements.get(sql);
    // Stryker disable next-line ConditionalExpression: a statement prepared again answers the same, only slower (sql.js frees every statement of a database on close)
    if (!stmt) {
      stmt = this.db.prepare(sql);
      this.statements.set(sql, stmt);
    }
    return stmt;
  }

  private query(sql: string, params: SqlParam[]): SqlParam[][] {
    const stmt = this.statement(sql);
    const rows: SqlParam[][] = [];
    try {
      stmt.bind(params);
      while (stmt.step()) rows.push(stmt.get() as SqlParam[]);
    } finally {
      stmt.reset();
    }
    return rows;
  }

  /**
   * Every read of a stored record comes through here: `SELECT data, <identity columns> FROM
   * <table> <rest>`, each row's `data` parsed with JSON.parse and checked against its table's
   * record shape (storedRowProblem). A row that fails is refused with CORRUPT_CASE_FILE naming
   * the file, the table, the row and what is wrong, never handed on half-formed.
   */
  private records<T>(table: TableName, rest: string, params: SqlParam[]): T[] {
    return this.rows(table, rest, params).map((r) => {
      const read = readRecord(table, r);
      if ("problem" in read) throw this.damaged(table, read.row, read.problem);
      return read.record as T;
    });
  }

  private one<T>(table: TableName, rest: string, params: SqlParam[]): T | undefined {
    return this.records<T>(table, rest, params)[0];
  }

  private rows(table: TableName, rest: string, params: SqlParam[]): SqlParam[][] {
    const { name, identity } = STORED[table];
    return this.query(`SELECT data, ${[...WRITE_COLUMNS[table], ...identity].join(", ")} FROM ${name} ${rest}`, params);
  }

  private damaged(table: TableName, row: Record<string, string | number>, problem: string): CasefileError {
    const { name } = STORED[table];
    return new CasefileError("CORRUPT_CASE_FILE", `${this.file} is corrupted: ${name} row ${describeRow(row)}: ${problem}`, {
      file: this.file,
      table: name,
      row,
      problem,
    });
  }

  /**
   * Every row of every table whose data does not parse or has not its record's shape (or whose
   * columns disagree with it), and every row naming a row that is not stored, without throwing: what `casefile inspect` lists before the runs it can still show.
   */
  damagedRecords(): DamagedRecord[] {
    const out: DamagedRecord[] = [];
    for (const table of TABLES) {
      // Stryker disable next-line StringLiteral: a whole table with no WHERE is scanned in rowid order anyway
      for (const r of this.rows(table, "ORDER BY rowid", [])) {
        const read = readRecord(table, r);
        if ("problem" in read) out.push({ table: STORED[table].name, row: read.row, problem: read.problem });
      }
    }
    out.push(...danglingReferences((sql) => this.query(sql, [])));
    return out;
  }
}

/** A stored row that cannot be read: the SQL table, the row's identity columns, what is wrong. */
export interface DamagedRecord {
  table: string;
  row: Record<string, string | number>;
  problem: string;
}

/** Each table's SQL name and the columns that identify a row to a person (run first). */
const STORED: Record<TableName, { name: string; identity: string[] }> = {
  runs: { name: "runs", identity: ["id"] },
  checkpoints: { name: "checkpoints", identity: ["run_id", "superstep", "id"] },
  values: { name: "state_values", identity: ["run", "key", "version"] },
  steps: { name: "steps", identity: ["run_id", "superstep", "id"] },
  facts: { name: "facts", identity: ["run_id", "key", "version", "superstep", "id"] },
  agentCalls: { name: "agent_calls", identity: ["run_id", "superstep", "id"] },
  verdicts: { name: "verdicts", identity: ["run_id", "superstep", "id"] },
  intents: { name: "intents", identity: ["run_id", "id"] },
  rules: { name: "rules", identity: ["id"] },
  events: { name: "events", identity: ["run_id", "superstep", "seq"] },
};

/** Parses one `SELECT data, <identity>` row; only JSON.parse runs on the data. */
function readRecord(table: TableName, r: SqlParam[]): { record: unknown } | { row: Record<string, string | number>; problem: string } {
  const [data, ...rest] = r;
  const columns = rest.slice(0, WRITE_COLUMNS[table].length);
  const ids = rest.slice(WRITE_COLUMNS[table].length);
  let problem: string | undefined;
  let record: unknown;
  if (typeof data !== "string") {
    problem = `data is ${data === null ? "NULL" : `a ${typeof data === "number" ? "number" : "blob"}`}, not JSON text`;
  } else {
    try {
      record = JSON.parse(data);
    } catch (e) {
      problem = `data is not JSON: ${errorMessage(e)}`;
    }
    if (problem === undefined) {
      const shape = storedRowProblem(table, record);
      if (shape !== undefined) problem = `data is not a ${STORED[table].name} record: ${shape}`;
    }
    // The columns beside `data` are what its record wrote there (lookups and lists read them):
    // one that disagrees (a hand edit of a status, a superstep, a parent) is damage too.
    if (problem === undefined) problem = columnProblem(table, record as object, columns);
  }
  if (problem === undefined) return { record };
  const row: Record<string, string | number> = {};
  STORED[table].identity.forEach((c, i) => {
    const v = ids[i];
    row[c] = typeof v === "number" ? v : v === null || v === undefined ? "NULL" : String(v);
  });
  return { row, problem };
}

function columnProblem(table: TableName, record: object, stored: SqlParam[]): string | undefined {
  const expected = columnValues(table, record);
  const i = expected.findIndex((v, n) => v !== stored[n]);
  if (i < 0) return undefined;
  const show = (v: SqlParam | undefined) =>
    v === null || v === undefined ? "NULL" : typeof v === "string" ? JSON.stringify(v) : String(v);
  return `column ${WRITE_COLUMNS[table][i]} holds ${show(stored[i])}, but its record says ${show(expected[i])}`;
}

function describeRow(row: Record<string, string | number>): string {
  return Object.entries(row)
    .map(([c, v]) => `${c}=${typeof v === "string" ? JSON.stringify(v) : v}`)
    .join(" ");
}
