/**
 * Small helpers shared by the peer scenarios: timing, medians, bytes on disk, scratch files, and
 * the row every scenario returns. Rows are plain data so that the report can print them and
 * write them to JSON unchanged.
 */
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, readdirSync, rmSync, statSync } from "node:fs";
import path from "node:path";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

/** One line of the printed table: a measure, ours beside theirs, and the target it is held to. */
export interface Row {
  /** Stable id across runs, used to compare with the previous results file. */
  id: string;
  scenario: string;
  measure: string;
  unit: "ms" | "ms/superstep" | "bytes" | "x";
  ours: number;
  oursLabel: string;
  theirs?: number;
  theirsLabel?: string;
  /** ours / theirs, of the medians. */
  ratio?: number;
  /** Human statement of the target, e.g. "ours/theirs <= 0.1". */
  target?: string;
  met?: boolean;
  reps: number;
  /** Every sample, ours then theirs, for whoever wants more than the median. */
  samples?: { ours: number[]; theirs?: number[] };
  note?: string;
}

export function now(): bigint {
  return process.hrtime.bigint();
}

export function msSince(start: bigint): number {
  return Number(process.hrtime.bigint() - start) / 1e6;
}

/** CPU time (user + system, all threads) since `start`, in ms: less sensitive than wall time to a busy machine. */
export function cpuMsSince(start: NodeJS.CpuUsage): number {
  const d = process.cpuUsage(start);
  return (d.user + d.system) / 1000;
}

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

/**
 * A full collection, before a sample that compares ours with theirs: each sample then starts as
 * in a fresh process, with no garbage of the samples before it (a previous copy of the file, the
 * other side's objects) to be collected inside its timed part.
 */
export function collectGarbage(): void {
  gc();
}

export function median(xs: readonly number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** SQLite's side files and ours: whatever of them exists beside `file` counts as its size on disk. */
const SIDE_FILES = ["", "-wal", "-shm", "-journal", ".journal", ".tmp"];

export function bytesOnDisk(file: string): number {
  let total = 0;
  for (const suffix of SIDE_FILES) {
    const f = file + suffix;
    if (existsSync(f)) total += statSync(f).size;
  }
  return total;
}

/** Copies a database with whichever side files it has (journal, WAL), as a fresh case to open. */
/**
 * Copies `from` and its side files to `to`, then waits for the disk to settle: a timed part that
 * follows starts, as with a file written long before, with nothing of the copy or of the files the
 * samples before it removed or replaced still to be written out or discarded. (This disk is mounted
 * with `discard`: blocks freed by a removal or a compaction's rename are trimmed in the next
 * journal commit, and the first fsync inside a timed part paid for them, 1-4 ms at random.)
 */
export function copyWithSideFiles(from: string, to: string): void {
  for (const suffix of SIDE_FILES) {
    if (existsSync(to + suffix)) rmSync(to + suffix);
    if (existsSync(from + suffix)) copyFileSync(from + suffix, to + suffix);
  }
  settleDisk();
}

/** sync(1) twice: the second waits for the journal commit (and its discards) the first started. */
export function settleDisk(): void {
  execFileSync("sync");
  execFileSync("sync");
}

export function removeWithSideFiles(file: string): void {
  for (const suffix of [...SIDE_FILES, ".lock"]) rmSync(file + suffix, { force: true });
}

/** Removes every file in `dir` whose name starts with `prefix`. */
export function removeByPrefix(dir: string, prefix: string): void {
  for (const name of readdirSync(dir)) if (name.startsWith(prefix)) rmSync(path.join(dir, name), { force: true });
}

/** Rotates the order variants run in, rep by rep, so that no variant always runs first or last. */
export function rotated<T>(items: readonly T[], rep: number): T[] {
  const k = rep % items.length;
  return [...items.slice(k), ...items.slice(0, k)];
}

export type Log = (message: string) => void;

export function fmtBytes(n: number): string {
  if (n >= 1024 * 1024) return `${(n / (1024 * 1024)).toFixed(2)} MB`;
  if (n >= 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${n} B`;
}
