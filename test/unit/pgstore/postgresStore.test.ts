import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { PG_SCHEMA_VERSION, PostgresStore, SyncPgClient } from "../../../src/pgstore";
import { createDatabase, pgCluster } from "../../helpers/pgCluster";
import { checkpoint, event, run, step } from "../casefile/builders";

/** What only a Postgres store has: several cases in one database, its schema, its connection. */
describe("PostgresStore", () => {
  let url: string;
  const open: PostgresStore[] = [];
  const opened = async (caseId: string, opts: { create?: boolean; readOnly?: boolean; tenant?: string } = {}): Promise<PostgresStore> => {
    const s = await PostgresStore.open(url, { caseId, create: true, ...opts });
    open.push(s);
    return s;
  };
  const refused = (code: string, pattern: RegExp) => (e: Error & { code?: string }) => e.code === code && pattern.test(e.message);

  before(() => {
    url = createDatabase("pgstore");
  });
  afterEach(() => open.splice(0).forEach((s) => s.close()));

  it("keeps what was committed for a second connection, after the first one closed", async () => {
    const a = await opened("inv-1");
    a.commit({ runs: [run("r1")], checkpoints: [checkpoint("c0", "r1", 0)], events: [event("r1", "run_started")] });
    a.close();
    const b = await opened("inv-1", { create: false, readOnly: true });
    assert.equal(b.getRun("r1")!.status, "running");
    assert.equal(b.latestCheckpoint("r1")!.id, "c0");
    assert.deepEqual(
      b.listEvents().map((e) => [e.seq, e.type]),
      [[1, "run_started"]],
    );
  });

  it("holds each case apart: the same run id in two cases, each numbering its own events", async () => {
    const a = await opened("case-a");
    const b = await opened("case-b");
    a.commit({ runs: [run("r1", { status: "completed" })], steps: [step("s1", "r1", 0)], events: [event("r1", "run_started")] });
    b.commit({ runs: [run("r1")], steps: [step("s1", "r1", 0)], events: [event("r1", "run_started")] });
    assert.equal(a.getRun("r1")!.status, "completed");
    assert.equal(b.getRun("r1")!.status, "running");
    assert.deepEqual([a.listEvents()[0]!.seq, b.listEvents()[0]!.seq], [1, 1]);
  });

  it("refuses a case it does not hold unless asked to create it, naming the case", async () => {
    await assert.rejects(opened("nope", { create: false }), refused("UNKNOWN_CASE", /no case "nope" in this store/));
    await assert.rejects(opened("nope", { readOnly: true }), refused("UNKNOWN_CASE", /no case "nope"/));
  });

  it("opened read-only (a read-only Postgres session), refuses a commit and still reads", async () => {
    (await opened("ro")).commit({ runs: [run("r1")] });
    const ro = await opened("ro", { readOnly: true });
    assert.throws(() => ro.commit({ runs: [run("r2")] }), refused("READ_ONLY", /case ro is open read-only/));
    assert.equal(ro.readOnly, true);
    assert.deepEqual(
      ro.listRuns().map((r) => r.id),
      ["r1"],
    );
  });

  it("refuses a store whose schema is newer than this Casefile, before reading anything", async () => {
    const newer = createDatabase("newer");
    (await PostgresStore.open(newer, { caseId: "x", create: true })).close();
    pgCluster().psql(`UPDATE casefile.schema_meta SET schema_version = ${PG_SCHEMA_VERSION + 1}`, newer.split("/").pop()!.split("?")[0]);
    for (const readOnly of [false, true]) {
      await assert.rejects(
        PostgresStore.open(newer, { caseId: "x", readOnly }),
        refused("NEWER_SCHEMA", new RegExp(`schema v${PG_SCHEMA_VERSION + 1}, this Casefile reads up to v${PG_SCHEMA_VERSION}`)),
      );
    }
  });

  it("on a lent connection (a worker's), refuses a case once a newer Casefile migrated the store, and leaves the connection open", async () => {
    const newer = createDatabase("lent");
    const connection = new SyncPgClient(newer, { where: "lent" });
    try {
      const a = await PostgresStore.open(newer, { caseId: "a", create: true, connection });
      a.commit({ runs: [run("r1")] });
      a.close();
      assert.equal(
        (await PostgresStore.open(newer, { caseId: "a", connection })).getRun("r1")!.id,
        "r1",
        "the connection outlives a store",
      );
      pgCluster().psql(`UPDATE casefile.schema_meta SET schema_version = ${PG_SCHEMA_VERSION + 1}`, newer.split("/").pop()!.split("?")[0]);
      await assert.rejects(PostgresStore.open(newer, { caseId: "a", connection }), refused("NEWER_SCHEMA", /this Casefile reads up to/));
      assert.deepEqual(connection.query("SELECT 1 AS one"), [{ one: 1 }], "the refusal left the lent connection open");
    } finally {
      connection.close();
    }
  });

  it("turns a store it cannot reach into STORE_UNAVAILABLE, the password not shown", async () => {
    const bad = `postgresql://postgres:secret@localhost/postgres?host=${encodeURIComponent(pgCluster().dir)}&port=1`;
    await assert.rejects(
      PostgresStore.open(bad, { caseId: "x", create: true }),
      (e: Error & { code?: string }) => e.code === "STORE_UNAVAILABLE" && !e.message.includes("secret") && /\*\*\*/.test(e.message),
    );
  });

  it("gives back a record's members in the order written, as a case file does (a context rebuilt from state hashes the same)", async () => {
    const s = await opened("order");
    const value = { zeta: 1, alpha: { b: 2, a: 1 }, mid: [{ y: 1, x: 2 }], nul: "a\u0000b" };
    s.commit({ values: [{ run: "r1", key: "k", version: 1, value }], runs: [run("r1", { input: { z: 1, a: 2 } })] });
    s.close();
    const again = await opened("order", { readOnly: true });
    assert.equal(JSON.stringify(again.readValues({ k: { run: "r1", version: 1 } }).k), JSON.stringify(value));
    assert.equal(JSON.stringify(again.getRun("r1")!.input), '{"z":1,"a":2}');
  });

  it("refuses an id Postgres cannot hold as text as INVALID_BATCH, and applies nothing of that batch", async () => {
    const s = await opened("nul");
    assert.throws(() => s.commit({ runs: [run("r1")], steps: [step("s\u00001", "r1", 0)] }), refused("INVALID_BATCH", /Postgres/));
    assert.deepEqual(s.listRuns(), []);
  });

  it("numbers a commit's events after another writer's that committed while it waited for the case's lock", async () => {
    const a = await opened("racing");
    // Another connection, in a process of its own, holds the case's row lock with an event written
    // and not yet committed: the commit below starts, waits for the lock, and meets that event's seq.
    const holder = spawn(
      process.execPath,
      [
        "-e",
        `const pg = require("pg"); const c = new pg.Client({ connectionString: process.argv[1] });
        (async () => { await c.connect(); await c.query("BEGIN");
          await c.query("SELECT 1 FROM casefile.cases WHERE tenant = '' AND id = 'racing' FOR UPDATE");
          await c.query("INSERT INTO casefile.events (tenant, case_id, seq, run_id, superstep, type, data) VALUES ('', 'racing', 1, 'r0', 0, 'output', $1)", [process.argv[2]]);
          console.log("locked"); await new Promise((r) => setTimeout(r, 700)); await c.query("COMMIT"); await c.end(); })();`,
        url,
        JSON.stringify({ ...event("r0", "output"), seq: 1 }),
      ],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    const exited = new Promise((resolve) => holder.on("exit", resolve));
    await new Promise<void>((resolve) => holder.stdout.once("data", () => resolve()));
    a.commit({ events: [event("r1", "output")] });
    assert.equal(await exited, 0, "the other writer committed");
    assert.deepEqual(
      a.listEvents().map((e) => [e.seq, e.runId]),
      [
        [1, "r0"],
        [2, "r1"],
      ],
      "the waiting commit took the next number rather than failing on the other writer's",
    );
  });

  it("numbers events in one transaction per commit, so two writers of one case never share a seq", async () => {
    const a = await opened("two-writers");
    const b = await opened("two-writers");
    for (let i = 0; i < 5; i++) {
      a.commit({ events: [event("r1", "output", i)] });
      b.commit({ events: [event("r2", "output", i)] });
    }
    const seqs = a.listEvents().map((e) => e.seq);
    assert.deepEqual(
      seqs,
      Array.from({ length: 10 }, (_, i) => i + 1),
    );
  });
});
