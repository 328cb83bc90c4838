import assert from "node:assert/strict";
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { SqlJsStore } from "../../../src/casefile";
import { journalPath } from "../../../src/casefile/journal";
import { event, run } from "./builders";
import { PowerLossFs } from "./helpers/powerLossFs";

/**
 * What a power cut leaves of a case file whose writer started from an existing file (the
 * power-loss suite's runs all start by creating one): survivors of the mutation run over
 * sqlJsStore.ts and databaseFile.ts (issue 18), each test naming the bug it catches. The files are
 * written through PowerLossFs; what a reboot finds (only what was fsync'd) is opened again for real.
 */

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), "casefile-s18b-durable-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

async function runsAfterReboot(fs: PowerLossFs, name: string): Promise<string[]> {
  const into = path.join(dir, name);
  const written = fs.materialize(dir, into, "durable");
  // The database file, durable before this run and only read since, is not the layer's to write.
  if (!written.includes("c.casefile")) copyFileSync(path.join(dir, "c.casefile"), path.join(into, "c.casefile"));
  const r = await SqlJsStore.open(path.join(into, "c.casefile"), { readOnly: true });
  try {
    return r.listRuns().map((x) => x.id);
  } finally {
    r.close();
  }
}

describe("store durability: a writer opening an existing case file", () => {
  // Kills `if (created) fs.fsyncDir(...)` in open: a journal created beside a case file that had
  // none (copied without it, or its empty journal removed) must have a durable name before a
  // commit returns, or the commit is lost with the name.
  it("a commit into a journal it had to create survives a power cut", async () => {
    const file = path.join(dir, "c.casefile");
    const first = await SqlJsStore.open(file, { create: true });
    first.close();
    rmSync(journalPath(file), { force: true });
    const fs = new PowerLossFs();
    const w = await SqlJsStore.open(file, { fs, compactAtBytes: Number.MAX_SAFE_INTEGER });
    w.commit({ runs: [run("r1")], events: [event("r1", "run_started")] });
    assert.deepEqual(await runsAfterReboot(fs, "after-commit"), ["r1"], "the commit returned, so it survives");
    w.close();
  });

  // Kills the fsync of the compacted file and of its folder (databaseFile.ts's replaceDatabaseFile)
  // on the compaction a close makes: after the close returns, a power cut leaves the new file.
  it("what a close compacted survives a power cut, the journal emptied", async () => {
    const file = path.join(dir, "c.casefile");
    const first = await SqlJsStore.open(file, { create: true });
    first.close();
    const fs = new PowerLossFs();
    const w = await SqlJsStore.open(file, { fs, compactAtBytes: Number.MAX_SAFE_INTEGER });
    w.commit({ runs: [run("r1")], events: [event("r1", "run_started")] });
    w.close();
    const rename = fs.calls.findIndex((c) => c.op === "rename");
    assert.deepEqual(
      fs.calls.slice(rename - 2, rename + 2).map((c) => `${c.op} ${c.file}`),
      ["fsync c.casefile.tmp", "close c.casefile.tmp", "rename c.casefile.tmp", `fsyncDir ${path.basename(dir)}`],
      "the temp file is made durable before the rename, and the rename by its folder's fsync",
    );
    assert.deepEqual(await runsAfterReboot(fs, "after-close"), ["r1"], "the compacted file holds the run");
  });
});
