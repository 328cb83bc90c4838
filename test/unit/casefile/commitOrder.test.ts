import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { nodeFs, type CaseFileFs } from "../../../src/casefile/caseFileFs";
import { readJournal } from "../../../src/casefile/journal";
import { SqlJsStore } from "../../../src/casefile/sqlJsStore";
import { checkpoint, run, step } from "./builders";
import { PowerLossFs } from "./helpers/powerLossFs";

/**
 * The order of a commit's writes: the journal record is appended, then fsync'd, and only then is
 * the batch committed in memory (visible to reads). Recorded through PowerLossFs, and forced by
 * an fsync that fails as a disk does (EIO): a batch whose fsync failed must not be readable.
 */
describe("commit order: append, fsync, then COMMIT", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "casefile-order-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("a commit is one append to the journal and its fsync, durable when commit returns", async () => {
    const fs = new PowerLossFs();
    const file = path.join(dir, "c.casefile");
    const store = await SqlJsStore.open(file, { create: true, fs });
    const before = fs.calls.length;
    store.commit({ runs: [run("r1")], checkpoints: [checkpoint("r1:0", "r1", 0)] });
    const calls = fs.calls.slice(before).map((c) => `${c.op} ${c.file}`);
    assert.deepEqual(calls, ["write c.casefile.journal", "fsync c.casefile.journal"], "the calls one commit made, in order");
    // Power lost right after commit returned: what was fsync'd holds the checkpoint.
    fs.materialize(dir, path.join(dir, "after"), "durable");
    store.close();
    const reopened = await SqlJsStore.open(path.join(dir, "after", "c.casefile"), { readOnly: true });
    try {
      assert.ok(reopened.getCheckpoint("r1:0"), "checkpoint r1:0 was committed but is not in the durable files");
    } finally {
      reopened.close();
    }
  });

  // The batches between two compactions share one SQLite transaction, each in its own savepoint
  // (sqlJsStore.ts commit): a refused batch must roll back its savepoint only, not the batches
  // before it (journalled, so a compaction that lost them in memory would lose them for good).
  it("a batch refused half-applied undoes only itself: the commits before it stay, in memory and in the compacted file", async () => {
    const file = path.join(dir, "c.casefile");
    const store = await SqlJsStore.open(file, { create: true });
    store.commit({ runs: [run("r1")], checkpoints: [checkpoint("r1:0", "r1", 0)], steps: [step("s0", "r1", 0)] });
    store.commit({ checkpoints: [checkpoint("r1:1", "r1", 1)] });
    // Its run and checkpoint rows are written before the step row the table refuses.
    assert.throws(
      () =>
        store.commit({
          runs: [run("r1", { status: "completed" })],
          checkpoints: [checkpoint("r1:2", "r1", 2)],
          steps: [step("s0", "r1", 2)],
        }),
      (e: Error & { code?: string }) => e.code === "INVALID_BATCH" && /steps row s0 already exists/.test(e.message),
    );
    const seen = (s: SqlJsStore): unknown => ({
      status: s.getRun("r1")?.status,
      checkpoints: s.listCheckpoints("r1").map((c) => c.id),
      steps: s.listSteps("r1").map((x) => `${x.id}@${x.superstep}`),
    });
    const expected = { status: "running", checkpoints: ["r1:0", "r1:1", "r1:3"], steps: ["s0@0"] };
    store.commit({ checkpoints: [checkpoint("r1:3", "r1", 3)] });
    assert.deepEqual(seen(store), expected, "the writer's view after a refused batch and one more commit");
    store.compact();
    assert.equal(readJournal(file + ".journal").records.length, 0, "the compaction emptied the journal");
    store.close();
    const reopened = await SqlJsStore.open(file, { readOnly: true });
    try {
      assert.deepEqual(seen(reopened), expected, "the compacted file holds every commit but the refused one");
    } finally {
      reopened.close();
    }
  });

  // Kills the mutant "COMMIT before the journal append" (sqlJsStore.ts commit): the rows would
  // then be committed in memory before the fsync that failed, and readable though not durable.
  it("a commit whose fsync fails (EIO) throws and leaves none of its rows readable, in this store or after reopening", async () => {
    let failFsync = false;
    const failing: CaseFileFs = {
      ...nodeFs,
      fsync: (fd) => {
        if (failFsync) throw Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" });
        nodeFs.fsync(fd);
      },
    };
    const file = path.join(dir, "c.casefile");
    const store = await SqlJsStore.open(file, { create: true, fs: failing });
    store.commit({ runs: [run("r1")], checkpoints: [checkpoint("r1:0", "r1", 0)] });
    failFsync = true;
    assert.throws(
      () => store.commit({ checkpoints: [checkpoint("r1:1", "r1", 1)], runs: [run("r1", { status: "completed" })] }),
      /EIO: i\/o error, fsync/,
    );
    assert.equal(store.getCheckpoint("r1:1"), undefined, "checkpoint r1:1 is readable though its fsync failed");
    assert.equal(store.getRun("r1")?.status, "running", "run r1's status changed by a commit whose fsync failed");
    assert.ok(store.getCheckpoint("r1:0"), "the earlier, durable checkpoint r1:0 is gone");
    assert.throws(
      () => store.commit({ checkpoints: [checkpoint("r1:2", "r1", 2)] }),
      (e: Error & { code?: string }) => e.code === "CORRUPT_CASE_FILE" && /an earlier write failed .*reopen the case file/.test(e.message),
      "after a failed fsync the writer refuses further commits",
    );
    failFsync = false;
    store.close();
    const reopened = await SqlJsStore.open(file, { readOnly: true });
    try {
      assert.equal(reopened.getCheckpoint("r1:1"), undefined, "checkpoint r1:1 is in the file though its commit threw");
      assert.ok(reopened.getCheckpoint("r1:0"), "checkpoint r1:0 is missing after reopening");
    } finally {
      reopened.close();
    }
  });
});

// Kills the mutant "a journal sequence gap accepted on replay" (sqlJsStore.ts replay): a journal
// missing a record (seq 1, then 3) would load as if commit 2 had never been made, silently.
describe("replay refuses a journal with a sequence gap", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "casefile-gap-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("names the record after the gap and the sequence the database holds, and leaves the file as it was", async () => {
    const fs = new PowerLossFs();
    const file = path.join(dir, "c.casefile");
    const store = await SqlJsStore.open(file, { create: true, fs });
    store.commit({ runs: [run("r1")], checkpoints: [checkpoint("r1:0", "r1", 0)] });
    store.commit({ checkpoints: [checkpoint("r1:1", "r1", 1)] });
    store.commit({ checkpoints: [checkpoint("r1:2", "r1", 2)] });
    // The files as a crash would leave them (journal not compacted), then record 2 cut out.
    const crashed = path.join(dir, "crashed");
    fs.materialize(dir, crashed, "durable");
    store.close();
    rmSync(path.join(crashed, "c.casefile.lock"), { force: true }); // its process is this one: not stale, but not ours either
    const jfile = path.join(crashed, "c.casefile.journal");
    const { records } = readJournal(jfile);
    assert.deepEqual(
      records.map((r) => r.seq),
      [1, 2, 3],
      "the journal's records before the cut",
    );
    const bytes = readFileSync(jfile);
    writeFileSync(jfile, Buffer.concat([bytes.subarray(0, records[1]!.offset), bytes.subarray(records[2]!.offset)]));
    const cut = readFileSync(jfile);
    for (const readOnly of [true, false]) {
      await assert.rejects(SqlJsStore.open(path.join(crashed, "c.casefile"), { readOnly }), (e: Error & { code?: string }) => {
        assert.equal(e.code, "CORRUPT_CASE_FILE", `readOnly ${readOnly}: ${e.message}`);
        assert.match(e.message, /has sequence 3 but the database holds up to 1/, `readOnly ${readOnly}`);
        return true;
      });
      assert.ok(readFileSync(jfile).equals(cut), `readOnly ${readOnly}: the refused open changed the journal`);
    }
  });
});
