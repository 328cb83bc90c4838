import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { BuildOptions } from "esbuild";

/**
 * Workflow bundles kept on disk, so that running a workflow whose files have not changed skips
 * esbuild altogether (starting esbuild's service process and bundling cost a run more than the
 * rest of its start). One entry per workflow file, bundle options, esbuild version and working
 * directory. An entry is used only when
 *   - every file the bundle was built from has the content it had (SHA-256 of each, read again
 *     on every use: a date or size can stay the same across an edit);
 *   - no folder holding one of them gained or lost a source file or a subfolder (a new
 *     `helper.ts` beside a bundled `helper.js`, or a `node_modules`, changes what an import
 *     resolves to); case files, journals and locks beside the workflow do not count;
 *   - every tsconfig.json, jsconfig.json and package.json in those folders and above them has
 *     the content it had (esbuild reads them for paths, JSX and package entry points).
 * Anything else, or an entry that does not read, is a miss: the workflow is bundled again and the
 * entry replaced. A bundle is stored only if none of its files was written since just before the
 * build started, so an entry never pairs code esbuild read with a later file's hash.
 *
 * Where: $CASEFILE_CACHE_DIR/bundles if set ("off" turns the cache off), else the user's cache
 * folder (~/.cache/casefile, ~/Library/Caches/casefile, %LOCALAPPDATA%\casefile\Cache). Never a
 * shared temporary folder: an entry is code the runner executes.
 */

/** What bundle.ts reads of a build: the same shape as esbuild's result, from esbuild or the cache. */
export interface WorkflowBuild {
  outputFiles: { path: string; text: string }[];
  metafile: { inputs: Record<string, unknown> };
  /** True when the bundle came from the cache (esbuild was not run). */
  cached: boolean;
}

export type WorkflowBuildOptions = BuildOptions & { entryPoints: [string]; write: false; metafile: true };

interface Entry {
  format: typeof FORMAT;
  key: string;
  inputs: { path: string; sha256: string }[];
  /** Per folder of an input: its source files and subfolders (`listing`). */
  dirs: { path: string; listing: string }[];
  /** tsconfig.json, jsconfig.json, package.json in those folders and above: content hash, or null if absent. */
  configs: { path: string; sha256: string | null }[];
  outputFiles: { path: string; text: string }[];
  metaInputs: string[];
}

const FORMAT = 2;
/** What counts in a folder's listing: what an import can resolve to. */
const SOURCE = /\.([cm]?[jt]sx?|json|node)$/;
const CONFIGS = ["tsconfig.json", "jsconfig.json", "package.json"];
/** Entries kept; the least recently written go first. */
const MAX_ENTRIES = 64;

/** The cache folder, or undefined when the cache is off or no user cache folder is known. */
export function bundleCacheDir(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const set = env.CASEFILE_CACHE_DIR;
  if (set !== undefined && set !== "") return set === "off" ? undefined : path.join(path.resolve(set), "bundles");
  let home: string;
  try {
    home = os.homedir();
  } catch {
    return undefined;
  }
  if (!home) return undefined;
  const base =
    process.platform === "win32"
      ? path.join(env.LOCALAPPDATA || path.join(home, "AppData", "Local"), "casefile", "Cache")
      : process.platform === "darwin"
        ? path.join(home, "Library", "Caches", "casefile")
        : path.join(env.XDG_CACHE_HOME || path.join(home, ".cache"), "casefile");
  return path.join(base, "bundles");
}

/**
 * Bundles `options.entryPoints[0]` with esbuild, or returns the cached bundle of it when nothing
 * it was built from changed. esbuild's errors are thrown as esbuild throws them.
 */
export async function buildWorkflow(options: WorkflowBuildOptions, env: NodeJS.ProcessEnv = process.env): Promise<WorkflowBuild> {
  const dir = bundleCacheDir(env);
  const entry = path.resolve(options.entryPoints[0]);
  const key = sha256(JSON.stringify({ FORMAT, options, esbuild: esbuildVersion(), cwd: process.cwd() }));
  const file = dir ? path.join(dir, `${sha256(`${key}\0${entry}`).slice(0, 40)}.json`) : undefined;
  if (file) {
    const hit = readEntry(file, key);
    if (hit)
      return { outputFiles: hit.outputFiles, metafile: { inputs: Object.fromEntries(hit.metaInputs.map((p) => [p, {}])) }, cached: true };
  }
  const started = Date.now();
  // require, not import(): in the CLI's and runner's bundles an import() of a package left out
  // of them stays a real dynamic import, and Node's ESM loader then scans esbuild's CommonJS
  // main for its exports before running it (~40 ms of a first run's start, measured here).
  // esbuild's main loads node:worker_threads (~5 ms) for buildSync and transformSync alone,
  // unless ESBUILD_WORKER_THREADS=0 when it is first required: only build() is called here. The
  // variable is put back at once, so the workflow's own processes inherit what the user set.
  const workers = process.env.ESBUILD_WORKER_THREADS;
  process.env.ESBUILD_WORKER_THREADS = "0";
  let esbuild: typeof import("esbuild");
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    esbuild = require("esbuild") as typeof import("esbuild");
  } finally {
    if (workers === undefined) delete process.env.ESBUILD_WORKER_THREADS;
    else process.env.ESBUILD_WORKER_THREADS = workers;
  }
  const result = await esbuild.build(options);
  const outputFiles = result.outputFiles.map((f) => ({ path: f.path, text: f.text }));
  if (file && dir) writeEntry(dir, file, key, started, outputFiles, Object.keys(result.metafile.inputs));
  return { outputFiles, metafile: result.metafile, cached: false };
}

/** The entry if it is for this key and every input still has the content it was built from. */
function readEntry(file: string, key: string): Entry | undefined {
  let entry: Entry;
  try {
    entry = JSON.parse(readFileSync(file, "utf8")) as Entry;
  } catch {
    return undefined; // none yet, or unreadable: bundle again (and replace it)
  }
  if (entry?.format !== FORMAT || entry.key !== key) return undefined;
  try {
    for (const i of entry.inputs) if (sha256(readFileSync(i.path)) !== i.sha256) return undefined;
    for (const d of entry.dirs) if (listing(d.path) !== d.listing) return undefined;
    for (const c of entry.configs) if (contentHash(c.path) !== c.sha256) return undefined;
  } catch {
    return undefined; // a file or folder is gone: esbuild says what is missing
  }
  return entry;
}

/**
 * Stores a bundle unless one of its inputs was written since just before the build started:
 * then esbuild may have read other content than the hash taken now. The slack covers file-system
 * clocks that stamp a little behind ours, and whole seconds where the file system keeps no less.
 */
function writeEntry(
  dir: string,
  file: string,
  key: string,
  started: number,
  outputFiles: Entry["outputFiles"],
  metaInputs: string[],
): void {
  try {
    const inputs: Entry["inputs"] = [];
    const dirs = new Set<string>();
    const settled = (mtimeMs: number): boolean => mtimeMs < started - (mtimeMs % 1000 === 0 ? 2000 : 50);
    for (const rel of metaInputs) {
      const abs = path.resolve(rel);
      const st = statSync(abs);
      if (!st.isFile() || !settled(st.mtimeMs)) return;
      inputs.push({ path: abs, sha256: sha256(readFileSync(abs)) });
      dirs.add(path.dirname(abs));
    }
    const above = new Set<string>();
    for (const d of dirs) for (let a = d; !above.has(a); a = path.dirname(a)) above.add(a);
    const configs = [...above].flatMap((a) => CONFIGS.map((n) => path.join(a, n))).map((p) => ({ path: p, sha256: contentHash(p) }));
    const entry: Entry = {
      format: FORMAT,
      key,
      inputs,
      dirs: [...dirs].map((d) => ({ path: d, listing: listing(d) })),
      configs,
      outputFiles,
      metaInputs,
    };
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify(entry), { mode: 0o600 });
    renameSync(tmp, file);
    prune(dir);
  } catch {
    // No cache this time (a read-only or full disk): the run goes on with the bundle it has.
  }
}

function prune(dir: string): void {
  const names = readdirSync(dir).filter((n) => n.endsWith(".json"));
  if (names.length <= MAX_ENTRIES) return;
  const byAge = names.map((n) => ({ n, t: statSync(path.join(dir, n)).mtimeMs })).sort((a, b) => a.t - b.t);
  for (const { n } of byAge.slice(0, names.length - MAX_ENTRIES)) rmSync(path.join(dir, n), { force: true });
}

/** The source files and subfolders of a folder, as one hash. */
function listing(dir: string): string {
  const names = readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory() || SOURCE.test(e.name))
    .map((e) => (e.isDirectory() ? `${e.name}/` : e.name))
    .sort();
  return sha256(names.join("\n"));
}

/** A file's content hash, or null when there is no such file. */
function contentHash(file: string): string | null {
  try {
    return sha256(readFileSync(file));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT" || (e as NodeJS.ErrnoException).code === "ENOTDIR") return null;
    throw e;
  }
}

function esbuildVersion(): string {
  try {
    return (JSON.parse(readFileSync(require.resolve("esbuild/package.json"), "utf8")) as { version: string }).version;
  } catch {
    return "unknown";
  }
}

function sha256(data: string | Buffer): string {
  return createHash("sha256").update(data).digest("hex");
}
