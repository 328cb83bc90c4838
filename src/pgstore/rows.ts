import type {
  AgentCallRecord,
  Checkpoint,
  EventRecord,
  FactRecord,
  IntentRecord,
  Json,
  RuleRecord,
  RunRecord,
  StateValueRow,
  StepRecord,
  VerdictRecord,
} from "../engine/records";
import type { CommitBatch } from "../engine/store";
import { storedRowProblem } from "../engine/storeBatch";
import type { TableName } from "../engine/storeBatch";
import { pack, packRow, packedSelect, unpack, unpackEvents } from "./packing";
import { PG_SCHEMA } from "./schema";
import type { PgParam } from "./syncClient";

/**
 * How the records of a case map to the rows of the Postgres store (schema.ts): each table's SQL
 * name and identity columns, the one INSERT per table a commit runs, and the lookup columns taken
 * from a record. Used by PostgresStore's commit and reads.
 */

const S = PG_SCHEMA;

/** Each table's SQL name and the columns that identify a row to a person. */
export const STORED: Record<TableName, { name: string; identity: string[] }> = {
  runs: { name: "runs", identity: ["id"] },
  checkpoints: { name: "checkpoints", identity: ["run_id", "superstep", "id"] },
  values: { name: "state_values", identity: ["run", "key", "version"] },
  steps: { name: "steps", identity: ["run_id", "superstep", "id"] },
  facts: { name: "facts", identity: ["run_id", "key", "version", "superstep", "pos"] },
  agentCalls: { name: "agent_calls", identity: ["run_id", "superstep", "id"] },
  verdicts: { name: "verdicts", identity: ["run_id", "superstep", "id"] },
  intents: { name: "intents", identity: ["run_id", "id"] },
  rules: { name: "rules", identity: ["id"] },
  events: { name: "events", identity: ["run_id", "superstep", "seq"] },
};

/**
 * $C: the rows' lookup columns (a JSON array of small objects, see `columnsOf`); $T: the records'
 * JSON texts (packed: packing.ts). Joined with `lock` (writeStatement), which holds the case row
 * when the commit may write and nothing when it may not: then every INSERT inserts nothing.
 */
const ROWS =
  "json_array_elements($C::json) WITH ORDINALITY AS t(d, n) JOIN unnest($T::text[]) WITH ORDINALITY AS u(data, m) ON m = n CROSS JOIN lock";
const INT = (f: string): string => `(d->>'${f}')::integer`;

/**
 * One INSERT per table, all rows of the batch in one parameter ($3, a JSON array): the columns are
 * taken from the record in SQL, so a commit is a handful of statements whatever its size. Rows go
 * in in batch order (ORDER BY n), which is the order `pos` numbers them in.
 */
const WRITE_SQL: Record<TableName, string> = {
  runs:
    `INSERT INTO ${S}.runs (tenant, case_id, id, parent_run_id, status, created_at, data) ` +
    `SELECT $1, $2, d->>'id', d->>'parentRunId', d->>'status', d->>'createdAt', data::json FROM ${ROWS} ORDER BY n ` +
    "ON CONFLICT (tenant, case_id, id) DO UPDATE SET parent_run_id = excluded.parent_run_id, status = excluded.status, " +
    "created_at = excluded.created_at, data = excluded.data",
  checkpoints:
    `INSERT INTO ${S}.checkpoints (tenant, case_id, id, run_id, superstep, parent_id, created_at, pending, waiting, workflow_ref, data) ` +
    `SELECT $1, $2, d->>'id', d->>'runId', ${INT("superstep")}, d->>'parentId', d->>'createdAt', ` +
    `${INT("pending")}, ${INT("waiting")}, d->>'workflow_ref', data::json FROM ${ROWS} ORDER BY n`,
  values:
    `INSERT INTO ${S}.state_values (tenant, case_id, run, key, version, data) ` +
    `SELECT $1, $2, d->>'run', d->>'key', ${INT("version")}, data::json FROM ${ROWS} ORDER BY n`,
  steps:
    `INSERT INTO ${S}.steps (tenant, case_id, id, run_id, superstep, data) ` +
    `SELECT $1, $2, d->>'id', d->>'runId', ${INT("superstep")}, data::json FROM ${ROWS} ORDER BY n`,
  facts:
    `INSERT INTO ${S}.facts (tenant, case_id, run_id, key, version, superstep, data) ` +
    `SELECT $1, $2, d->>'runId', d->>'key', ${INT("version")}, ${INT("superstep")}, data::json FROM ${ROWS} ORDER BY n`,
  agentCalls:
    `INSERT INTO ${S}.agent_calls (tenant, case_id, id, run_id, superstep, hash, executor, tokens, data) ` +
    `SELECT $1, $2, d->>'id', d->>'runId', ${INT("superstep")}, d->>'hash', d->>'executor', ${INT("tokens")}, data::json FROM ${ROWS} ORDER BY n`,
  verdicts:
    `INSERT INTO ${S}.verdicts (tenant, case_id, id, run_id, superstep, agent_call_id, data) ` +
    `SELECT $1, $2, d->>'id', d->>'runId', ${INT("superstep")}, d->>'agentCallId', data::json FROM ${ROWS} ORDER BY n`,
  intents:
    `INSERT INTO ${S}.intents (tenant, case_id, id, run_id, status, data) ` +
    `SELECT $1, $2, d->>'id', d->>'runId', d->>'status', data::json FROM ${ROWS} ORDER BY n ` +
    "ON CONFLICT (tenant, case_id, id) DO UPDATE SET run_id = excluded.run_id, status = excluded.status, data = excluded.data",
  rules:
    `INSERT INTO ${S}.rules (tenant, case_id, id, deleted, data) ` +
    `SELECT $1, $2, d->>'id', (d->>'deleted')::boolean, data::json FROM ${ROWS} ORDER BY n ` +
    "ON CONFLICT (tenant, case_id, id) DO UPDATE SET deleted = excluded.deleted, data = excluded.data",
  // The store numbers events: one more than the case's last seq, in the same statement. A second
  // writer of the case waits for the case row's lock, but reads the events as they were when its
  // statement began, so it takes the same numbers and is refused by the key (events_pkey): the
  // store runs it again (PostgresStore.commit), now after the first. A row holds the consecutive
  // events of one run and superstep (eventRows): `seq` is the last one's, `n` how many.
  events:
    `INSERT INTO ${S}.events (tenant, case_id, seq, n, run_id, superstep, type, data) ` +
    `SELECT $1, $2, base.m + (d->>'last')::integer, (d->>'count')::integer, d->>'runId', ${INT("superstep")}, d->>'type', data::json ` +
    `FROM ${ROWS} CROSS JOIN (SELECT coalesce(max(seq), 0) AS m FROM ${S}.events WHERE tenant = $1 AND case_id = $2) base ORDER BY n`,
};

/**
 * A superstep's commit as one statement, so one round trip and one transaction of its own
 * (Postgres runs a statement alone atomically: no BEGIN, no COMMIT, each a round trip that cost
 * more than the statement). First `lock`: the case row FOR UPDATE, when fenced only if its lease
 * generation is still `fence`'s (a takeover committed meanwhile is seen: Postgres checks the
 * locked row's newest version). Then each table's INSERT, a data-modifying CTE joined with it.
 * The statement returns the locked row, so no row means nothing was written: the case is gone or
 * the lease was taken over. `rows` holds each table's rows (upserted tables already one per id).
 * $1 and $2 are the tenant and case, $3 the fence's generation; each table takes two more.
 */
export function writeStatement(
  tenant: string,
  caseId: string,
  rows: Partial<Record<TableName, unknown[]>>,
  fence: { generation: number } | undefined,
): { sql: string; params: PgParam[] } {
  const params: PgParam[] = [tenant, caseId, fence?.generation ?? null];
  const parts: string[] = [
    `lock AS (SELECT 1 FROM ${S}.cases WHERE tenant = $1 AND id = $2 AND ($3::bigint IS NULL OR lease_generation = $3) FOR UPDATE)`,
  ];
  const shared = new Map<string, string>();
  for (const [table, list] of Object.entries(rows) as [TableName, unknown[]][]) {
    if (list.length === 0) continue;
    const entries =
      table === "events"
        ? eventRows(list as EventRecord[])
        : list.map((r) => {
            const p = packRow(table, r);
            for (const { hash, json } of p.shared) shared.set(hash, json);
            return { columns: { ...columnsOf(table, r), ...p.refs }, data: p.data };
          });
    params.push(
      JSON.stringify(entries.map((e) => e.columns)),
      entries.map((e) => e.data),
    );
    const sql = WRITE_SQL[table].replace("$C", `$${params.length - 1}`).replace("$T", `$${params.length}`);
    parts.push(`w_${table} AS (${sql})`);
  }
  if (shared.size > 0) {
    params.push([...shared.keys()], [...shared.values()]);
    parts.push(
      `w_shared AS (INSERT INTO ${S}.shared_values (tenant, case_id, hash, data) SELECT $1, $2, h, v::json ` +
        `FROM unnest($${params.length - 1}::text[], $${params.length}::text[]) AS s(h, v) CROSS JOIN lock ON CONFLICT DO NOTHING)`,
    );
  }
  return { sql: `WITH ${parts.join(", ")} SELECT 1 FROM lock`, params };
}

/**
 * A commit's events as rows of `events`: each run of consecutive events of one run and superstep
 * (a superstep's step and checkpoint events) is one row, its data the array of the events packed
 * (packing.ts), so the row's columns and overhead are paid once. `last` is the place of the row's
 * last event among the commit's, which the INSERT adds to the case's last seq.
 */
export function eventRows(events: EventRecord[]): { columns: Record<string, Json | undefined>; data: string }[] {
  const rows: { columns: Record<string, Json | undefined>; data: unknown[] }[] = [];
  events.forEach((e, i) => {
    const row = rows[rows.length - 1];
    if (row && row.columns.runId === e.runId && row.columns.superstep === e.superstep) {
      row.data.push(pack("events", e));
      row.columns.last = i + 1;
      row.columns.count = (row.columns.count as number) + 1;
    } else {
      rows.push({ columns: { ...columnsOf("events", e), last: i + 1, count: 1 }, data: [pack("events", e)] });
    }
  });
  return rows.map((r) => ({ columns: r.columns, data: JSON.stringify(r.data) }));
}

export const UPSERT_TABLES: ReadonlySet<TableName> = new Set(["runs", "intents", "rules"]);

/**
 * The columns a row is looked up by, as a small JSON object the INSERT reads with ->>. The record
 * itself goes as its own JSON text: Postgres's json operators unescape a whole object to read one
 * member, and refuse "\u0000" anywhere in it, which a state value may hold.
 */
export function columnsOf(table: TableName, row: unknown): Record<string, Json | undefined> {
  switch (table) {
    case "runs": {
      const r = row as RunRecord;
      return { id: r.id, parentRunId: r.parentRunId, status: r.status, createdAt: r.createdAt };
    }
    case "checkpoints": {
      const c = row as Checkpoint;
      return {
        id: c.id,
        runId: c.runId,
        superstep: c.superstep,
        parentId: c.parentId,
        createdAt: c.createdAt,
        pending: c.pending.length,
        waiting: c.waiting.length,
      };
    }
    case "values": {
      const v = row as StateValueRow;
      return { run: v.run, key: v.key, version: v.version };
    }
    case "steps": {
      const s = row as StepRecord;
      return { id: s.id, runId: s.runId, superstep: s.superstep };
    }
    case "facts": {
      const f = row as FactRecord;
      return { runId: f.runId, key: f.key, version: f.version, superstep: f.superstep };
    }
    case "agentCalls": {
      const a = row as AgentCallRecord;
      return { id: a.id, runId: a.runId, superstep: a.superstep, hash: a.hash, executor: a.executor, tokens: a.tokens?.count };
    }
    case "verdicts": {
      const v = row as VerdictRecord;
      return { id: v.id, runId: v.runId, superstep: v.superstep, agentCallId: v.agentCallId };
    }
    case "intents": {
      const i = row as IntentRecord;
      return { id: i.id, runId: i.runId, status: i.status };
    }
    case "rules": {
      const r = row as RuleRecord;
      return { id: r.id, deleted: r.deleted === true };
    }
    case "events": {
      const e = row as EventRecord;
      return { runId: e.runId, superstep: e.superstep, type: e.type };
    }
    default: {
      const never: never = table;
      throw new Error(`no columns for table ${String(never)}`);
    }
  }
}

/** Upserted rows of one batch: one per id, at the place of its first appearance, with its last value. */
export function lastOfEach<T extends { id: string }>(rows: T[]): T[] {
  const byId = new Map<string, T>();
  for (const r of rows) byId.set(r.id, r);
  return [...byId.values()];
}

/**
 * One query for the append-only identities a batch names (checkpoints, steps, agent calls,
 * verdicts by id; state values by run, key and version), for prepareBatch to refuse a batch that
 * would replace one before anything is written. $1 and $2 are the tenant and case; `params` follow.
 * Returns undefined when the batch names none.
 */
export function existingKeysQuery(batch: CommitBatch): { sql: string; params: PgParam[] } | undefined {
  if (batch === null || typeof batch !== "object") return undefined;
  const ids = (t: TableName): string[] => {
    const rows = (batch as Record<string, unknown>)[t];
    if (!Array.isArray(rows)) return [];
    return rows.map((r) => (r as { id?: unknown } | null)?.id).filter((id): id is string => typeof id === "string");
  };
  const parts: string[] = [];
  const params: PgParam[] = [];
  for (const [t, name] of [
    ["checkpoints", "checkpoints"],
    ["steps", "steps"],
    ["agentCalls", "agent_calls"],
    ["verdicts", "verdicts"],
  ] as const) {
    const list = ids(t);
    if (list.length === 0) continue;
    params.push(JSON.stringify(list));
    parts.push(
      `SELECT '${t}' AS t, id AS a, NULL AS b, NULL::integer AS c FROM ${S}.${name} WHERE tenant = $1 AND case_id = $2 ` +
        `AND id IN (SELECT jsonb_array_elements_text($${params.length + 2}::jsonb))`,
    );
  }
  const values = (batch as { values?: unknown }).values;
  if (Array.isArray(values)) {
    const refs = values
      .map((v) => v as { run?: unknown; key?: unknown; version?: unknown } | null)
      .filter((v) => v && typeof v.run === "string" && typeof v.key === "string" && Number.isSafeInteger(v.version))
      .map((v) => [v!.run, v!.key, v!.version]);
    if (refs.length > 0) {
      params.push(JSON.stringify(refs));
      parts.push(
        `SELECT 'values', run, key, version FROM ${S}.state_values WHERE tenant = $1 AND case_id = $2 ` +
          `AND (run, key, version) IN (SELECT e->>0, e->>1, (e->>2)::integer FROM jsonb_array_elements($${params.length + 2}::jsonb) e)`,
      );
    }
  }
  return parts.length === 0 ? undefined : { sql: parts.join(" UNION ALL "), params };
}

/** The columns a read of `table` selects beside data: those naming a row, and those holding packed members (events: how many a row holds). */
export function selected(table: TableName): string {
  const extra = table === "events" ? ["n"] : [];
  return [...new Set([...STORED[table].identity, ...packedSelect(table, S, STORED[table].name), ...extra])].join(", ");
}

/** A row as a person finds it: its identity columns (an event: its own seq, not its row's last). */
export function identityOf(identity: string[], row: Record<string, unknown>, seq: number | undefined): Record<string, string> {
  return Object.fromEntries(identity.map((c) => [c, String(c === "seq" && seq !== undefined ? seq : row[c])]));
}

const UNFIT = "the packed record does not fit its table's members (schema v2, packing.ts)";

/**
 * The records a row holds, unpacked (packing.ts), each with what is wrong with it, if anything:
 * one, or an events row's events, each with its seq in place (the store numbered it in the
 * commit's transaction; the member is already there, so its place stays).
 */
export function readRecords(table: TableName, row: Record<string, unknown>): { record: unknown; problem?: string; seq?: number }[] {
  if (table === "events") {
    const events = unpackEvents(row);
    if (events === undefined) return [{ record: undefined, problem: UNFIT }];
    return events.map(({ record, seq }) => {
      const problem = storedRowProblem(table, record);
      if (problem !== undefined) return { record, problem, seq };
      (record as { seq?: number }).seq = seq;
      return { record, seq };
    });
  }
  const record = unpack(table, row.data, row);
  if (record === undefined) return [{ record, problem: UNFIT }];
  const problem = storedRowProblem(table, record);
  return [problem === undefined ? { record } : { record, problem }];
}
