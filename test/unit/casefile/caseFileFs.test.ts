import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { nodeFs } from "../../../src/casefile/caseFileFs";
import { MemoryStore } from "../../../src/casefile/memoryStore";

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

  it("a MemoryStore keeps the tenant it was made for, and has none when made without one", () => {
    // Kills memoryStore.ts's `if (opts.tenant !== undefined)` as true or false.
    assert.equal(new MemoryStore({ tenant: "acme" }).meta().tenant, "acme");
    assert.deepEqual(Object.keys(new MemoryStore({ createdAt: "2026-12-01T00:00:00.000Z" }).meta()).sort(), ["createdAt", "schemaVersion"]);
  });
});
