import assert from "node:assert/strict";
import { PgQueue, PostgresStore, tenantRoleSql } from "../../../src/pgstore";
import { CasesPageSchema } from "../../../src/protocol/cases";
import { createDatabase, pgCluster } from "../../helpers/pgCluster";
import { run } from "../casefile/builders";

/**
 * A store's cases a page at a time (what `casefile cases` prints and the editor's remote listing
 * reads): where each stands, one status on its own, every case once across the pages, and only
 * the connection's tenant's.
 */
describe("PgQueue.page: a store's cases, paged, by status", () => {
  let url: string;
  let db: string;

  before(async () => {
    url = createDatabase("cases");
    db = new URL(url).pathname.slice(1);
    const queue = new PgQueue(url);
    try {
      for (let i = 0; i < 7; i++) queue.enqueue(`q-${i}`, "/w.ts", { i });
      // Two of them ended where a worker left them.
      const a = queue.claim("w", 60_000)!;
      queue.release(a, "completed");
      const b = queue.claim("w", 60_000)!;
      queue.release(b, "failed");
    } finally {
      queue.close();
    }
    // Cases run with `run --store` (no queue): their latest run says where they stand.
    const s = await PostgresStore.open(url, { caseId: "direct-1", create: true });
    s.commit({ runs: [run("r1", { status: "completed" }), run("r2", { status: "waiting", parentRunId: "r1" })] });
    s.close();
    (await PostgresStore.open(url, { caseId: "direct-2", create: true })).close();
  });

  it("walks every case once, in the order they were made, a page at a time, each with where it stands", () => {
    const queue = new PgQueue(url);
    try {
      const seen: [string, string][] = [];
      let after: string | undefined;
      let pages = 0;
      for (;;) {
        const page = queue.page({ limit: 4, ...(after ? { after } : {}) });
        pages++;
        assert.ok(page.cases.length <= 4, `a page holds at most its limit: ${page.cases.length}`);
        seen.push(...page.cases.map((c): [string, string] => [c.caseId, c.status]));
        if (!page.next) break;
        after = page.next;
      }
      assert.equal(pages, 3, "9 cases in pages of 4");
      assert.deepEqual(seen, [
        ["q-0", "completed"],
        ["q-1", "failed"],
        ["q-2", "queued"],
        ["q-3", "queued"],
        ["q-4", "queued"],
        ["q-5", "queued"],
        ["q-6", "queued"],
        ["direct-1", "waiting"],
        ["direct-2", "new"],
      ]);
    } finally {
      queue.close();
    }
  });

  it("keeps one status, paging within it; the page is what protocol/cases.ts says", () => {
    const queue = new PgQueue(url);
    try {
      const first = queue.page({ status: "queued", limit: 3 });
      assert.deepEqual(
        first.cases.map((c) => c.caseId),
        ["q-2", "q-3", "q-4"],
      );
      const second = queue.page({ status: "queued", limit: 3, after: first.next! });
      assert.deepEqual(
        second.cases.map((c) => c.caseId),
        ["q-5", "q-6"],
      );
      assert.equal(second.next, null, "the last page has no cursor");
      assert.deepEqual(
        queue.page({ status: "waiting", limit: 10 }).cases.map((c) => [c.caseId, c.status, c.queued]),
        [["direct-1", "waiting", false]],
      );
      const parsed = CasesPageSchema.safeParse({ v: 1, tenant: queue.tenant, status: "queued", ...first });
      assert.ok(parsed.success, `the page parses: ${JSON.stringify(parsed.error?.issues)}`);
    } finally {
      queue.close();
    }
  });

  it("refuses a cursor that is not one, naming it", () => {
    const queue = new PgQueue(url);
    try {
      assert.throws(
        () => queue.page({ limit: 5, after: "page-2" }),
        (e: Error & { code?: string }) => e.code === "USAGE" && /--after .*"page-2"/.test(e.message),
      );
    } finally {
      queue.close();
    }
  });

  it("lists only the connection's tenant's cases", () => {
    for (const sql of tenantRoleSql("carol", "C")) pgCluster().psql(sql, db);
    const asCarol = new PgQueue(pgCluster().urlFor(db, "carol"));
    try {
      assert.deepEqual(asCarol.page({ limit: 50 }), { cases: [], next: null }, "tenant C sees none of the empty tenant's cases");
      asCarol.enqueue("c-1", "/w.ts", null);
      assert.deepEqual(
        asCarol.page({ limit: 50 }).cases.map((c) => [c.caseId, c.status, c.queued]),
        [["c-1", "queued", true]],
      );
    } finally {
      asCarol.close();
    }
  });
});
