import assert from "node:assert/strict";
import { PostgresStore } from "../../../src/pgstore";
import { createDatabase, pgCluster } from "../../helpers/pgCluster";
import { checkpoint, event, step } from "../casefile/builders";

/**
 * Schema v2 packs the rows written every superstep (src/pgstore/packing.ts): what a reader gets
 * back must be the record as written, members in their order, whichever form the row holds.
 */
describe("PostgresStore: packed rows (schema v2)", () => {
  let url: string;
  let db: string;
  const open: PostgresStore[] = [];
  const opened = async (caseId: string): Promise<PostgresStore> => {
    const s = await PostgresStore.open(url, { caseId, create: true });
    open.push(s);
    return s;
  };
  const sql = (q: string): string => pgCluster().psql(q, db).trim();

  before(() => {
    url = createDatabase("packing");
    db = url.split("/").pop()!.split("?")[0]!;
  });
  afterEach(() => open.splice(0).forEach((s) => s.close()));

  it("gives back each record with its members in the order written, its names not stored", async () => {
    const s = await opened("order");
    // Members in the order the engine makes them (a parent after the superstep).
    const cp = { v: 1 as const, id: "r1:2", runId: "r1", superstep: 2, parentId: "r1:1", ...checkpoint("r1:2", "r1", 2) };
    cp.keys = { invoice: { version: 2, run: "r1" } };
    const failed = { ...step("r1:2:load", "r1", 2), status: "failed" as const, error: { code: "E", message: "no" } };
    s.commit({ checkpoints: [cp], steps: [failed], values: [{ run: "r1", key: "invoice", version: 2, value: { b: 1, a: [2] } }] });
    s.commit({ events: [event("r1", "checkpoint", 2, { checkpoint: "r1:2" })] });
    assert.equal(JSON.stringify(s.getCheckpoint("r1:2")), JSON.stringify(cp), "the checkpoint, member for member in order");
    assert.equal(JSON.stringify(s.listSteps("r1")[0]), JSON.stringify(failed), "a failed step, its error last as written");
    assert.equal(JSON.stringify(s.readValues({ invoice: { run: "r1", version: 2 } })), '{"invoice":{"b":1,"a":[2]}}');
    assert.equal(
      JSON.stringify(s.listEvents()[0]),
      JSON.stringify({
        runId: "r1",
        superstep: 2,
        type: "checkpoint",
        at: event("r1", "checkpoint").at,
        data: { checkpoint: "r1:2" },
        seq: 1,
      }),
    );
    const stored = sql("SELECT data::text FROM casefile.checkpoints WHERE case_id = 'order'");
    assert.ok(!stored.includes('"runId"') && !stored.includes("r1:1"), `names and column values are not stored again: ${stored}`);
  });

  it("stores whole a record whose members are not in the engine's order, and reads it the same", async () => {
    const s = await opened("unusual");
    const odd = { superstep: 0, id: "s1", runId: "r1", ...step("s1", "r1", 0) };
    const extra = { ...step("s2", "r1", 0), note: "a member packing does not know" };
    s.commit({ steps: [odd, extra] });
    assert.deepEqual(
      s.listSteps("r1").map((r) => JSON.stringify(r)),
      [JSON.stringify(odd), JSON.stringify(extra)],
      "both records as written",
    );
    assert.equal(sql("SELECT count(*) FROM casefile.steps WHERE case_id = 'unusual' AND json_typeof(data) = 'object'"), "2");
  });

  it("reads a row a v1 store wrote (the whole record), and refuses a damaged packed row naming it", async () => {
    const s = await opened("old");
    s.commit({ checkpoints: [checkpoint("c0", "r1", 0)] });
    const whole = JSON.stringify(checkpoint("c0", "r1", 0)).replace(/'/g, "''");
    sql(`UPDATE casefile.checkpoints SET data = '${whole}'::json WHERE case_id = 'old'`);
    assert.equal(JSON.stringify(s.getCheckpoint("c0")), JSON.stringify(checkpoint("c0", "r1", 0)), "the v1 row reads as it was");
    sql(`UPDATE casefile.checkpoints SET data = '[1]'::json WHERE case_id = 'old'`);
    assert.throws(
      () => s.getCheckpoint("c0"),
      (e: Error & { code?: string }) => e.code === "CORRUPT_CASE_FILE" && /checkpoints row .*c0.*packed record/.test(e.message),
    );
  });
});
