import { CasefileError } from "../engine/errors";
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
import type { CaseFileMeta, CaseStore, CheckpointSummary, CommitBatch } from "../engine/store";
import { TABLES, missingValue, prepareBatch, valueKey } from "../engine/storeBatch";
import type { TableName } from "../engine/storeBatch";
import { commitRefused, foreignTenant, redact, unavailable, unknownCase, wrap } from "./pgErrors";
import { STORED, UPSERT_TABLES, existingKeysQuery, identityOf, lastOfEach, readRecords, selected, writeStatement } from "./rows";
import { PG_SCHEMA, PG_SCHEMA_VERSION, connectionTenant, migratePg, newer, storedSchemaVersion } from "./schema";
import { PgError, SyncPgClient } from "./syncClient";
import type { PgParam, Statement } from "./syncClient";

export interface PgOpenOptions {
  /** The case this store reads and writes: what one case file holds. */
  caseId: string;
  /**
   * The tenant to act for. Default: the tenant of the role the URL logs in as (schema.ts,
   * tenant_roles), else none (the empty tenant). Row-level security decides what a tenant role
   * sees whatever is asked for here: naming another tenant finds nothing and creates nothing.
   */
  tenant?: string;
  /** Create the case when the store does not hold it (writers only). */
  create?: boolean;
  /** Never write: the session is read-only in Postgres too, and commit throws READ_ONLY. */
  readOnly?: boolean;
  /**
   * Fencing: every commit checks in its own transaction that this worker's lease on the case
   * still has this generation, and is refused with LEASE_LOST once another worker took it over.
   */
  fence?: { generation: number };
  /**
   * An open connection to the store to use, left open by close(): a worker opens one store per
   * case it claims, and a new connection each time (a thread, node-postgres, a Postgres backend
   * warming its caches) cost several times the case's own work. Writers only.
   */
  connection?: SyncPgClient;
}

/** An agent call without its request, response or proposal (the shape of the engine's AgentCallSummary). */
export interface PgAgentCallSummary {
  id: string;
  runId: string;
  superstep: number;
  executor: string;
  hash: string;
  tokens: number | null;
}

const S = PG_SCHEMA;

/** Connections whose store schema this process has brought up to date: a store opened on one again checks only the version, as it finds the case. */
const migrated = new WeakSet<SyncPgClient>();

/**
 * A CaseStore over one case of a Postgres store (src/pgstore/schema.ts): what a case file holds,
 * as rows keyed by (tenant, case). Opened by the CLI and by workers; many processes may open the
 * same store, each its own case (a worker's lease decides who writes a case, and `fence` refuses
 * a commit from one that lost it). Reads parse `data` as JSON (node-postgres parses json with JSON.parse) and
 * check each record's shape, as the case file does.
 *
 * `data` is `json`, not `jsonb`: jsonb reorders an object's members, and the engine rebuilds an
 * agent step's context from state read back, so a resumed or replayed step would hash differently
 * from the recorded one (replay refused with WORKFLOW_MISMATCH). `json` keeps the text as written;
 * it is still only JSON, parsed with JSON.parse, never code.
 */
export class PostgresStore implements CaseStore {
  private closed = false;
  private summaries: { rows: readonly PgAgentCallSummary[]; lastPos: number } = { rows: Object.freeze([]), lastPos: 0 };

  private constructor(
    private readonly client: SyncPgClient,
    /** The URL without its password, for messages. */
    readonly where: string,
    readonly readOnly: boolean,
    readonly tenant: string,
    readonly caseId: string,
    private readonly createdAt: string,
    private readonly fence: { generation: number } | undefined,
    /** Whether close() ends the connection (false for PgOpenOptions.connection's). */
    private readonly owned: boolean,
  ) {}

  /**
   * Connects, brings the schema up to date (writers; a reader refuses a store it would have to
   * migrate), and finds (or with `create`, makes) the case. Refusals: STORE_UNAVAILABLE,
   * NEWER_SCHEMA, UNKNOWN_CASE.
   */
  static async open(url: string, opts: PgOpenOptions): Promise<PostgresStore> {
    const where = redact(url);
    if (typeof opts.caseId !== "string" || opts.caseId === "") {
      throw new CasefileError("USAGE", `${where}: a case id is needed to open a case of a Postgres store (--case ID)`);
    }
    const readOnly = opts.readOnly === true;
    if (opts.connection !== undefined && readOnly) {
      throw new CasefileError("USAGE", `${where}: a read-only store opens a connection of its own (read-only in Postgres too)`);
    }
    const client = opts.connection ?? new SyncPgClient(url, { where, settings: readOnly ? { default_transaction_read_only: "on" } : {} });
    try {
      if (readOnly) {
        const v = wrap(where, "read the schema version", () => storedSchemaVersion(client));
        if (v === 0) throw unknownCase(where, opts.caseId, opts.tenant ?? "");
        if (v > PG_SCHEMA_VERSION) throw newer(where, v, PG_SCHEMA_VERSION);
        if (v < PG_SCHEMA_VERSION) {
          throw new CasefileError(
            "NEWER_SCHEMA",
            `${where}: the store has schema v${v}; open it once as a writer to migrate it to v${PG_SCHEMA_VERSION}`,
          );
        }
      } else if (!migrated.has(client)) {
        wrap(where, "migrate the schema", () => migratePg(client, where));
        migrated.add(client);
      }
      const tenant = opts.tenant ?? wrap(where, "read the connection's tenant", () => connectionTenant(client)) ?? "";
      // The case, with the store's schema version: on a connection whose store was brought up to
      // date before (a worker's, one open per case), whether a newer Casefile migrated it since
      // costs no round trip of its own.
      const find = (): { v: number | null; created_at: string | null } =>
        wrap(where, "read the case", () =>
          client.query<{ v: number | null; created_at: string | null }>(
            `SELECT (SELECT schema_version FROM ${S}.schema_meta WHERE id = 1) AS v, k.created_at ` +
              `FROM (SELECT 1) one LEFT JOIN ${S}.cases k ON k.tenant = $1 AND k.id = $2`,
            [tenant, opts.caseId],
          ),
        )[0]!;
      let row = find();
      if (!readOnly && row.v !== PG_SCHEMA_VERSION) {
        // Migrated by another Casefile since: a newer one is refused (NEWER_SCHEMA).
        wrap(where, "migrate the schema", () => migratePg(client, where));
        row = find();
      }
      if (row.created_at === null && opts.create === true && !readOnly) {
        try {
          client.query(`INSERT INTO ${S}.cases (tenant, id, created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, [
            tenant,
            opts.caseId,
            new Date().toISOString(),
          ]);
        } catch (e) {
          if (e instanceof PgError && e.failure.code === "42501") throw foreignTenant(where, tenant, e);
          throw e instanceof PgError ? unavailable(where, "create the case", e) : e;
        }
        row = find();
      }
      if (row.created_at === null) throw unknownCase(where, opts.caseId, tenant);
      return new PostgresStore(client, where, readOnly, tenant, opts.caseId, row.created_at, opts.fence, opts.connection === undefined);
    } catch (e) {
      if (opts.connection === undefined) client.close();
      throw e;
    }
  }

  meta(): CaseFileMeta {
    const m: CaseFileMeta = { schemaVersion: PG_SCHEMA_VERSION, createdAt: this.createdAt };
    if (this.tenant !== "") m.tenant = this.tenant;
    return m;
  }

  /**
   * One statement, so one transaction (rows.ts, writeStatement): lock the case row (when fenced,
   * only while the lease has this worker's generation), then insert into every table the batch
   * touches. Called by the engine at the end of every superstep, and by the effect steps around
   * their act. Validation (prepareBatch, shared with every store) runs first; a row the case
   * already holds is refused by its key in the statement, which then applies nothing.
   */
  commit(batch: CommitBatch): void {
    if (this.readOnly) throw new CasefileError("READ_ONLY", `${this.where} case ${this.caseId} is open read-only`);
    // Rows the case already holds are found by Postgres's own keys, in the transaction: looking
    // them up first would cost every commit a round trip for what a correct caller never sends.
    const b = prepareBatch(batch, { exists: () => false, nextEventSeq: 1 });
    if (TABLES.every((t) => b[t].length === 0)) return;
    const rows: Partial<Record<TableName, unknown[]>> = {};
    for (const table of TABLES) rows[table] = UPSERT_TABLES.has(table) ? lastOfEach(b[table] as { id: string }[]) : (b[table] as unknown[]);
    const write: Statement = {
      ...writeStatement(this.tenant, this.caseId, rows, this.fence),
      expectRows: 1,
      label: this.fence === undefined ? "case" : "lease",
    };
    for (let attempt = 1; ; attempt++) {
      try {
        this.live().statement(write);
        return;
      } catch (e) {
        // Another writer of this case committed while this statement waited for the case's lock:
        // the events' numbers were taken from before it (rows.ts, events). Nothing was applied; again.
        if (e instanceof PgError && e.failure.constraint === "events_pkey" && attempt < 5) continue;
        if (e instanceof PgError && e.failure.code === "23505") {
          // Rolled back: name the row as every store does ("steps row s1 already exists").
          const existing = this.existingKeys(batch);
          prepareBatch(batch, { exists: (t, k) => existing.has(`${t}\0${k}`), nextEventSeq: 1 });
        }
        throw commitRefused(e, this.where, this.tenant, this.caseId, this.fence);
      }
    }
  }

  /** The append-only identities the batch names that the case already holds, as `table\0key`. */
  private existingKeys(batch: CommitBatch): Set<string> {
    const found = new Set<string>();
    const q = existingKeysQuery(batch);
    if (q === undefined) return found;
    let rows: { t: TableName; a: string; b: string | null; c: number | null }[];
    try {
      rows = this.client.query(q.sql, [this.tenant, this.caseId, ...q.params]);
    } catch (e) {
      // An id Postgres cannot hold as text ("\u0000"): the batch is refused before any write.
      if (e instanceof PgError && e.failure.code?.startsWith("22")) {
        throw new CasefileError("INVALID_BATCH", `commit refused by Postgres: ${e.failure.message}`);
      }
      throw e instanceof PgError ? unavailable(this.where, "read", e) : e;
    }
    for (const r of rows) found.add(`${r.t}\0${r.t === "values" ? valueKey(r.a, r.b!, r.c!) : r.a}`);
    return found;
  }

  getRun(id: string): RunRecord | undefined {
    return this.one<RunRecord>("runs", "AND id = $3", [id]);
  }

  listRuns(): RunRecord[] {
    return this.records<RunRecord>("runs", "ORDER BY pos", []);
  }

  getCheckpoint(id: string): Checkpoint | undefined {
    return this.one<Checkpoint>("checkpoints", "AND id = $3", [id]);
  }

  /** From the indexed columns: listing never parses a checkpoint's JSON. */
  listCheckpoints(runId: string, superstep?: number): CheckpointSummary[] {
    const rows = this.read<{
      id: string;
      run_id: string;
      superstep: number;
      created_at: string;
      parent_id: string | null;
      pending: number;
      waiting: number;
    }>(
      `SELECT id, run_id, superstep, created_at, parent_id, pending, waiting FROM ${S}.checkpoints ` +
        "WHERE tenant = $1 AND case_id = $2 AND run_id = $3 AND ($4::integer IS NULL OR superstep = $4) ORDER BY superstep, pos",
      [this.tenant, this.caseId, runId, superstep ?? null],
    );
    return rows.map((r) => {
      const s: CheckpointSummary = {
        id: r.id,
        runId: r.run_id,
        superstep: r.superstep,
        createdAt: r.created_at,
        pending: r.pending,
        waiting: r.waiting,
      };
      if (r.parent_id !== null) s.parentId = r.parent_id;
      return s;
    });
  }

  latestCheckpoint(runId: string, before?: number): Checkpoint | undefined {
    return this.one<Checkpoint>(
      "checkpoints",
      "AND run_id = $3 AND ($4::integer IS NULL OR superstep < $4) ORDER BY superstep DESC, pos DESC LIMIT 1",
      [runId, before ?? null],
    );
  }

  readValues(refs: Record<string, KeyRef>): Record<string, Json> {
    const entries = Object.entries(refs);
    const out: Record<string, Json> = {};
    if (entries.length === 0) return out;
    const rows = this.records<StateValueRow>(
      "values",
      "AND (run, key, version) IN (SELECT e->>0, e->>1, (e->>2)::integer FROM jsonb_array_elements($3::jsonb) e)",
      [JSON.stringify(entries.map(([key, ref]) => [ref.run, key, ref.version]))],
    );
    const byKey = new Map(rows.map((r) => [valueKey(r.run, r.key, r.version), r.value]));
    for (const [key, ref] of entries) {
      const k = valueKey(ref.run, key, ref.version);
      if (!byKey.has(k)) throw missingValue(`${this.where} case ${this.caseId}`, key, ref);
      out[key] = byKey.get(k)!;
    }
    return out;
  }

  listSteps(runId: string, superstep?: number): StepRecord[] {
    return this.records<StepRecord>("steps", "AND run_id = $3 AND ($4::integer IS NULL OR superstep = $4) ORDER BY pos", [
      runId,
      superstep ?? null,
    ]);
  }

  listFacts(runId: string): FactRecord[] {
    return this.records<FactRecord>("facts", "AND run_id = $3 ORDER BY pos", [runId]);
  }

  listAgentCalls(runId?: string, superstep?: number): AgentCallRecord[] {
    return this.records<AgentCallRecord>(
      "agentCalls",
      "AND ($3::text IS NULL OR run_id = $3) AND ($4::integer IS NULL OR superstep = $4) ORDER BY pos",
      [runId ?? null, superstep ?? null],
    );
  }

  /**
   * Every agent call summarised, in commit order, from columns and two json paths. The same
   * (frozen) array comes back until a call is added; then only the new rows are read.
   */
  agentCallSummaries(): readonly PgAgentCallSummary[] {
    const rows = this.read<{
      pos: string;
      id: string;
      run_id: string;
      superstep: number;
      hash: string;
      executor: string;
      tokens: number | null;
    }>(
      `SELECT pos, id, run_id, superstep, hash, executor, tokens FROM ${S}.agent_calls ` +
        "WHERE tenant = $1 AND case_id = $2 AND pos > $3 ORDER BY pos",
      [this.tenant, this.caseId, this.summaries.lastPos],
    );
    if (rows.length === 0) return this.summaries.rows;
    const added = rows.map((r) =>
      Object.freeze({
        id: r.id,
        runId: r.run_id,
        superstep: r.superstep,
        executor: r.executor,
        hash: r.hash,
        tokens: r.tokens,
      }),
    );
    this.summaries = { rows: Object.freeze([...this.summaries.rows, ...added]), lastPos: Number(rows[rows.length - 1]!.pos) };
    return this.summaries.rows;
  }

  getAgentCall(id: string): AgentCallRecord | undefined {
    return this.one<AgentCallRecord>("agentCalls", "AND id = $3", [id]);
  }

  listVerdicts(runId?: string, filter: { superstep?: number; agentCallId?: string } = {}): VerdictRecord[] {
    return this.records<VerdictRecord>(
      "verdicts",
      "AND ($3::text IS NULL OR run_id = $3) AND ($4::integer IS NULL OR superstep = $4) AND ($5::text IS NULL OR agent_call_id = $5) ORDER BY pos",
      [runId ?? null, filter.superstep ?? null, filter.agentCallId ?? null],
    );
  }

  listIntents(filter: { runId?: string; status?: IntentRecord["status"] } = {}): IntentRecord[] {
    return this.records<IntentRecord>(
      "intents",
      "AND ($3::text IS NULL OR run_id = $3) AND ($4::text IS NULL OR status = $4) ORDER BY pos",
      [filter.runId ?? null, filter.status ?? null],
    );
  }

  getIntent(id: string): IntentRecord | undefined {
    return this.one<IntentRecord>("intents", "AND id = $3", [id]);
  }

  listRules(includeDeleted = false): RuleRecord[] {
    return this.records<RuleRecord>("rules", "AND ($3 OR NOT deleted) ORDER BY pos", [includeDeleted]);
  }

  listEvents(filter: { runId?: string; superstep?: number; afterSeq?: number } = {}): EventRecord[] {
    // A row's seq is its last event's (eventRows): the rows that end after afterSeq, then their events after it.
    const after = filter.afterSeq ?? 0;
    return this.records<EventRecord>(
      "events",
      "AND ($3::text IS NULL OR run_id = $3) AND seq > $4 AND ($5::integer IS NULL OR superstep = $5) ORDER BY seq",
      [filter.runId ?? null, after, filter.superstep ?? null],
    ).filter((e) => e.seq! > after);
  }

  /**
   * Every record of one table of the case, in commit order (events by seq): what `casefile pull`
   * copies into a case file. Damaged records are refused (CORRUPT_CASE_FILE), as every read does.
   */
  allRecords(table: TableName): unknown[] {
    return this.records<unknown>(table, table === "events" ? "ORDER BY seq" : "ORDER BY pos", []);
  }

  /** Rows of the case whose data has not its record's shape, without throwing (what inspect lists). */
  damagedRecords(): { table: string; row: Record<string, string | number>; problem: string }[] {
    const out: { table: string; row: Record<string, string | number>; problem: string }[] = [];
    for (const table of TABLES) {
      const { name, identity } = STORED[table];
      const rows = this.read<Record<string, unknown>>(
        `SELECT data, ${selected(table)} FROM ${S}.${name} WHERE tenant = $1 AND case_id = $2 ORDER BY pos`,
        [this.tenant, this.caseId],
      );
      for (const r of rows) {
        for (const { problem, seq } of readRecords(table, r)) {
          if (problem !== undefined) out.push({ table: name, row: identityOf(identity, r, seq), problem });
        }
      }
    }
    return out;
  }

  /** Ends the connection (unless it was lent: PgOpenOptions.connection). Called by whoever opened the store, when the command or the case is done. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.owned) this.client.close();
  }

  private read<T>(sql: string, params: PgParam[]): T[] {
    return wrap(this.where, "read", () => this.live().query<T>(sql, params));
  }

  /** The connection, unless this store was closed (a lent connection lives on after it). */
  private live(): SyncPgClient {
    if (this.closed) throw new CasefileError("STORE_UNAVAILABLE", `${this.where} case ${this.caseId}: the store was closed`);
    return this.client;
  }

  /**
   * Every read of a stored record: `SELECT data, <identity> FROM <table> WHERE tenant = $1 AND
   * case_id = $2 <rest>`, each record checked against its table's shape; a damaged one is refused
   * with CORRUPT_CASE_FILE naming the store, case, table and row.
   */
  private records<T>(table: TableName, rest: string, params: PgParam[]): T[] {
    const { name, identity } = STORED[table];
    const rows = this.read<Record<string, unknown>>(
      `SELECT data, ${selected(table)} FROM ${S}.${name} WHERE tenant = $1 AND case_id = $2 ${rest}`,
      [this.tenant, this.caseId, ...params],
    );
    return rows.flatMap((r) =>
      readRecords(table, r).map(({ record, problem, seq }) => {
        if (problem !== undefined) {
          const row = identityOf(identity, r, seq);
          throw new CasefileError(
            "CORRUPT_CASE_FILE",
            `${this.where} case ${this.caseId}: ${name} row ${JSON.stringify(row)}: ${problem}`,
            {
              table: name,
              row,
              problem,
            },
          );
        }
        return record as T;
      }),
    );
  }

  private one<T>(table: TableName, rest: string, params: PgParam[]): T | undefined {
    return this.records<T>(table, rest, params)[0];
  }
}
