import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { acquireLock, lockPath } from "../../../src/casefile/lock";

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
});
