import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
// Plain sql.js, as any SQLite client would read the file: not our store, no journal replay.
import initSqlJs from "sql.js";
import type { SqlJsStatic } from "sql.js";
import { SqlJsStore } from "../../../src/casefile";
import { journalPath } from "../../../src/casefile/journal";
import { lockPath } from "../../../src/casefile/lock";
import type { CommitBatch } from "../../../src/engine/store";
import { checkpoint, event, ref, run, step } from "./builders";

/** After a clean close the database file alone is the whole case; a killed writer's tail is counted and folded. */

let dir: string;
let SQL: SqlJsStatic;
const at = (name: string): string => path.join(dir, name);

before(async () => {
  SQL = await initSqlJs();
});
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), "casefile-compaction-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** A run of `supersteps` supersteps as the engine commits it: one batch per checkpoint, then the end. */
function runBatches(runId: string, supersteps: number, end: "completed" | "failed" | "waiting" = "completed"): CommitBatch[] {
  const batches: CommitBatch[] = [{ runs: [run(runId)], events: [event(runId, "run_started")] }];
  for (let s = 0; s < supersteps; s++) {
    batches.push({
      checkpoints: [checkpoint(`${runId}:${s}`, runId, s, { keys: { n: ref(runId, s + 1) } })],
      values: [{ run: runId, key: "n", version: s + 1, value: s }],
      steps: [step(`${runId}:${s}:tick`, runId, s)],
      events: [event(runId, "checkpoint", s, { checkpoint: `${runId}:${s}` })],
    });
  }
  const type = end === "completed" ? "run_completed" : end === "failed" ? "run_failed" : "run_waiting";
  batches.push({ runs: [run(runId, { status: end })], events: [event(runId, type, supersteps)] });
  return batches;
}

/** Rows of the database file as plain sql.js reads it from disk. */
function plainRows(file: string, sql: string): unknown[][] {
  const db = new SQL.Database(readFileSync(file));
  try {
    return db.exec(sql)[0]?.values ?? [];
  } finally {
    db.close();
  }
}

function journalBytes(file: string): number {
  return existsSync(journalPath(file)) ? statSync(journalPath(file)).size : 0;
}

/** Copies the database and journal of an open writer, as a SIGKILL at this instant would leave them. */
function crashCopy(from: string, to: string): void {
  copyFileSync(from, to);
  copyFileSync(journalPath(from), journalPath(to));
}

describe("compaction: the database file alone is the case after a clean close", () => {
  it("a writer's close folds every run, checkpoint, state value and event into the file that plain sql.js reads", async () => {
    const file = at("case.casefile");
    const w = await SqlJsStore.open(file, { create: true });
    for (const [id, end] of [
      ["r1", "completed"],
      ["r2", "failed"],
      ["r3", "waiting"],
    ] as const) {
      runBatches(id, 3, end).forEach((b) => w.commit(b));
    }
    assert.equal(plainRows(file, "SELECT count(*) FROM runs")[0]![0], 0, "before close the commits are in the journal only");
    w.close();

    assert.equal(journalBytes(file), 0, "the journal is empty after a clean close");
    assert.deepEqual(plainRows(file, "SELECT id, status FROM runs ORDER BY id"), [
      ["r1", "completed"],
      ["r2", "failed"],
      ["r3", "waiting"],
    ]);
    assert.deepEqual(
      plainRows(file, "SELECT id FROM checkpoints ORDER BY id").map((r) => r[0]),
      ["r1:0", "r1:1", "r1:2", "r2:0", "r2:1", "r2:2", "r3:0", "r3:1", "r3:2"],
    );
    assert.equal(plainRows(file, "SELECT count(*) FROM state_values")[0]![0], 9);
    assert.equal(plainRows(file, "SELECT count(*) FROM steps")[0]![0], 9);
    assert.deepEqual(
      plainRows(file, "SELECT type FROM events WHERE run_id = 'r2' ORDER BY seq").map((r) => r[0]),
      ["run_started", "checkpoint", "checkpoint", "checkpoint", "run_failed"],
    );
    assert.equal(plainRows(file, "SELECT count(*) FROM events")[0]![0], 15);
  });

  it("counts the supersteps a killed writer left in the journal only, and `compact` folds them in", async () => {
    const file = at("a.casefile");
    const killed = at("killed.casefile");
    const w = await SqlJsStore.open(file, { create: true });
    runBatches("r1", 4)
      .slice(0, 4)
      .forEach((b) => w.commit(b)); // run_started + 3 supersteps, not ended
    crashCopy(file, killed);
    assert.equal(w.uncompactedSupersteps(), 3, "a live writer counts its own journalled supersteps");
    w.close();
    assert.equal(statSync(file).size > 0 && journalBytes(file), 0);

    const r = await SqlJsStore.open(killed, { readOnly: true });
    assert.equal(r.uncompactedSupersteps(), 3);
    assert.equal(r.uncompactedRecords(), 4, "run_started is a journal record but no superstep");
    assert.equal(r.listCheckpoints("r1").length, 3, "the reader sees the journalled history");
    r.close();
    assert.equal(plainRows(killed, "SELECT count(*) FROM checkpoints")[0]![0], 0, "the database file itself lacks it");

    const c = await SqlJsStore.open(killed, { compactAtBytes: Number.MAX_SAFE_INTEGER });
    assert.equal(c.uncompactedSupersteps(), 3);
    c.compact();
    assert.equal(c.uncompactedSupersteps(), 0);
    assert.equal(c.uncompactedRecords(), 0);
    c.close();
    assert.equal(journalBytes(killed), 0);
    assert.deepEqual(
      plainRows(killed, "SELECT id FROM checkpoints ORDER BY superstep").map((x) => x[0]),
      ["r1:0", "r1:1", "r1:2"],
    );
    const again = await SqlJsStore.open(killed, { readOnly: true });
    assert.equal(again.uncompactedSupersteps(), 0, "nothing left to report after compaction");
    again.close();
  });

  it("does not count records a compaction already folded in (a kill between rename and truncate)", async () => {
    const file = at("a.casefile");
    const w = await SqlJsStore.open(file, { create: true });
    runBatches("r1", 2).forEach((b) => w.commit(b));
    const oldJournal = readFileSync(journalPath(file));
    w.compact();
    w.close();
    writeFileSync(journalPath(file), oldJournal); // the renamed database with the untruncated journal
    const r = await SqlJsStore.open(file, { readOnly: true });
    assert.equal(r.uncompactedSupersteps(), 0);
    assert.equal(r.uncompactedRecords(), 0);
    r.close();
  });

  it("a compaction that fails on close is a warning: the lock is released and the journal keeps every commit", async () => {
    const file = at("case.casefile");
    const w = await SqlJsStore.open(file, { create: true });
    runBatches("r1", 2).forEach((b) => w.commit(b));
    mkdirSync(file + ".tmp"); // in the way of compaction's temp file: the write fails (EISDIR)
    w.close();
    assert.match(w.warnings.join("\n"), /compaction of .*case\.casefile on close failed \(.*EISDIR.*\); its journal keeps every commit/);
    assert.ok(!existsSync(lockPath(file)), "close released the lock anyway");
    assert.ok(journalBytes(file) > 0, "expected: journalBytes(file) > 0");
    rmSync(file + ".tmp", { recursive: true });
    const r = await SqlJsStore.open(file, { readOnly: true });
    assert.equal(r.listCheckpoints("r1").length, 2);
    assert.equal(r.getRun("r1")?.status, "completed");
    r.close();
  });
});

describe("stale files a killed writer leaves", () => {
  async function makeCase(file: string): Promise<void> {
    const w = await SqlJsStore.open(file, { create: true });
    runBatches("r1", 2).forEach((b) => w.commit(b));
    w.close();
  }

  it("the next writer removes a compaction's .tmp (never renaming it over the file) and says so", async () => {
    const file = at("case.casefile");
    await makeCase(file);
    const good = readFileSync(file);
    // A compaction killed before its rename: a partial copy of some database beside the file.
    writeFileSync(file + ".tmp", good.subarray(0, 4096));
    const r = await SqlJsStore.open(file, { readOnly: true });
    r.close();
    assert.ok(existsSync(file + ".tmp"), "a reader (no lock) leaves it alone");

    const w = await SqlJsStore.open(file);
    assert.match(
      w.warnings.join("\n"),
      /removed .*case\.casefile\.tmp \(4096 bytes\) left by a compaction that was stopped before its rename/,
    );
    assert.ok(!existsSync(file + ".tmp"), 'expected: !existsSync(file + ".tmp")');
    assert.equal(w.listCheckpoints("r1").length, 2, "the case is whole: the temp file was not used");
    w.close();
    assert.ok(!existsSync(file + ".tmp"), 'expected: !existsSync(file + ".tmp")');
    assert.equal(plainRows(file, "SELECT count(*) FROM checkpoints")[0]![0], 2);
  });

  it("the .tmp stays while a live process holds the lock (its compaction may be under way)", async () => {
    const file = at("case.casefile");
    await makeCase(file);
    writeFileSync(file + ".tmp", "in progress");
    const holder = spawn(process.execPath, ["-e", "setTimeout(() => {}, 60000)"], { stdio: "ignore" });
    try {
      writeFileSync(lockPath(file), JSON.stringify({ pid: holder.pid, hostname: os.hostname(), createdAt: new Date().toISOString() }));
      await assert.rejects(SqlJsStore.open(file), (e: Error & { code?: string }) => e.code === "CASE_FILE_LOCKED");
      assert.equal(readFileSync(file + ".tmp", "utf8"), "in progress");
    } finally {
      holder.kill("SIGKILL");
    }
  });

  it("a stale lock and a .tmp left by a killed first write of a new case file are both cleaned and reported", async () => {
    const file = at("new.casefile");
    const gone = spawn(process.execPath, ["-e", ""], { stdio: "ignore" });
    await new Promise((resolve) => gone.on("exit", resolve));
    writeFileSync(lockPath(file), JSON.stringify({ pid: gone.pid, hostname: os.hostname(), createdAt: "2026-01-01T00:00:00.000Z" }));
    writeFileSync(file + ".tmp", "half a database");
    const w = await SqlJsStore.open(file, { create: true });
    const warnings = w.warnings.join("\n");
    assert.match(warnings, new RegExp(`took over a stale lock .* left by pid ${gone.pid} `));
    assert.match(warnings, /removed .*new\.casefile\.tmp \(15 bytes\)/);
    runBatches("r1", 1).forEach((b) => w.commit(b));
    w.close();
    assert.ok(
      !existsSync(file + ".tmp") && !existsSync(lockPath(file)),
      'expected: !existsSync(file + ".tmp") && !existsSync(lockPath(file))',
    );
    assert.deepEqual(plainRows(file, "SELECT id, status FROM runs"), [["r1", "completed"]]);
  });
});
