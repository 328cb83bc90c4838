import assert from "node:assert/strict";
import { PgQueue } from "../../../src/pgstore";
import { createDatabase, pgCluster } from "../../helpers/pgCluster";

/**
 * A worker's queue outlives a Postgres crash: the call that meets the lost connection is refused
 * as STORE_UNAVAILABLE (one line, naming the store), and the next one runs on a new connection,
 * so `casefile worker` goes on claiming once the server is back (src/runner/worker.ts).
 */
describe("PgQueue across a Postgres restart", function () {
  this.timeout(60_000);

  it("refuses the call that meets the lost connection, then claims on a new one; the case is still there", () => {
    const url = createDatabase("reconnect");
    const queue = new PgQueue(url);
    try {
      queue.enqueue("c-1", "/w.ts", { n: 1 });
      pgCluster().restart("immediate");
      assert.throws(
        () => queue.claim("w", 10_000),
        (e: Error & { code?: string }) => e.code === "STORE_UNAVAILABLE" && /cannot claim a case/.test(e.message),
        "the first call after the crash is refused",
      );
      const claim = queue.claim("w", 10_000);
      assert.equal(claim?.caseId, "c-1", "the next call claims on a new connection");
      assert.deepEqual(claim?.input, { n: 1 });
    } finally {
      queue.close();
    }
  });
});
