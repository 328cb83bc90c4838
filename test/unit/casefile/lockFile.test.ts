import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { nodeFs, type CaseFileFs } from "../../../src/casefile/caseFileFs";
import { acquireLock, acquireLockWaiting, lockPath } from "../../../src/casefile/lock";
import { isCasefileError } from "../../../src/engine/errors";
import { PowerLossFs } from "./helpers/powerLossFs";

/**
 * The writer's lock file (lock.ts): survivors of the mutation run over it (issue 18). Each test
 * names the bug it catches. Real lock files in a temp folder; another process is a real child
 * process, or (where it must act between two of our calls) a CaseFileFs that does what it would.
 */

let dir: string;
let caseFile: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), "casefile-s18b-lock-"));
  caseFile = path.join(dir, "c.casefile");
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const lockedBy = (pattern: RegExp) => (e: unknown) => isCasefileError(e) && e.code === "CASE_FILE_LOCKED" && pattern.test(e.message);
const bootId = (): string => readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();

function writeLock(owner: Record<string, unknown> | string): void {
  writeFileSync(lockPath(caseFile), typeof owner === "string" ? owner : JSON.stringify(owner));
}

/**
 * lock.ts loaded anew. It reads the boot id once per module and keeps it, so in one process
 * running many test files (Stryker's run) the first lock taken fills it before a mutant of that
 * read is switched on, and these tests would only ever see the cached id. The tests of the boot
 * id take their lock through a fresh copy, which reads it again (kills lock.ts:188-190: the read
 * emptied, its try emptied, `|| null` as `&& null`, no trim, no path).
 */
function freshLock(): typeof import("../../../src/casefile/lock") {
  const id = require.resolve("../../../src/casefile/lock");
  delete require.cache[id];
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require(id) as typeof import("../../../src/casefile/lock");
}

/** A pid that is not running: a child that has exited. */
async function deadPid(): Promise<number> {
  const gone = spawn(process.execPath, ["-e", ""], { stdio: "ignore" });
  await new Promise((resolve) => gone.on("exit", resolve));
  return gone.pid!;
}

describe("lock file: who holds it, as a person reads it", () => {
  it("names this process, its host and boot in the lock file, so a person (and the next writer) can tell whose it is", () => {
    const lock = freshLock().acquireLock(caseFile);
    try {
      const owner = JSON.parse(readFileSync(lockPath(caseFile), "utf8"));
      assert.deepEqual(
        [owner.pid, owner.hostname, owner.bootId],
        [process.pid, os.hostname(), bootId()],
        "the lock names this process, host and boot (trimmed, as /proc gives it with a newline)",
      );
      assert.ok(!Number.isNaN(Date.parse(owner.createdAt)), `createdAt is a time: ${owner.createdAt}`);
      assert.equal(lock.path, lockPath(caseFile), "the handle names the lock file");
      assert.equal(lock.tookOverFrom, undefined, "a lock taken on a free file took over nobody");
    } finally {
      lock.release();
    }
    assert.equal(existsSync(lockPath(caseFile)), false, "release removes the lock");
  });

  // Kills the mutants of the live-holder refusal (its message, its details).
  it("a live holder on this host is refused naming its pid and since when, and what to do", () => {
    writeLock({ pid: process.pid, hostname: os.hostname(), createdAt: "2026-01-01T00:00:00.000Z", bootId: bootId() });
    assert.throws(
      () => freshLock().acquireLock(caseFile),
      (e: unknown) =>
        isCasefileError(e) &&
        e.code === "CASE_FILE_LOCKED" &&
        e.message ===
          `${caseFile} is locked by pid ${process.pid} (since 2026-01-01T00:00:00.000Z). ` +
            `Close the run or inspector using it; if no such process uses the file, delete ${lockPath(caseFile)}.` &&
        JSON.stringify(e.details) ===
          JSON.stringify({
            file: caseFile,
            lock: lockPath(caseFile),
            holder: { pid: process.pid, hostname: os.hostname(), createdAt: "2026-01-01T00:00:00.000Z", bootId: bootId() },
          }),
    );
  });

  // Kills isAlive's `!== "ESRCH"` turned around: pid 1 exists (EPERM for a user, success for root): it is alive.
  it("a lock held by pid 1 (alive, maybe another user's) is refused, never taken over", () => {
    writeLock({ pid: 1, hostname: os.hostname(), createdAt: "2026-01-01T00:00:00.000Z" });
    assert.throws(() => acquireLock(caseFile), lockedBy(/is locked by pid 1 \(since/));
  });

  it("a lock on another host is refused with what to do, and its holder in the details", () => {
    const holder = { pid: 4242, hostname: "build-agent-7", createdAt: "2026-01-01T00:00:00.000Z" };
    writeLock(holder);
    assert.throws(
      () => acquireLock(caseFile),
      (e: unknown) =>
        isCasefileError(e) &&
        e.message ===
          `${caseFile} is locked by pid 4242 on host build-agent-7 (since 2026-01-01T00:00:00.000Z); ` +
            `this host cannot tell whether it is still running. If it is not, delete ${lockPath(caseFile)}.` &&
        JSON.stringify(e.details) === JSON.stringify({ file: caseFile, lock: lockPath(caseFile), holder }),
    );
  });

  // Kills the boot-id check (any of its three conditions): a lock from before a reboot is stale
  // even when a live process now has its pid (here: this very process).
  it("a lock written before the last reboot is taken over even when its pid is alive now", () => {
    const old = { pid: process.pid, hostname: os.hostname(), createdAt: "2026-01-01T00:00:00.000Z", bootId: "an-earlier-boot" };
    writeLock(old);
    const lock = freshLock().acquireLock(caseFile);
    try {
      assert.deepEqual(lock.tookOverFrom, old, "took over the lock from before the reboot, and says whose it was");
      assert.equal(JSON.parse(readFileSync(lockPath(caseFile), "utf8")).bootId, bootId(), "the lock is ours now");
    } finally {
      lock.release();
    }
  });

  it("a lock of a process that is gone is taken over; one whose pid or host is not what a lock holds is unreadable", async () => {
    const pid = await deadPid();
    writeLock({ pid, hostname: os.hostname(), createdAt: "2026-01-01T00:00:00.000Z" });
    const lock = acquireLock(caseFile);
    assert.equal(lock.tookOverFrom?.pid, pid, "took over from the gone process");
    lock.release();
    // Kills the shape check's conditions: a pid as a string, or no hostname, is no owner to trust.
    for (const text of [JSON.stringify({ pid: String(pid), hostname: os.hostname() }), JSON.stringify({ pid })]) {
      writeLock(text);
      assert.throws(() => acquireLock(caseFile), lockedBy(/is being created by another process$/), text);
    }
  });

  // Kills the invented owner of an old unreadable lock (pid 0, host "unknown", since its mtime).
  it("an old unreadable lock is taken over and reported as of unknown owner, since its last change", () => {
    writeLock("{garbled");
    const old = new Date("2026-01-01T12:00:00.000Z");
    utimesSync(lockPath(caseFile), old, old);
    const lock = acquireLock(caseFile);
    try {
      assert.deepEqual(lock.tookOverFrom, { pid: 0, hostname: "unknown", createdAt: old.toISOString() }, "the owner as far as known");
    } finally {
      lock.release();
    }
  });

  it("a lock being written right now is refused naming the lock file", () => {
    writeLock("");
    assert.throws(
      () => acquireLock(caseFile),
      (e: unknown) =>
        isCasefileError(e) &&
        e.message === `${caseFile} is locked: ${lockPath(caseFile)} is being created by another process` &&
        JSON.stringify(e.details) === JSON.stringify({ file: caseFile, lock: lockPath(caseFile) }),
    );
  });
});

describe("lock file: taking it against another process's moves", () => {
  // Kills the write loop's bound and step: a short write (a signal, some file systems) must not leave half an owner.
  it("writes the whole owner through a file system that writes a few bytes per call", () => {
    const short: CaseFileFs = { ...nodeFs, write: (fd, buf, offset, length) => nodeFs.write(fd, buf, offset, Math.min(length, 5)) };
    const lock = acquireLock(caseFile, short);
    try {
      assert.equal(JSON.parse(readFileSync(lockPath(caseFile), "utf8")).pid, process.pid, "the lock file holds the whole owner");
    } finally {
      lock.release();
    }
  });

  // Kills the removed fsync: after a power cut the lock must still name its owner (stale by boot
  // id), not be an empty file that every writer refuses for its grace period.
  it("the owner is durable when acquireLock returns: a power cut then leaves a lock that names it", () => {
    const fs = new PowerLossFs();
    const lock = acquireLock(caseFile, fs);
    fs.fsyncDir(dir);
    const after = path.join(dir, "after-reboot");
    fs.materialize(dir, after, "durable");
    assert.equal(JSON.parse(readFileSync(path.join(after, "c.casefile.lock"), "utf8")).pid, process.pid, "the durable lock names us");
    lock.release();
  });

  // Kills `code !== "EEXIST"` made false or true: an open that fails otherwise (permissions) is that error, not a lock.
  it("an open of the lock that fails for another reason than EEXIST is reported as it is", () => {
    const denied: CaseFileFs = {
      ...nodeFs,
      open: () => {
        throw Object.assign(new Error("EACCES: permission denied, open"), { code: "EACCES" });
      },
    };
    assert.throws(() => acquireLock(caseFile, denied), /^Error: EACCES: permission denied, open$/);
  });

  // Kills `if (!stale) continue` dropped: a lock that vanishes between our open and our read
  // (its holder released it) is simply tried again, and taken with nobody taken over from.
  it("a lock that vanishes between the open and the read is taken on the next try", () => {
    let opens = 0;
    const racing: CaseFileFs = {
      ...nodeFs,
      open: (p, flags) => {
        if (++opens === 1) throw Object.assign(new Error("EEXIST: file already exists, open"), { code: "EEXIST" });
        return nodeFs.open(p, flags);
      },
    };
    const lock = acquireLock(caseFile, racing);
    try {
      assert.equal(opens, 2, "opened again after the lock vanished");
      assert.equal(lock.tookOverFrom, undefined, "took over nobody");
    } finally {
      lock.release();
    }
  });

  // Kills the round count (fewer tries would refuse a takeover that takes two; more, a loop
  // longer than said) and the final refusal's message.
  it("gives up with CASE_FILE_LOCKED after three tries when another process keeps re-taking a stale lock", async () => {
    const pid = await deadPid();
    let opens = 0;
    const contended: CaseFileFs = {
      ...nodeFs,
      open: (p, flags) => {
        opens++;
        if (flags === "wx") writeFileSync(p, JSON.stringify({ pid, hostname: os.hostname(), createdAt: `try ${opens}` }));
        return nodeFs.open(p, flags);
      },
    };
    assert.throws(
      () => acquireLock(caseFile, contended),
      (e: unknown) =>
        isCasefileError(e) &&
        e.code === "CASE_FILE_LOCKED" &&
        e.message === `${caseFile} is locked: another process keeps taking ${lockPath(caseFile)}` &&
        JSON.stringify(e.details) === JSON.stringify({ file: caseFile, lock: lockPath(caseFile) }),
    );
    assert.equal(opens, 3, "three tries");
  });
});

describe("lock file: release", () => {
  // Kills the inode half of removeIfSame: the same text in another file (a new lock written by
  // a process that read ours) is not ours.
  it("leaves a lock with the same text but another inode", () => {
    const lock = acquireLock(caseFile);
    const text = readFileSync(lockPath(caseFile), "utf8");
    writeFileSync(lockPath(caseFile) + ".other", text);
    renameSync(lockPath(caseFile) + ".other", lockPath(caseFile));
    lock.release();
    assert.equal(existsSync(lockPath(caseFile)), true, "another process's lock file (same text, new inode) was removed");
  });

  // Kills the ENOENT check of removeIfSame made to swallow everything or nothing.
  it("a lock already gone is no error; a folder that became a file is reported", () => {
    const gone = acquireLock(caseFile);
    rmSync(lockPath(caseFile));
    gone.release();
    const sub = path.join(dir, "sub");
    mkdirSync(sub);
    const inSub = acquireLock(path.join(sub, "c.casefile"));
    rmSync(sub, { recursive: true });
    writeFileSync(sub, "now a file");
    assert.throws(() => inSub.release(), /ENOTDIR/);
  });
});

describe("lock file: a writer that waits", () => {
  // Kills the poll interval's Math.min made Math.max: the waiter would sleep its whole wait
  // (a minute here, past the test's timeout) instead of looking again every 50 ms.
  it("takes the lock soon after its holder releases it, long before its wait is up", async function () {
    this.timeout(20_000);
    const holder = acquireLock(caseFile);
    setTimeout(() => holder.release(), 100);
    const lock = await acquireLockWaiting(caseFile, 60_000);
    assert.equal(JSON.parse(readFileSync(lockPath(caseFile), "utf8")).pid, process.pid, "the waiter holds the lock");
    lock.release();
  });

  // Kills the rethrow conditions: a waiter does not wait out an error that waiting cannot cure.
  it("does not wait on an error that is not CASE_FILE_LOCKED", async function () {
    this.timeout(20_000);
    const denied: CaseFileFs = {
      ...nodeFs,
      open: () => {
        throw Object.assign(new Error("EACCES: permission denied, open"), { code: "EACCES" });
      },
    };
    await assert.rejects(acquireLockWaiting(caseFile, 60_000, denied), /^Error: EACCES: permission denied, open$/);
  });

  it("says how long it waited, with the holder's details", async () => {
    const holder = acquireLock(caseFile);
    try {
      await assert.rejects(
        acquireLockWaiting(caseFile, 120),
        (e: unknown) =>
          isCasefileError(e) &&
          e.message.endsWith(`delete ${lockPath(caseFile)}. (still locked after waiting 0.12 s)`) &&
          (e.details as { holder?: { pid?: number } }).holder?.pid === process.pid,
      );
    } finally {
      holder.release();
    }
  });
});
