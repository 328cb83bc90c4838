import { CasefileError } from "../engine/errors";
import type { Json } from "../engine/records";
import type { CaseRow } from "../protocol/cases";
import { redact } from "./pgErrors";
import { PG_SCHEMA, connectionTenant, migratePg } from "./schema";
import { PgError, SyncPgClient } from "./syncClient";

/**
 * The case queue of a Postgres store: `casefile enqueue` puts a case on it, `casefile worker`
 * claims runnable cases and holds each with a lease. The state lives on the case row (schema.ts):
 *
 * - `queue_status`: `queued` (runnable), `running` (claimed: runnable again once its lease
 *   expires, which is how a killed worker's case reaches another worker), or where the case
 *   stopped (`completed`, `waiting`, `failed`, `needs_replanning`, `stopped`).
 * - `lease_generation`: increased by every claim. The worker's PostgresStore is fenced with the
 *   generation it claimed (PgOpenOptions.fence): once another worker claims the case, every commit
 *   of the old one is refused in its own transaction (LEASE_LOST).
 *
 * Claims use `FOR UPDATE SKIP LOCKED`, so many workers claim at once without waiting on each
 * other or taking the same case.
 */

const S = PG_SCHEMA;

export interface Claim {
  tenant: string;
  caseId: string;
  workflow: string | null;
  input: Json;
  generation: number;
}

export type QueueStatus = "queued" | "running" | "completed" | "waiting" | "failed" | "needs_replanning" | "stopped";

export class PgQueue {
  private client: SyncPgClient;
  readonly where: string;

  /** The tenant this queue's connection acts for. */
  readonly tenant: string;

  /** `tenant`: default the tenant of the role the URL logs in as, else the empty tenant (see PostgresStore). */
  constructor(
    private readonly url: string,
    tenant?: string,
  ) {
    this.where = redact(url);
    this.client = new SyncPgClient(url, { where: this.where });
    try {
      this.wrap("migrate the schema", () => migratePg(this.client, this.where));
      this.tenant = tenant ?? this.wrap("read the connection's tenant", () => connectionTenant(this.client)) ?? "";
    } catch (e) {
      this.client.close();
      throw e;
    }
  }

  /**
   * Puts a new case on the queue with its workflow file and input. A case the store already holds
   * is refused (USAGE), whatever its state: enqueueing never touches an existing case.
   */
  enqueue(caseId: string, workflow: string, input: Json): void {
    const rows = this.wrap("enqueue", () =>
      this.client.query(
        `INSERT INTO ${S}.cases (tenant, id, created_at, queue_status, workflow, input) VALUES ($1, $2, $3, 'queued', $4, $5::json) ` +
          "ON CONFLICT (tenant, id) DO NOTHING RETURNING id",
        [this.tenant, caseId, new Date().toISOString(), workflow, JSON.stringify(input)],
      ),
    );
    if (rows.length === 0) throw new CasefileError("USAGE", `${this.where}: case "${caseId}" already exists; enqueue makes a new case`);
  }

  /**
   * Claims the oldest runnable case (queued, or running under an expired lease) for `owner`,
   * with a lease of `leaseMs`, or returns undefined when there is none.
   */
  claim(owner: string, leaseMs: number): Claim | undefined {
    const rows = this.wrap("claim a case", () =>
      this.client.query<{ tenant: string; id: string; workflow: string | null; input: Json; lease_generation: string }>(
        `WITH c AS (SELECT tenant, id FROM ${S}.cases WHERE tenant = $1 AND (queue_status = 'queued' OR ` +
          "(queue_status = 'running' AND lease_expires_at < clock_timestamp())) ORDER BY pos LIMIT 1 FOR UPDATE SKIP LOCKED) " +
          `UPDATE ${S}.cases k SET queue_status = 'running', lease_owner = $2, lease_generation = k.lease_generation + 1, ` +
          "lease_expires_at = clock_timestamp() + $3 * interval '1 millisecond' FROM c WHERE k.tenant = c.tenant AND k.id = c.id " +
          "RETURNING k.tenant, k.id, k.workflow, k.input, k.lease_generation",
        [this.tenant, owner, leaseMs],
      ),
    );
    const r = rows[0];
    if (!r) return undefined;
    return { tenant: r.tenant, caseId: r.id, workflow: r.workflow, input: r.input ?? null, generation: Number(r.lease_generation) };
  }

  /** Extends the lease; false when it was taken over (the generation moved on). */
  renew(claim: Claim, leaseMs: number): boolean {
    const rows = this.wrap("renew a lease", () =>
      this.client.query(
        `UPDATE ${S}.cases SET lease_expires_at = clock_timestamp() + $4 * interval '1 millisecond' ` +
          "WHERE tenant = $1 AND id = $2 AND lease_generation = $3 AND queue_status = 'running' RETURNING id",
        [claim.tenant, claim.caseId, claim.generation, leaseMs],
      ),
    );
    return rows.length === 1;
  }

  /** Ends the claim, recording where the case stopped; false when the lease had been taken over. */
  release(claim: Claim, status: Exclude<QueueStatus, "running">): boolean {
    const rows = this.wrap("release a case", () =>
      this.client.query(
        `UPDATE ${S}.cases SET queue_status = $4, lease_owner = NULL, lease_expires_at = NULL ` +
          "WHERE tenant = $1 AND id = $2 AND lease_generation = $3 RETURNING id",
        [claim.tenant, claim.caseId, claim.generation, status],
      ),
    );
    return rows.length === 1;
  }

  /**
   * Puts a case that stopped (waiting for a person, stopped) back on the queue: what
   * `casefile respond --store` does once the answer is recorded. False when the case is not there
   * or a worker holds it.
   */
  requeue(caseId: string): boolean {
    const rows = this.wrap("requeue a case", () =>
      this.client.query(
        `UPDATE ${S}.cases SET queue_status = 'queued' WHERE tenant = $1 AND id = $2 AND queue_status <> 'running' AND workflow IS NOT NULL RETURNING id`,
        [this.tenant, caseId],
      ),
    );
    return rows.length === 1;
  }

  /** Whether the case came through `enqueue` (a worker runs it), rather than `casefile run --store`. */
  managed(caseId: string): boolean {
    const rows = this.wrap("read the case", () =>
      this.client.query(`SELECT 1 FROM ${S}.cases WHERE tenant = $1 AND id = $2 AND workflow IS NOT NULL`, [this.tenant, caseId]),
    );
    return rows.length === 1;
  }

  /** Every case's queue state, for tests and `casefile worker` logs. */
  list(): { caseId: string; status: string; generation: number; owner: string | null }[] {
    return this.wrap("list cases", () =>
      this.client.query<{ id: string; queue_status: string; lease_generation: string; lease_owner: string | null }>(
        `SELECT id, queue_status, lease_generation, lease_owner FROM ${S}.cases WHERE tenant = $1 ORDER BY pos`,
        [this.tenant],
      ),
    ).map((r) => ({ caseId: r.id, status: r.queue_status, generation: Number(r.lease_generation), owner: r.lease_owner }));
  }

  /**
   * One page of the tenant's cases in creation order, `limit` at most, after the cursor `after`
   * (the `next` of the page before), optionally only those where `status` stands (see
   * protocol/cases.ts): keyset paging on the cases' `pos`, so a page costs the same at the
   * millionth case as at the first. What `casefile cases` prints.
   */
  page(opts: { status?: string; after?: string; limit: number }): { cases: CaseRow[]; next: string | null } {
    const after = opts.after === undefined ? 0 : Number(opts.after);
    if (!Number.isSafeInteger(after) || after < 0) {
      throw new CasefileError("USAGE", `--after takes the cursor a page printed (a whole number), not "${opts.after}"`);
    }
    const status =
      "CASE WHEN k.queue_status <> 'none' THEN k.queue_status ELSE coalesce((SELECT r.status FROM " +
      `${S}.runs r WHERE r.tenant = k.tenant AND r.case_id = k.id AND r.status <> 'superseded' ORDER BY r.pos DESC LIMIT 1), 'new') END`;
    const rows = this.wrap("list cases", () =>
      this.client.query<{ id: string; status: string; created_at: string; queued: boolean; pos: string }>(
        `SELECT * FROM (SELECT k.id, ${status} AS status, k.created_at, k.workflow IS NOT NULL AS queued, k.pos ` +
          `FROM ${S}.cases k WHERE k.tenant = $1 AND k.pos > $2) c WHERE ($3::text IS NULL OR c.status = $3) ORDER BY c.pos LIMIT $4`,
        [this.tenant, after, opts.status ?? null, opts.limit + 1],
      ),
    );
    const more = rows.length > opts.limit;
    const shown = rows.slice(0, opts.limit);
    return {
      cases: shown.map((r) => ({ caseId: r.id, status: r.status, createdAt: r.created_at, queued: r.queued })),
      next: more ? String(shown[shown.length - 1]!.pos) : null,
    };
  }

  close(): void {
    this.client.close();
  }

  /**
   * Every statement's refusal as STORE_UNAVAILABLE. A lost connection (Postgres restarted, the
   * network cut) is replaced by a new one for the next call: each queue call is one statement,
   * so nothing is half done, and a worker goes on claiming once the server is back.
   */
  private wrap<T>(what: string, fn: () => T): T {
    try {
      return fn();
    } catch (e) {
      if (e instanceof PgError) {
        if (connectionLost(e)) {
          this.client.close();
          this.client = new SyncPgClient(this.url, { where: this.where });
        }
        throw new CasefileError("STORE_UNAVAILABLE", `${this.where}: cannot ${what}: ${e.failure.message}`, {
          pgCode: e.failure.code ?? null,
        });
      }
      throw e;
    }
  }
}

/**
 * A failure of the connection rather than of the statement: no code at all (node-postgres's
 * "Connection terminated unexpectedly"), a Node errno (ECONNRESET, ECONNREFUSED, EPIPE: no
 * SQLSTATE class begins with E), SQLSTATE class 08 (connection exception) or 57P (the server
 * shutting down, crashed or starting up).
 */
export function connectionLost(e: PgError): boolean {
  return lostCode(e.failure.code);
}

/**
 * A STORE_UNAVAILABLE refusal that came from the connection (the server restarting, starting up,
 * unreachable), not from the statement or the credentials: worth waiting out.
 */
export function storeAway(e: unknown): boolean {
  if (!(e instanceof CasefileError) || e.code !== "STORE_UNAVAILABLE") return false;
  const code = e.details.pgCode;
  return lostCode(typeof code === "string" ? code : undefined);
}

function lostCode(code: string | undefined): boolean {
  return code === undefined || /^E[A-Z]+$/.test(code) || code.startsWith("08") || code.startsWith("57P");
}
