/**
 * The Postgres store: many cases, of several tenants, in one database, each opened as a CaseStore
 * the engine writes through exactly as it does a case file. Only the runner and the CLI import this.
 */
export { PostgresStore } from "./postgresStore";
export { isPostgresUrl, redact } from "./url";
export type { PgOpenOptions, PgAgentCallSummary } from "./postgresStore";
export { PgQueue, storeAway } from "./queue";
export { SyncPgClient } from "./syncClient";
export type { Claim, QueueStatus } from "./queue";
export { PG_MIGRATIONS, PG_SCHEMA, PG_SCHEMA_VERSION, migratePg, tenantRoleSql } from "./schema";
export type { PgMigration } from "./schema";
