import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { nodeFs } from "../../../src/casefile/caseFileFs";
import { openCaseFile } from "../../../src/casefile/index";
import { MemoryStore } from "../../../src/casefile/memoryStore";
import { isCasefileError } from "../../../src/engine/errors";

/**
 * The small contracts the stores rely on that the power-loss suite (which wraps CaseFileFs) and
 * the conformance suite (stores opened without options) do not reach.
 */
describe("nodeFs and MemoryStore: what the stores rely on", () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(path.join(os.tmpdir(), "casefile-fs-"))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("nodeFs.remove deletes a file, and a missing file is not an error (a compaction's leftover temp file may be gone)", () => {
    // Kills caseFileFs.ts's `rmSync(path, { force: true })` as `rmSync(path, {})`.
    const file = path.join(dir, "case.casefile.tmp");
    writeFileSync(file, "x");
    nodeFs.remove(file);
    assert.equal(existsSync(file), false, "the file is gone");
    assert.doesNotThrow(() => nodeFs.remove(file), "removing it again");
  });

  it("nodeFs.fsyncDir leaves no descriptor open, and openCaseFile creates a missing file only when open for writing", async () => {
    // Kills fsyncDir's `finally { closeSync(fd) }` mutants, and index.ts's `create` default.
    const openFds = () => readdirSync("/proc/self/fd").length;
    const before = openFds();
    for (let i = 0; i < 5; i++) nodeFs.fsyncDir(dir);
    assert.equal(openFds(), before, "descriptors after five directory fsyncs");
    const missing = path.join(dir, "new.casefile");
    await assert.rejects(openCaseFile(missing, { readOnly: true }), (e: unknown) => isCasefileError(e) && e.code === "NOT_A_CASE_FILE");
    assert.equal(existsSync(missing), false, "a read-only open creates nothing");
    const store = await openCaseFile(missing);
    store.close();
    assert.equal(existsSync(missing), true, "open for writing creates the case file");
  });

  it("a MemoryStore keeps the tenant it was made for, and has none when made without one", () => {
    // Kills memoryStore.ts's `if (opts.tenant !== undefined)` as true or false.
    assert.equal(new MemoryStore({ tenant: "acme" }).meta().tenant, "acme");
    assert.deepEqual(Object.keys(new MemoryStore({ createdAt: "2026-12-01T00:00:00.000Z" }).meta()).sort(), ["createdAt", "schemaVersion"]);
  });
});
