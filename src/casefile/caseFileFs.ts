import { closeSync, fsyncSync, ftruncateSync, openSync, renameSync, rmSync, writeSync } from "node:fs";

/**
 * The file-system calls a case-file writer makes: every open, write, fsync, truncate, rename and
 * removal of the journal, the compaction's temp file, the database file and the lock goes through
 * one of these. The store takes it in OpenOptions (`fs`; default `nodeFs`) so that a test can wrap
 * it, record what was made durable, and reproduce what a power loss at any point would leave
 * (test/unit/casefile/helpers/powerLossFs.ts). Reads go to node:fs directly: they see the files
 * as they are, which is what a writer before a crash sees too.
 */
export interface CaseFileFs {
  /** node:fs flags: "a" (journal), "w" (compaction's temp file), "wx" (lock), "r". Returns a descriptor. */
  open(path: string, flags: string): number;
  /** Writes `length` bytes of `buf` from `offset` at the descriptor's position; returns how many were written. */
  write(fd: number, buf: Uint8Array, offset: number, length: number): number;
  /** Makes the file's data durable (not its name: that takes `fsyncDir`). */
  fsync(fd: number): void;
  ftruncate(fd: number, length: number): void;
  close(fd: number): void;
  /** Atomic replace of `to`; durable once `fsyncDir` of its folder returns. */
  rename(from: string, to: string): void;
  /** Removes the file; a missing file is not an error. */
  remove(path: string): void;
  /** Makes the folder's entries (creates, renames, removals) durable. */
  fsyncDir(dir: string): void;
}

export const nodeFs: CaseFileFs = {
  open: (path, flags) => openSync(path, flags),
  write: (fd, buf, offset, length) => writeSync(fd, buf, offset, length),
  fsync: (fd) => fsyncSync(fd),
  ftruncate: (fd, length) => ftruncateSync(fd, length),
  close: (fd) => closeSync(fd),
  rename: (from, to) => renameSync(from, to),
  remove: (path) => rmSync(path, { force: true }),
  fsyncDir: (dir) => {
    // Windows cannot open a directory; its renames are durable by other means.
    if (process.platform === "win32") return;
    const fd = openSync(dir, "r");
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  },
};
