import assert from "node:assert/strict";
import { closeSync, existsSync, mkdtempSync, openSync, readdirSync, rmSync, writeFileSync } from "node:fs";
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

  it("nodeFs.fsync syncs an open file and refuses a closed descriptor with EBADF", () => {
    // Kills caseFileFs.ts's `fsync: (fd) => fsyncSync(fd)` as `() => undefined`: a journal append
    // or a compaction would be reported durable without ever reaching the disk.
    const fd = openSync(path.join(dir, "case.casefile.journal"), "a");
    nodeFs.write(fd, Buffer.from("record"), 0, 6);
    assert.doesNotThrow(() => nodeFs.fsync(fd), "an open descriptor");
    closeSync(fd);
    assert.throws(
      () => nodeFs.fsync(fd),
      (e: NodeJS.ErrnoException) => e.code === "EBADF",
      "a closed descriptor really reaches fsync(2)",
    );
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

  it("a MemoryStore asked for a value it does not hold names itself, the key, the version and the run", () => {
    // Kills memoryStore.ts's readValues `missingValue("memory store", ...)` with the place blanked.
    const store = new MemoryStore();
    assert.throws(
      () => store.readValues({ total: { run: "r1", version: 3 } }),
      (e: unknown) => {
        assert.ok(isCasefileError(e) && e.code === "CORRUPT_CASE_FILE", String(e));
        assert.equal(e.message, 'memory store: state key "total" version 3 of run r1 is referenced but not stored', "the whole message");
        return true;
      },
    );
  });
});
