import assert from "node:assert/strict";
import { SyncPgClient } from "../../../src/pgstore/syncClient";
import { createDatabase } from "../../helpers/pgCluster";

/**
 * The synchronous connection (syncClient.ts) after a request outlived its timeout: the caller got
 * STORE_UNAVAILABLE, but Postgres still answers it later. A later request must get its own
 * answer, not a late one, and must not run inside the late request's transaction.
 */
describe("SyncPgClient after a request timed out", function () {
  this.timeout(30_000);

  it("answers a later request with its own rows, once the late one is over, outside its transaction", () => {
    const client = new SyncPgClient(createDatabase("sync"), { where: "test store", timeoutMs: 300 });
    try {
      client.query("CREATE TABLE t (n integer)");
      assert.throws(
        () => client.transaction([{ sql: "INSERT INTO t VALUES (1)" }, { sql: "SELECT pg_sleep(1.5)" }, { sql: "SELECT 1/0" }]),
        (e: Error & { code?: string }) => e.code === "STORE_UNAVAILABLE" && /test store: no answer from Postgres in 300 ms/.test(e.message),
        "the slow transaction is refused at its timeout",
      );
      // Each try waits behind the late transaction (which fails and rolls back) until its own 300 ms run out.
      let answer: { answer: number; rows: string }[] | undefined;
      for (let i = 0; i < 20 && !answer; i++) {
        try {
          answer = client.query<{ answer: number; rows: string }>(`SELECT ${i} AS answer, (SELECT count(*) FROM t)::text AS rows`);
        } catch (e) {
          if ((e as { code?: string }).code !== "STORE_UNAVAILABLE") throw e;
        }
      }
      assert.ok(answer, "a try got through once the late transaction was over");
      assert.equal(answer.length, 1, "one row: its own query's, not pg_sleep's");
      assert.equal(answer[0]!.rows, "0", "the late transaction's insert was rolled back, not committed with a later request");
      assert.ok(answer[0]!.answer > 0, `the answer of the try that got through (${answer[0]!.answer}), not of an earlier try`);
      assert.deepEqual(client.query("SELECT 'next' AS n"), [{ n: "next" }], "and the next request gets its own answer at once");
    } finally {
      client.close();
    }
  });
});
