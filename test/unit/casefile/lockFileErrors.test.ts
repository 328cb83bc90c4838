import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { acquireLock, lockPath } from "../../../src/casefile/lock";
import { isCasefileError } from "../../../src/engine/errors";

/**
 * A lock file that cannot be read is reported as what it is (lock.ts's inspectExisting): a
 * survivor of the mutation run over lock.ts (issue 18).
 */
describe("lock file: an unreadable lock path", () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(path.join(os.tmpdir(), "casefile-s18b-lockerr-"))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  // Kills `code === "ENOENT"` made true: only a lock that vanished is tried again; one that
  // cannot be read (here a folder where the lock should be) is that error, not "keeps taking".
  it("a folder where the lock file should be is reported as EISDIR, not as a lock another process keeps taking", () => {
    const caseFile = path.join(dir, "c.casefile");
    mkdirSync(lockPath(caseFile));
    assert.throws(() => acquireLock(caseFile), /EISDIR/);
  });

  // Kills isAlive's `code !== "ESRCH"` made false: only "no such process" means gone; a pid the
  // kernel cannot be asked about (EPERM for another user's process; here not a whole number) may
  // be alive, so the lock is refused, never taken over.
  it("a lock whose pid cannot be checked is taken as held, never taken over", () => {
    const caseFile = path.join(dir, "c.casefile");
    writeFileSync(lockPath(caseFile), JSON.stringify({ pid: 1.5, hostname: os.hostname(), createdAt: "2026-01-01T00:00:00.000Z" }));
    assert.throws(
      () => acquireLock(caseFile),
      (e: unknown) => isCasefileError(e) && e.code === "CASE_FILE_LOCKED" && /is locked by pid 1\.5 \(since/.test(e.message),
    );
  });
});
