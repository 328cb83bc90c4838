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
    const { v, id, runId, superstep, ...rest } = checkpoint("r1:2", "r1", 2, { keys: { invoice: { version: 2, run: "r1" } } });
    const cp = { v, id, runId, superstep, parentId: "r1:1", ...rest };
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

  it("holds a workflow every checkpoint repeats once per case, and gives each checkpoint it back", async () => {
    const s = await opened("shared");
    for (let i = 0; i < 3; i++) s.commit({ checkpoints: [checkpoint(`c${i}`, "r1", i)] });
    s.commit({
      checkpoints: [checkpoint("c3", "r1", 3, { workflow: { name: "invoice", version: 2, graphHash: "sha256:h", executors: [] } })],
    });
    assert.equal(sql("SELECT count(*) FROM casefile.shared_values WHERE case_id = 'shared'"), "2", "one row per distinct workflow");
    assert.equal(sql("SELECT count(*) FROM casefile.checkpoints WHERE case_id = 'shared' AND data::text LIKE '%graphHash%'"), "0");
    assert.deepEqual(
      [0, 1, 2, 3].map((i) => s.getCheckpoint(`c${i}`)!.workflow.version),
      [1, 1, 1, 2],
      "each checkpoint's own workflow",
    );
    assert.equal(
      JSON.stringify(s.latestCheckpoint("r1")),
      JSON.stringify(checkpoint("c3", "r1", 3, { workflow: { name: "invoice", version: 2, graphHash: "sha256:h", executors: [] } })),
    );
  });

  it("holds a superstep's events in one row, and reads each with its own seq, from any point", async () => {
    const s = await opened("events");
    s.commit({ events: [event("r1", "run_started", 0)] });
    s.commit({
      events: [
        event("r1", "step_completed", 1),
        event("r1", "checkpoint", 1),
        event("r1", "step_completed", 2),
        event("r2", "run_started", 2),
      ],
    });
    assert.equal(
      sql("SELECT string_agg(seq || ':' || n, ',' ORDER BY seq) FROM casefile.events WHERE case_id = 'events'"),
      "1:1,3:2,4:1,5:1",
    );
    const all = s.listEvents();
    assert.deepEqual(
      all.map((e) => [e.seq, e.runId, e.superstep, e.type]),
      [
        [1, "r1", 0, "run_started"],
        [2, "r1", 1, "step_completed"],
        [3, "r1", 1, "checkpoint"],
        [4, "r1", 2, "step_completed"],
        [5, "r2", 2, "run_started"],
      ],
    );
    assert.equal(JSON.stringify(all[2]), JSON.stringify({ ...event("r1", "checkpoint", 1), seq: 3 }), "members in the order written");
    assert.deepEqual(
      s.listEvents({ afterSeq: 2 }).map((e) => e.seq),
      [3, 4, 5],
      "after a seq in the middle of a row: the rest of that row",
    );
    assert.deepEqual(
      s.listEvents({ runId: "r1", superstep: 1 }).map((e) => e.seq),
      [2, 3],
    );
    s.commit({ events: [event("r1", "run_completed", 2)] });
    assert.equal(s.listEvents().at(-1)!.seq, 6, "numbering goes on from the last event of the last row");
    sql(`UPDATE casefile.events SET data = '[[8, "x"], [3]]'::json WHERE case_id = 'events' AND seq = 3`);
    assert.throws(
      () => s.listEvents(),
      (e: Error & { code?: string }) =>
        e.code === "CORRUPT_CASE_FILE" && /events row \{"run_id":"r1","superstep":"1","seq":"2"\}/.test(e.message),
      "a damaged row is named by its event's seq",
    );
  });

  it("stores whole a record whose members are not in the engine's order, and reads it the same", async () => {
    const s = await opened("unusual");
    const { superstep, id, runId, ...rest } = step("s1", "r1", 0);
    const odd = { superstep, id, runId, ...rest };
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
