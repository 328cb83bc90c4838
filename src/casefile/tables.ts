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
import type { CheckpointSummary } from "../engine/store";
import { TABLES, missingValue } from "./batch";
import type { PreparedBatch, TableName } from "./batch";
import { WRITE_SQL, writeParams } from "./schema";
import type { SqlParam } from "./schema";

/**
 * The case-file tables over an in-memory sql.js database: applying a validated batch and every
 * read of the CaseStore port. SqlJsStore extends this with the file, journal and lock. Reads parse
 * the `data` column with JSON.parse and nothing else, so loading a record never runs code.
 * Lists come back in rowid order, i.e. in the order rows were first committed.
 */
export class SqlTables {
  private readonly statements = new Map<string, Statement>();

  protected constructor(
    protected db: Database,
    /** Named in error messages. */
    protected readonly file: string,
  ) {}

  /** Writes every row and the journal sequence number in one transaction: all of it or none. */
  protected applyBatch(batch: PreparedBatch, journalSeq: number): void {
    this.db.run("BEGIN");
    try {
      this.writeRows(batch, journalSeq);
      this.db.run("COMMIT");
    } catch (e) {
      this.rollback();
      throw e;
    }
  }

  /** The rows of applyBatch without the transaction, for a caller that holds one open. */
  protected writeRows(batch: PreparedBatch, journalSeq: number): void {
    for (const table of TABLES) {
      const rows = batch[table] as object[];
      if (rows.length === 0) continue;
      const stmt = this.statement(WRITE_SQL[table]);
      for (const row of rows) stmt.run(writeParams(table, row));
    }
    this.statement("UPDATE meta SET journal_seq = ? WHERE id = 1").run([journalSeq]);
  }

  /** Rolls back the open transaction, if SQLite has not already ended it after an error. */
  protected rollback(): void {
    try {
      this.db.run("ROLLBACK");
    } catch {
      // "no transaction is active": nothing to undo.
    }
  }

  /** Whether an append-only table already holds this identity (the identities batch.ts checks). */
  protected rowExists(table: TableName, key: string): boolean {
    switch (table) {
      case "checkpoints":
        return this.has("SELECT 1 FROM checkpoints WHERE id = ?", [key]);
      case "values": {
        const [run, k, version] = JSON.parse(key) as [string, string, number];
        return this.has("SELECT 1 FROM state_values WHERE run = ? AND key = ? AND version = ?", [run, k, version]);
      }
      case "steps":
        return this.has("SELECT 1 FROM steps WHERE id = ?", [key]);
      case "agentCalls":
        return this.has("SELECT 1 FROM agent_calls WHERE id = ?", [key]);
      case "verdicts":
        return this.has("SELECT 1 FROM verdicts WHERE id = ?", [key]);
      default:
        return false;
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
    return this.one<RunRecord>("SELECT data FROM runs WHERE id = ?", [id]);
  }

  listRuns(): RunRecord[] {
    return this.data<RunRecord>("SELECT data FROM runs ORDER BY rowid", []);
  }

  getCheckpoint(id: string): Checkpoint | undefined {
    return this.one<Checkpoint>("SELECT data FROM checkpoints WHERE id = ?", [id]);
  }

  listCheckpoints(runId: string): CheckpointSummary[] {
    // Summaries come from the indexed columns, so listing never parses a checkpoint's JSON.
    const rows = this.query(
      "SELECT id, run_id, superstep, created_at, parent_id, pending, waiting FROM checkpoints WHERE run_id = ? ORDER BY superstep, rowid",
      [runId],
    );
    return rows.map(([id, run, superstep, createdAt, parentId, pending, waiting]) => {
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

  latestCheckpoint(runId: string): Checkpoint | undefined {
    return this.one<Checkpoint>("SELECT data FROM checkpoints WHERE run_id = ? ORDER BY superstep DESC, rowid DESC LIMIT 1", [runId]);
  }

  readValues(refs: Record<string, KeyRef>): Record<string, Json> {
    const out: Record<string, Json> = {};
    for (const [key, ref] of Object.entries(refs)) {
      const row = this.one<StateValueRow>("SELECT data FROM state_values WHERE run = ? AND key = ? AND version = ?", [
        ref.run,
        key,
        ref.version,
      ]);
      if (!row) throw missingValue(this.file, key, ref);
      out[key] = row.value;
    }
    return out;
  }

  listSteps(runId: string, superstep?: number): StepRecord[] {
    return superstep === undefined
      ? this.data<StepRecord>("SELECT data FROM steps WHERE run_id = ? ORDER BY rowid", [runId])
      : this.data<StepRecord>("SELECT data FROM steps WHERE run_id = ? AND superstep = ? ORDER BY rowid", [runId, superstep]);
  }

  listFacts(runId: string): FactRecord[] {
    return this.data<FactRecord>("SELECT data FROM facts WHERE run_id = ? ORDER BY id", [runId]);
  }

  listAgentCalls(runId?: string): AgentCallRecord[] {
    return runId === undefined
      ? this.data<AgentCallRecord>("SELECT data FROM agent_calls ORDER BY rowid", [])
      : this.data<AgentCallRecord>("SELECT data FROM agent_calls WHERE run_id = ? ORDER BY rowid", [runId]);
  }

  getAgentCall(id: string): AgentCallRecord | undefined {
    return this.one<AgentCallRecord>("SELECT data FROM agent_calls WHERE id = ?", [id]);
  }

  listVerdicts(runId?: string): VerdictRecord[] {
    return runId === undefined
      ? this.data<VerdictRecord>("SELECT data FROM verdicts ORDER BY rowid", [])
      : this.data<VerdictRecord>("SELECT data FROM verdicts WHERE run_id = ? ORDER BY rowid", [runId]);
  }

  listIntents(filter: { runId?: string; status?: IntentRecord["status"] } = {}): IntentRecord[] {
    return this.data<IntentRecord>(
      "SELECT data FROM intents WHERE (?1 IS NULL OR run_id = ?1) AND (?2 IS NULL OR status = ?2) ORDER BY rowid",
      [filter.runId ?? null, filter.status ?? null],
    );
  }

  getIntent(id: string): IntentRecord | undefined {
    return this.one<IntentRecord>("SELECT data FROM intents WHERE id = ?", [id]);
  }

  listRules(includeDeleted = false): RuleRecord[] {
    return includeDeleted
      ? this.data<RuleRecord>("SELECT data FROM rules ORDER BY rowid", [])
      : this.data<RuleRecord>("SELECT data FROM rules WHERE deleted = 0 ORDER BY rowid", []);
  }

  listEvents(filter: { runId?: string; afterSeq?: number } = {}): EventRecord[] {
    return this.data<EventRecord>("SELECT data FROM events WHERE (?1 IS NULL OR run_id = ?1) AND seq > ?2 ORDER BY seq", [
      filter.runId ?? null,
      filter.afterSeq ?? 0,
    ]);
  }

  private statement(sql: string): Statement {
    let stmt = this.statements.get(sql);
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

  private has(sql: string, params: SqlParam[]): boolean {
    return this.query(sql, params).length > 0;
  }

  private data<T>(sql: string, params: SqlParam[]): T[] {
    return this.query(sql, params).map((r) => JSON.parse(r[0] as string) as T);
  }

  private one<T>(sql: string, params: SqlParam[]): T | undefined {
    return this.data<T>(sql, params)[0];
  }
}
