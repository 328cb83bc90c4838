import { CasefileError } from "../engine/errors";
import type { PgError, Statement, SyncPgClient } from "./syncClient";

/**
 * The Postgres layout of a store: many cases (each what one case file holds), of several tenants,
 * in the schema `casefile`. Every table carries (tenant, case_id) first; each record is whole in a
 * `json` column `data` (not jsonb, which reorders members: see PostgresStore) beside the columns
 * rows are looked up by, as in the case file, so reading a row is parsing JSON and nothing else. `pos` (an identity column) is commit order: the order every
 * list returns, kept by an upsert (ON CONFLICT DO UPDATE leaves it alone).
 *
 * `schema_meta` is a single row whose `app` and `schema_version` columns are frozen for every
 * future version, because an older Casefile reads them to refuse a newer store.
 */

export const PG_SCHEMA = "casefile";
export const PG_APP_ID = "casefile";

const S = PG_SCHEMA;
const CASE_COLS = "tenant text NOT NULL, case_id text NOT NULL, pos bigint GENERATED ALWAYS AS IDENTITY";

const V1: string[] = [
  `CREATE TABLE IF NOT EXISTS ${S}.cases (
     tenant text NOT NULL, id text NOT NULL, created_at text NOT NULL,
     pos bigint GENERATED ALWAYS AS IDENTITY,
     -- The queue (casefile enqueue / worker): what to run, whether it is runnable, who holds it.
     queue_status text NOT NULL DEFAULT 'none', workflow text, input json,
     lease_owner text, lease_generation bigint NOT NULL DEFAULT 0, lease_expires_at timestamptz,
     PRIMARY KEY (tenant, id))`,
  `CREATE INDEX IF NOT EXISTS cases_runnable ON ${S}.cases (queue_status, lease_expires_at)`,
  `CREATE TABLE IF NOT EXISTS ${S}.runs (${CASE_COLS}, id text NOT NULL, parent_run_id text, status text NOT NULL,
     created_at text NOT NULL, data json NOT NULL, PRIMARY KEY (tenant, case_id, id))`,
  `CREATE TABLE IF NOT EXISTS ${S}.checkpoints (${CASE_COLS}, id text NOT NULL, run_id text NOT NULL, superstep integer NOT NULL,
     parent_id text, created_at text NOT NULL, pending integer NOT NULL, waiting integer NOT NULL, data json NOT NULL,
     PRIMARY KEY (tenant, case_id, id))`,
  `CREATE INDEX IF NOT EXISTS checkpoints_by_run ON ${S}.checkpoints (tenant, case_id, run_id, superstep)`,
  `CREATE TABLE IF NOT EXISTS ${S}.state_values (${CASE_COLS}, run text NOT NULL, key text NOT NULL, version integer NOT NULL,
     data json NOT NULL, PRIMARY KEY (tenant, case_id, run, key, version))`,
  `CREATE TABLE IF NOT EXISTS ${S}.steps (${CASE_COLS}, id text NOT NULL, run_id text NOT NULL, superstep integer NOT NULL,
     data json NOT NULL, PRIMARY KEY (tenant, case_id, id))`,
  `CREATE INDEX IF NOT EXISTS steps_by_run ON ${S}.steps (tenant, case_id, run_id, superstep)`,
  `CREATE TABLE IF NOT EXISTS ${S}.facts (${CASE_COLS}, run_id text NOT NULL, key text NOT NULL, version integer NOT NULL,
     superstep integer NOT NULL, data json NOT NULL, PRIMARY KEY (tenant, case_id, pos))`,
  `CREATE INDEX IF NOT EXISTS facts_by_run ON ${S}.facts (tenant, case_id, run_id, key, version)`,
  `CREATE TABLE IF NOT EXISTS ${S}.agent_calls (${CASE_COLS}, id text NOT NULL, run_id text NOT NULL, superstep integer NOT NULL,
     hash text NOT NULL, executor text NOT NULL, tokens integer, data json NOT NULL, PRIMARY KEY (tenant, case_id, id))`,
  `CREATE INDEX IF NOT EXISTS agent_calls_by_run ON ${S}.agent_calls (tenant, case_id, run_id, superstep)`,
  `CREATE TABLE IF NOT EXISTS ${S}.verdicts (${CASE_COLS}, id text NOT NULL, run_id text NOT NULL, superstep integer NOT NULL,
     agent_call_id text, data json NOT NULL, PRIMARY KEY (tenant, case_id, id))`,
  `CREATE INDEX IF NOT EXISTS verdicts_by_run ON ${S}.verdicts (tenant, case_id, run_id, superstep)`,
  `CREATE TABLE IF NOT EXISTS ${S}.intents (${CASE_COLS}, id text NOT NULL, run_id text NOT NULL, status text NOT NULL,
     data json NOT NULL, PRIMARY KEY (tenant, case_id, id))`,
  `CREATE INDEX IF NOT EXISTS intents_by_status ON ${S}.intents (tenant, case_id, status)`,
  `CREATE TABLE IF NOT EXISTS ${S}.rules (${CASE_COLS}, id text NOT NULL, deleted boolean NOT NULL, data json NOT NULL,
     PRIMARY KEY (tenant, case_id, id))`,
  `CREATE TABLE IF NOT EXISTS ${S}.events (${CASE_COLS}, seq integer NOT NULL, run_id text NOT NULL, superstep integer NOT NULL,
     type text NOT NULL, data json NOT NULL, PRIMARY KEY (tenant, case_id, seq))`,
];

export interface PgMigration {
  /** The schema version this migration produces; the list is ordered by it. */
  to: number;
  description: string;
  statements: string[];
}

/** The tables that hold a tenant's cases: each is under row-level security (TENANT_ISOLATION). */
export const TENANT_TABLES = [
  "cases",
  "runs",
  "checkpoints",
  "state_values",
  "steps",
  "facts",
  "agent_calls",
  "verdicts",
  "intents",
  "rules",
  "events",
];

/**
 * Tenant isolation enforced by Postgres: row-level security on every table, by the tenant of the
 * role the connection logs in as (`tenant_roles`, read through a SECURITY DEFINER function so that
 * a tenant role cannot read the mapping). Tenant roles are members of `casefile_tenant`, which
 * may read and write the tables but owns none, so the policies always apply to them; the owner
 * (the administrator who migrates) is not bound by them. A query's own `WHERE tenant = ...` is
 * then only an index hint: a connection of tenant A naming tenant B sees nothing.
 */
const TENANT_ISOLATION: string[] = [
  `CREATE TABLE IF NOT EXISTS ${S}.tenant_roles (role name PRIMARY KEY, tenant text NOT NULL)`,
  `CREATE OR REPLACE FUNCTION ${S}.current_tenant() RETURNS text LANGUAGE sql STABLE SECURITY DEFINER
     SET search_path = pg_catalog AS $$ SELECT tenant FROM ${S}.tenant_roles WHERE role = session_user $$`,
  `DO $$ BEGIN
     IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'casefile_tenant') THEN CREATE ROLE casefile_tenant NOLOGIN; END IF;
   END $$`,
  `GRANT USAGE ON SCHEMA ${S} TO casefile_tenant`,
  `GRANT SELECT ON ${S}.schema_meta TO casefile_tenant`,
  `GRANT EXECUTE ON FUNCTION ${S}.current_tenant() TO casefile_tenant`,
  ...TENANT_TABLES.flatMap(isolated),
];

/** A table of tenants' rows: tenant roles may read and write it, and only their tenant's rows. */
function isolated(t: string): string[] {
  return [
    `GRANT SELECT, INSERT, UPDATE ON ${S}.${t} TO casefile_tenant`,
    `ALTER TABLE ${S}.${t} ENABLE ROW LEVEL SECURITY`,
    `DROP POLICY IF EXISTS tenant_isolation ON ${S}.${t}`,
    `CREATE POLICY tenant_isolation ON ${S}.${t} USING (tenant = ${S}.current_tenant()) WITH CHECK (tenant = ${S}.current_tenant())`,
  ];
}

/**
 * v2: how `data` holds a record of the tables written every superstep changes (packing.ts), which
 * a v1 Casefile could not read: it refuses a v2 store. A value many of a case's rows repeat (a
 * checkpoint's workflow) is held once in `shared_values`, by the hash of its JSON text, and a row
 * names it in a column (checkpoints.workflow_ref). The table is internal to the store: no record
 * of it is pulled or listed.
 */
const V2: string[] = [
  `CREATE TABLE IF NOT EXISTS ${S}.shared_values (tenant text NOT NULL, case_id text NOT NULL, hash text NOT NULL,
     data json NOT NULL, PRIMARY KEY (tenant, case_id, hash))`,
  `ALTER TABLE ${S}.checkpoints ADD COLUMN IF NOT EXISTS workflow_ref text`,
  // A row of events holds n consecutive events (NULL: a v1 row, one event); seq is the last one's.
  `ALTER TABLE ${S}.events ADD COLUMN IF NOT EXISTS n integer`,
  ...isolated("shared_values"),
];

/** Tenant isolation is part of v1: no store without it was ever made. */
export const PG_MIGRATIONS: readonly PgMigration[] = [
  { to: 1, description: "initial schema, with tenant isolation by row-level security", statements: [...V1, ...TENANT_ISOLATION] },
  {
    to: 2,
    description: "checkpoints, steps, state values and events packed; a checkpoint's workflow held once; a superstep's events one row",
    statements: V2,
  },
];

/**
 * The statements an administrator runs (as the store's owner) to let `role` log in as `tenant`:
 * every connection of that role then acts for that tenant, whatever it asks for.
 */
export function tenantRoleSql(role: string, tenant: string): string[] {
  const ident = `"${role.replace(/"/g, '""')}"`;
  const lit = (v: string): string => `'${v.replace(/'/g, "''")}'`;
  return [
    `DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = ${lit(role)}) THEN CREATE ROLE ${ident} LOGIN; END IF; END $$`,
    `GRANT casefile_tenant TO ${ident}`,
    `INSERT INTO ${S}.tenant_roles (role, tenant) VALUES (${lit(role)}, ${lit(tenant)}) ON CONFLICT (role) DO UPDATE SET tenant = excluded.tenant`,
  ];
}

/** The tenant this connection acts for by its role, or undefined for a role that is no tenant's (the owner, an administrator). */
export function connectionTenant(client: SyncPgClient): string | undefined {
  const [row] = client.query<{ t: string | null }>(`SELECT ${S}.current_tenant() AS t`);
  return row?.t ?? undefined;
}

export const PG_SCHEMA_VERSION = PG_MIGRATIONS[PG_MIGRATIONS.length - 1]!.to;

/**
 * Brings the store's schema to PG_SCHEMA_VERSION, or refuses a newer one (NEWER_SCHEMA). Many
 * workers may start at once: each migration step takes a transaction-scoped advisory lock and
 * re-reads the version under it, so exactly one of them applies it. Returns the versions applied.
 */
export function migratePg(client: SyncPgClient, where: string, migrations: readonly PgMigration[] = PG_MIGRATIONS): number[] {
  const current = (): number => storedSchemaVersion(client);
  const newest = migrations[migrations.length - 1]!.to;
  let from = current();
  if (from > newest) throw newer(where, from, newest);
  const applied: number[] = [];
  for (const m of migrations) {
    if (m.to <= from) continue;
    const statements: Statement[] = [
      { sql: "SELECT pg_advisory_xact_lock(hashtext('casefile.migrate'))" },
      { sql: `CREATE SCHEMA IF NOT EXISTS ${S}` },
      {
        sql: `CREATE TABLE IF NOT EXISTS ${S}.schema_meta (id integer PRIMARY KEY CHECK (id = 1), app text NOT NULL, schema_version integer NOT NULL)`,
      },
      { sql: `INSERT INTO ${S}.schema_meta (id, app, schema_version) VALUES (1, $1, 0) ON CONFLICT (id) DO NOTHING`, params: [PG_APP_ID] },
      // Another process may have applied this step while we waited for the lock: then it is a no-op.
      ...m.statements.map((sql) => ({ sql })),
      {
        sql: `UPDATE ${S}.schema_meta SET schema_version = $1 WHERE id = 1 AND schema_version < $1`,
        params: [m.to],
      },
    ];
    try {
      client.transaction(statements);
    } catch (e) {
      const f = (e as PgError).failure;
      throw new CasefileError(
        "MIGRATION_FAILED",
        `${where}: migrating the store to schema v${m.to} (${m.description}) failed: ${f?.message ?? e}`,
        {
          to: m.to,
        },
      );
    }
    applied.push(m.to);
  }
  from = current();
  if (from > newest) throw newer(where, from, newest);
  return applied;
}

/** The store's schema version, 0 when it has none yet (an empty database). */
export function storedSchemaVersion(client: SyncPgClient): number {
  const [has] = client.query<{ t: string | null }>(`SELECT to_regclass('${S}.schema_meta')::text AS t`);
  if (!has?.t) return 0;
  const [row] = client.query<{ v: number }>(`SELECT schema_version AS v FROM ${S}.schema_meta WHERE id = 1`);
  return row?.v ?? 0;
}

export function newer(where: string, found: number, newest: number): CasefileError {
  return new CasefileError(
    "NEWER_SCHEMA",
    `${where}: the store has schema v${found}, this Casefile reads up to v${newest}: update Casefile to open it`,
    { found, newest },
  );
}
