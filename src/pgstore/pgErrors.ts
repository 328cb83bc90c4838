import { CasefileError } from "../engine/errors";
import { PgError } from "./syncClient";

/** The Postgres store's refusals as typed errors, and its URL as a message may show it. */

export { redact } from "./url";

export function wrap<T>(where: string, what: string, fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    if (e instanceof PgError) throw unavailable(where, what, e);
    throw e;
  }
}

export function unavailable(where: string, what: string, e: PgError): CasefileError {
  const f = e.failure;
  return new CasefileError("STORE_UNAVAILABLE", `${where}: cannot ${what}: ${f.message}${f.code ? ` (${f.code})` : ""}`, {
    pgCode: f.code ?? null,
  });
}

/** Row-level security refused a row of another tenant than the connection's. */
export function foreignTenant(where: string, tenant: string, e: PgError): CasefileError {
  return new CasefileError("FOREIGN_TENANT", `${where}: this connection may not write for tenant "${tenant}": ${e.failure.message}`, {
    tenant,
  });
}

export function unknownCase(where: string, caseId: string, tenant: string): CasefileError {
  return new CasefileError("UNKNOWN_CASE", `${where}: no case "${caseId}"${tenant ? ` for tenant "${tenant}"` : ""} in this store`, {
    caseId,
    tenant,
  });
}

/** A commit's transaction refused by Postgres, as the store reports it (PostgresStore.commit). */
export function commitRefused(e: unknown, where: string, tenant: string, caseId: string, fence: { generation: number } | undefined): Error {
  if (!(e instanceof PgError)) return e as Error;
  const f = e.failure;
  if (f.code === "CASEFILE_EXPECT" && f.label === "lease") {
    return new CasefileError(
      "LEASE_LOST",
      `${where} case ${caseId}: commit refused: this worker's lease (generation ${fence?.generation}) was taken over`,
      { caseId, generation: fence?.generation },
    );
  }
  if (f.code === "CASEFILE_EXPECT") return unknownCase(where, caseId, tenant);
  if (f.code === "42501") return foreignTenant(where, tenant, e);
  if (f.code === "23505") {
    return new CasefileError(
      "INVALID_BATCH",
      `commit refused: a row already exists (${f.detail ?? f.message}); append-only rows cannot be replaced`,
    );
  }
  // Class 22 (data exception): a value Postgres cannot hold (an integer column out of range...).
  if (f.code?.startsWith("22")) return new CasefileError("INVALID_BATCH", `commit refused by Postgres: ${f.message}`);
  return unavailable(where, "commit", e);
}
