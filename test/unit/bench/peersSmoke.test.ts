import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Row } from "../../bench/peers/measure";
import { table, writeResults } from "../../bench/peers/report";
import type { Results } from "../../bench/peers/report";
import { runScenarios } from "../../bench/peers/run";
import type { Sizes } from "../../bench/peers/run";

/**
 * The peer benchmark (npm run bench) at a tiny size: proves every scenario runs on both runtimes
 * and yields well-formed rows. Times are never asserted (this machine is shared and noisy); only
 * what no noise can change, such as bytes on disk.
 */
const TINY: Sizes = {
  overheadSupersteps: 20,
  overheadReps: 1,
  growthSupersteps: 30,
  growthFactsBytes: 50 * 1024,
  growthOursMaxBytes: 5 * 1024 * 1024,
  resumeCheckpoints: 40,
  resumeReps: 1,
  resumeOursMaxRatio: 2,
  openDbBytes: 2 * 1024 * 1024,
  openBigValueBytes: 256 * 1024,
  openJournalBytes: 64 * 1024,
  openSmallValueBytes: 4 * 1024,
  openReps: 1,
  openWorstReps: 1,
  openOursMaxMs: 400,
};

describe("bench: Casefile vs LangGraph.js, at a tiny size", function () {
  this.timeout(120_000);
  let dir: string;
  let rows: Row[];

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "casefile-peers-smoke-"));
    rows = await runScenarios(TINY, dir, () => undefined);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const row = (id: string): Row => {
    const r = rows.find((x) => x.id === id);
    assert.ok(r, `row ${id} is missing; rows: ${rows.map((x) => x.id).join(", ")}`);
    return r;
  };

  it("yields every row, each with finite positive numbers and a ratio of the two sides", () => {
    const ids = rows.map((r) => r.id);
    for (const id of [
      "overhead.memory",
      "overhead.durable",
      "overhead.durableFull",
      "growth.afterRun",
      "growth.afterClose",
      "growth.time",
      "resume.first",
      "resume.middle",
      "resume.last",
      "resume.spread",
      "resume.open",
      "open.typical",
      "open.typicalLoaded",
      "open.worst",
    ]) {
      assert.ok(ids.includes(id), `row ${id} is missing`);
    }
    for (const r of rows) {
      assert.ok(Number.isFinite(r.ours) && r.ours > 0, `${r.id}: ours is ${r.ours}`);
      if (r.theirs !== undefined) {
        assert.ok(Number.isFinite(r.theirs) && r.theirs > 0, `${r.id}: theirs is ${r.theirs}`);
        if (r.ratio !== undefined)
          assert.ok(Math.abs(r.ratio - r.ours / r.theirs) < 1e-9 || r.unit === "x", `${r.id}: ratio is not ours/theirs`);
      }
      if (r.target !== undefined) assert.equal(typeof r.met, "boolean", `${r.id}: a target without a verdict`);
      assert.ok(r.reps >= 1, "expected: r.reps >= 1");
    }
  });

  it("stores unchanged facts once: our checkpoint growth is well below SqliteSaver's", () => {
    // 31 supersteps over 50 KB of facts: SqliteSaver writes the facts into every checkpoint
    // (over 1.5 MB), we write them once. Bytes, not times: no noise can flip this.
    const g = row("growth.afterRun");
    assert.ok(g.theirs! > 31 * 50 * 1024, `theirs only ${g.theirs} bytes`);
    assert.ok(g.ours < g.theirs! / 3, `ours ${g.ours} bytes vs theirs ${g.theirs}`);
  });

  it("prints a table with a line per measure and writes results compared with the previous file", () => {
    const lines = table(rows);
    for (const r of rows)
      assert.ok(
        lines.some((l) => l.includes(r.measure)),
        `table lacks ${r.measure}`,
      );
    const results = (at: string, rowsOf: Row[]): Results => ({
      at,
      machine: { cpus: 1, platform: "test", node: process.version, loadAvgAtStart: [], loadAvgAtEnd: [] },
      versions: {},
      sizes: { ...TINY },
      durationS: 1,
      rows: rowsOf,
    });
    const out = path.join(dir, "results");
    const first = writeResults(out, results("first", rows));
    assert.equal(first.previous, undefined);
    // The second run's figures differ from the first's (ours doubled): a comparison of a results
    // file with itself would report no change and pass on equal rows.
    const doubled = rows.map((r) => ({ ...r, ours: r.ours * 2 }));
    const second = writeResults(out, results("second", doubled));
    assert.equal(second.previous?.at, "first");
    assert.deepEqual(
      second.changes!.map((c) => [c.id, c.oursBefore, c.oursNow, c.oursChange]),
      rows.map((r) => [r.id, r.ours, r.ours * 2, 1]),
      "each measure compared with the previous file's: ours before, now, and the change (+100 %)",
    );
    const stored = JSON.parse(readFileSync(second.file, "utf8")) as Results;
    assert.equal(stored.previous?.at, "first");
    assert.equal(stored.rows.length, rows.length);
  });
});
