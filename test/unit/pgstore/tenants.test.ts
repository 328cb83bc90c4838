import assert from "node:assert/strict";
import { PgQueue, PostgresStore, tenantRoleSql } from "../../../src/pgstore";
import { createDatabase, pgCluster } from "../../helpers/pgCluster";
import { run } from "../casefile/builders";

/**
 * Tenant isolation is Postgres's: each connection logs in as a tenant's role, and row-level
 * security decides what it sees, whatever tenant the caller names. Alice's role acts for tenant A,
 * Bob's for tenant B; the administrator (the cluster's superuser, the tables' owner) set them up.
 */
describe("PostgresStore tenants: row-level security by the connection's role", () => {
  let admin: string;
  let asAlice: string;
  let asBob: string;
  let db: string;
  const refused = (code: string, pattern: RegExp) => (e: Error & { code?: string }) => e.code === code && pattern.test(e.message);

  before(async () => {
    admin = createDatabase("tenants");
    db = new URL(admin).pathname.slice(1);
    // The owner lays out the schema, then names the tenant roles.
    (await PostgresStore.open(admin, { caseId: "setup", create: true })).close();
    for (const sql of [...tenantRoleSql("alice", "A"), ...tenantRoleSql("bob", "B")]) pgCluster().psql(sql, db);
    asAlice = pgCluster().urlFor(db, "alice");
    asBob = pgCluster().urlFor(db, "bob");
    const b = await PostgresStore.open(asBob, { caseId: "b-1", create: true });
    b.commit({ runs: [run("rb")] });
    b.close();
  });

  it("a tenant's connection acts for its tenant without being told, and sees only its own cases", async () => {
    const a = await PostgresStore.open(asAlice, { caseId: "a-1", create: true });
    try {
      assert.equal(a.meta().tenant, "A");
      a.commit({ runs: [run("ra")] });
      assert.deepEqual(
        a.listRuns().map((r) => r.id),
        ["ra"],
      );
    } finally {
      a.close();
    }
    // Not only a WHERE clause: as alice, a plain query over the whole table sees tenant A's rows alone.
    const psqlAs = (user: string, sql: string): string => pgCluster().psql(sql, db, user).trim().split("\n").filter(Boolean).join(",");
    assert.equal(psqlAs("alice", "SELECT string_agg(DISTINCT tenant, ',') FROM casefile.runs"), "A");
    assert.equal(psqlAs("bob", "SELECT string_agg(DISTINCT tenant, ',') FROM casefile.runs"), "B");
  });

  it("tenant A cannot read tenant B's case, even naming tenant B", async () => {
    await assert.rejects(PostgresStore.open(asAlice, { caseId: "b-1", readOnly: true }), refused("UNKNOWN_CASE", /no case "b-1"/));
    await assert.rejects(
      PostgresStore.open(asAlice, { caseId: "b-1", tenant: "B", readOnly: true }),
      refused("UNKNOWN_CASE", /no case "b-1" for tenant "B"/),
    );
  });

  it("tenant A cannot write a case for tenant B: Postgres refuses the row", async () => {
    await assert.rejects(
      PostgresStore.open(asAlice, { caseId: "b-2", tenant: "B", create: true }),
      refused("FOREIGN_TENANT", /may not write for tenant "B": new row violates row-level security policy/),
    );
  });

  it("tenant A cannot claim tenant B's queued case; tenant B's worker can", () => {
    const bobQueue = new PgQueue(asBob);
    const aliceQueue = new PgQueue(asAlice);
    const aliceNamingB = new PgQueue(asAlice, "B");
    try {
      bobQueue.enqueue("b-queued", "/w.ts", { n: 1 });
      assert.equal(aliceQueue.claim("alice-worker", 1000), undefined);
      assert.equal(aliceNamingB.claim("alice-worker", 1000), undefined, "naming tenant B does not help");
      assert.deepEqual(
        aliceQueue.list().map((c) => c.caseId),
        ["a-1"],
      );
      const claim = bobQueue.claim("bob-worker", 1000);
      assert.equal(claim?.caseId, "b-queued");
      assert.deepEqual(claim?.input, { n: 1 });
    } finally {
      bobQueue.close();
      aliceQueue.close();
      aliceNamingB.close();
    }
  });

  it("tenant A cannot answer (or otherwise commit to) tenant B's case", async () => {
    const asB = await PostgresStore.open(asAlice, { caseId: "b-1", tenant: "B", readOnly: true }).catch((e: Error) => e);
    assert.ok(
      asB instanceof Error && (asB as Error & { code?: string }).code === "UNKNOWN_CASE",
      `alice naming tenant B is refused as an unknown case: ${String(asB)}`,
    );
    const bob = await PostgresStore.open(asBob, { caseId: "b-1" });
    try {
      assert.equal(bob.getRun("rb")!.status, "running", "tenant B's case is as B left it");
    } finally {
      bob.close();
    }
  });
});
