/**
 * The printed table and the results file of the peer benchmark. The results file of the previous
 * run, if there is one, is read before it is replaced, and each row is compared with the row of
 * the same id in it.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fmtBytes } from "./measure";
import type { Row } from "./measure";

export interface Results {
  at: string;
  machine: { cpus: number; cpuModel?: string; platform: string; node: string; loadAvgAtStart: number[]; loadAvgAtEnd: number[] };
  versions: Record<string, string>;
  /** The code measured: HEAD, and files under src/ that differed from it (others may be mid-change). */
  source?: { commit: string; uncommittedInSrc: string[] };
  sizes: Record<string, number>;
  durationS: number;
  rows: Row[];
  previous?: { at: string; changes: Change[] };
}

export interface Change {
  id: string;
  oursBefore: number;
  oursNow: number;
  /** (now - before) / before of ours. */
  oursChange: number;
  ratioBefore?: number;
  ratioNow?: number;
}

export function fmtValue(v: number | undefined, unit: Row["unit"]): string {
  if (v === undefined || !Number.isFinite(v)) return "-";
  switch (unit) {
    case "bytes":
      return fmtBytes(v);
    case "ms/superstep":
      return `${v.toFixed(4)} ms`;
    case "ms":
      return `${v.toFixed(1)} ms`;
    case "x":
      return `${v.toFixed(2)}x`;
  }
}

/** The table as lines of text: one line per measure, the two sides' setups on the line below. */
export function table(rows: Row[]): string[] {
  const cols = [64, 14, 14, 12, 36];
  const line = (cells: string[]): string =>
    cells
      .map((c, i) => (i < cols.length ? c.padEnd(cols[i]!) : c))
      .join(" ")
      .trimEnd();
  const out = [line(["measure", "ours", "theirs", "ours/theirs", "target", "met"]), "-".repeat(150)];
  let scenario = "";
  for (const r of rows) {
    if (r.scenario !== scenario) {
      scenario = r.scenario;
      out.push(scenario);
    }
    const ratio = r.ratio === undefined ? "-" : r.ratio < 0.01 ? r.ratio.toExponential(1) : r.ratio.toFixed(3);
    const met = r.met === undefined ? "" : r.met ? "yes" : "NO";
    out.push(line([`  ${r.measure}`, fmtValue(r.ours, r.unit), fmtValue(r.theirs, r.unit), ratio, r.target ?? "", met]));
    const sides =
      `ours: ${r.oursLabel}` + (r.theirsLabel ? `; theirs: ${r.theirsLabel}` : "") + `; ${r.reps} rep${r.reps === 1 ? "" : "s"}`;
    out.push(`      ${sides}${r.note ? ` (${r.note})` : ""}`);
  }
  return out;
}

export function compare(previous: Results, rows: Row[]): Change[] {
  const before = new Map(previous.rows.map((r) => [r.id, r]));
  const changes: Change[] = [];
  for (const r of rows) {
    const p = before.get(r.id);
    if (!p) continue;
    changes.push({
      id: r.id,
      oursBefore: p.ours,
      oursNow: r.ours,
      oursChange: (r.ours - p.ours) / p.ours,
      ratioBefore: p.ratio,
      ratioNow: r.ratio,
    });
  }
  return changes;
}

export function changeLines(previous: Results, changes: Change[], rows: Row[]): string[] {
  const unit = new Map(rows.map((r) => [r.id, r.unit]));
  const out = [`Compared with the previous results (${previous.at}):`];
  for (const c of changes) {
    const u = unit.get(c.id)!;
    const pct = `${c.oursChange >= 0 ? "+" : ""}${(c.oursChange * 100).toFixed(0)}%`;
    const ratio =
      c.ratioBefore !== undefined && c.ratioNow !== undefined
        ? `; ours/theirs ${c.ratioBefore.toFixed(3)} -> ${c.ratioNow.toFixed(3)}`
        : "";
    out.push(`  ${c.id.padEnd(22)} ours ${fmtValue(c.oursBefore, u)} -> ${fmtValue(c.oursNow, u)} (${pct})${ratio}`);
  }
  return out;
}

export function machine(loadAvgAtStart: number[]): Results["machine"] {
  return {
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model,
    platform: os.platform(),
    node: process.version,
    loadAvgAtStart,
    loadAvgAtEnd: os.loadavg(),
  };
}

/** Versions of the peers, read from their installed package.json files. */
export function peerVersions(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of [
    "@langchain/langgraph",
    "@langchain/langgraph-checkpoint",
    "@langchain/langgraph-checkpoint-sqlite",
    "@langchain/core",
    "better-sqlite3",
    "sql.js",
  ]) {
    try {
      const file = require.resolve(`${name}/package.json`);
      out[name] = (JSON.parse(readFileSync(file, "utf8")) as { version: string }).version;
    } catch {
      out[name] = "unknown";
    }
  }
  return out;
}

export function sourceState(): Results["source"] {
  try {
    const git = (...args: string[]): string =>
      execFileSync("git", args, { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trimEnd();
    const status = git("status", "--porcelain", "--", "src");
    return { commit: git("rev-parse", "HEAD").trim(), uncommittedInSrc: status ? status.split("\n").map((l) => l.slice(3)) : [] };
  } catch {
    return undefined;
  }
}

/**
 * Writes `results` to `<dir>/peers.json`, after reading the file it replaces: returns that
 * previous run's results (if any) with the changes against it, which are also stored in the new file.
 */
export function writeResults(dir: string, results: Results): { file: string; previous?: Results; changes?: Change[] } {
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, "peers.json");
  let previous: Results | undefined;
  if (existsSync(file)) {
    try {
      previous = JSON.parse(readFileSync(file, "utf8")) as Results;
    } catch {
      previous = undefined;
    }
  }
  const changes = previous ? compare(previous, results.rows) : undefined;
  if (previous && changes) results.previous = { at: previous.at, changes };
  writeFileSync(file, JSON.stringify(results, null, 2) + "\n");
  return { file, previous, changes };
}
