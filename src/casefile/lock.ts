import { fstatSync, readFileSync, statSync } from "node:fs";
import os from "node:os";
import { CasefileError } from "../engine/errors";
import { nodeFs, type CaseFileFs } from "./caseFileFs";

/**
 * One writer per case file: `<file>.lock`, created with O_EXCL, holding who owns it. Readers take
 * no lock; they read the database and the journal, which the writer only ever appends to or
 * replaces atomically.
 */

export interface LockOwner {
  pid: number;
  hostname: string;
  createdAt: string;
  /** Linux boot id: a lock written before the last reboot is stale whatever its pid says now. */
  bootId?: string;
}

export interface LockHandle {
  path: string;
  owner: LockOwner;
  /** Set when a stale lock (its process gone) was taken over: who held it. */
  tookOverFrom?: LockOwner;
  release(): void;
}

/** How long an unreadable lock file may exist before it is taken for a crash while writing it. */
const UNREADABLE_GRACE_MS = 5000;

export function lockPath(caseFile: string): string {
  return caseFile + ".lock";
}

export function acquireLock(caseFile: string, fs: CaseFileFs = nodeFs): LockHandle {
  const path = lockPath(caseFile);
  const owner: LockOwner = { pid: process.pid, hostname: os.hostname(), createdAt: new Date().toISOString() };
  const bootId = currentBootId();
  if (bootId) owner.bootId = bootId;

  let tookOverFrom: LockOwner | undefined;
  // A few rounds: one may find a stale lock and remove it, the next then creates ours.
  for (let round = 0; round < 3; round++) {
    let fd: number;
    try {
      fd = fs.open(path, "wx");
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
      const stale = inspectExisting(path, caseFile);
      if (!stale) continue; // vanished between our open and our read: try again
      tookOverFrom = stale.owner;
      removeIfSame(path, stale.ino, stale.text, fs);
      continue;
    }
    try {
      const text = JSON.stringify(owner);
      const bytes = Buffer.from(text, "utf8");
      let written = 0;
      while (written < bytes.length) written += fs.write(fd, bytes, written, bytes.length - written);
      fs.fsync(fd);
      const ino = fstatSync(fd).ino;
      const handle: LockHandle = {
        path,
        owner,
        release: () => removeIfSame(path, ino, text, fs),
      };
      if (tookOverFrom) handle.tookOverFrom = tookOverFrom;
      return handle;
    } finally {
      fs.close(fd);
    }
  }
  throw new CasefileError("CASE_FILE_LOCKED", `${caseFile} is locked: another process keeps taking ${path}`, {
    file: caseFile,
    lock: path,
  });
}

/** How often a writer that waits for the lock (`waitMs`) looks again. */
const WAIT_POLL_MS = 50;

/**
 * `acquireLock`, but a lock another process holds is waited for, up to `waitMs`, before
 * CASE_FILE_LOCKED is thrown (saying how long it waited). For short writers that a person may
 * well run twice at once (two `respond`s to one request, two `rules` edits): the second then
 * sees what the first wrote instead of a lock error. `waitMs` 0 is acquireLock.
 */
export async function acquireLockWaiting(caseFile: string, waitMs: number, fs: CaseFileFs = nodeFs): Promise<LockHandle> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    try {
      return acquireLock(caseFile, fs);
    } catch (e) {
      // Stryker disable next-line ConditionalExpression: acquireLock throws CASE_FILE_LOCKED CasefileErrors and plain errors only, so either of the first two tests alone sorts them the same
      if (!(e instanceof CasefileError) || e.code !== "CASE_FILE_LOCKED" || waitMs <= 0) throw e;
      // Stryker disable next-line EqualityOperator: at the very millisecond of the deadline either answer is right
      if (Date.now() >= deadline) {
        throw new CasefileError("CASE_FILE_LOCKED", `${e.message} (still locked after waiting ${waitMs / 1000} s)`, e.details);
      }
      // Stryker disable next-line MethodExpression,ArithmeticOperator: the last poll may land up to 50 ms past the deadline or come every 1 ms; either way the wait ends with the same answer
      await new Promise((resolve) => setTimeout(resolve, Math.min(WAIT_POLL_MS, Math.max(1, deadline - Date.now()))));
    }
  }
}

/**
 * Reads the lock another process holds. Returns it if it is stale (its process is gone), throws
 * CASE_FILE_LOCKED naming the holder if it may be live, and undefined if it disappeared.
 */
function inspectExisting(path: string, caseFile: string): { owner: LockOwner; ino: number; text: string } | undefined {
  let text: string;
  let ino: number;
  let mtimeMs: number;
  try {
    const st = statSync(path);
    ino = st.ino;
    mtimeMs = st.mtimeMs;
    text = readFileSync(path, "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw e;
  }
  let owner: LockOwner | undefined;
  try {
    const parsed = JSON.parse(text) as Partial<LockOwner>;
    if (typeof parsed.pid === "number" && typeof parsed.hostname === "string") owner = parsed as LockOwner;
  } catch {
    owner = undefined;
  }
  if (!owner) {
    // Empty or garbled: either its writer is between open and write right now, or it crashed there.
    // Stryker disable next-line EqualityOperator: at exactly the grace period either answer is right
    if (Date.now() - mtimeMs < UNREADABLE_GRACE_MS) {
      throw new CasefileError("CASE_FILE_LOCKED", `${caseFile} is locked: ${path} is being created by another process`, {
        file: caseFile,
        lock: path,
      });
    }
    return { owner: { pid: 0, hostname: "unknown", createdAt: new Date(mtimeMs).toISOString() }, ino, text };
  }
  if (owner.hostname !== os.hostname()) {
    throw new CasefileError(
      "CASE_FILE_LOCKED",
      `${caseFile} is locked by pid ${owner.pid} on host ${owner.hostname} (since ${owner.createdAt}); ` +
        `this host cannot tell whether it is still running. If it is not, delete ${path}.`,
      { file: caseFile, lock: path, holder: owner },
    );
  }
  const bootId = currentBootId();
  if (owner.bootId && bootId && owner.bootId !== bootId) return { owner, ino, text };
  if (isAlive(owner.pid)) {
    throw new CasefileError(
      "CASE_FILE_LOCKED",
      `${caseFile} is locked by pid ${owner.pid} (since ${owner.createdAt}). ` +
        `Close the run or inspector using it; if no such process uses the file, delete ${path}.`,
      { file: caseFile, lock: path, holder: owner },
    );
  }
  return { owner, ino, text };
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    // EPERM: the process exists but belongs to another user, so it is alive.
    return (e as NodeJS.ErrnoException).code !== "ESRCH";
  }
}

/**
 * Unlinks the lock only if it is still the file we looked at: same inode and same content (an
 * inode number alone can be reused by a new lock file). Two processes taking over the same stale
 * lock at the same instant could still race between the check and the unlink; the window is a
 * few microseconds and needs a crashed writer first, which we accept over a lock daemon.
 */
function removeIfSame(path: string, ino: number, text: string, fs: CaseFileFs): void {
  try {
    if (statSync(path).ino === ino && readFileSync(path, "utf8") === text) fs.remove(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
  }
}

let bootIdCache: string | null | undefined;
function currentBootId(): string | undefined {
  if (bootIdCache === undefined) {
    try {
      bootIdCache = readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim() || null;
    } catch {
      bootIdCache = null;
    }
  }
  return bootIdCache ?? undefined;
}
