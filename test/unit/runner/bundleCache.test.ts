import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { openCaseFile } from "../../../src/casefile/index";
import { bundleCacheDir } from "../../../src/runner/bundleCache";
import { runSession } from "../../../src/runner/session";

/**
 * The workflow bundle cache (src/runner/bundleCache.ts): a run of an unchanged workflow reuses
 * its bundle, and a run after an edit, of the workflow or of a file it imports, or after a file
 * that changes what an import resolves to was added, runs the edited code. What a run did is
 * read back from its case file on disk. Files are dated a minute back, as a file saved before
 * the Run is (a file written while its bundle is built is never cached, see the last case).
 */

const WORKFLOW = (label: string) => `
import { code, defineWorkflow, z } from "casefile";
import { suffix } from "./helper";
export default defineWorkflow({
  name: "cached",
  version: 1,
  state: { out: z.string() },
  start: "write",
  executors: { write: code({ owns: ["out"], run: (ctx) => ctx.write("out", "${label}" + suffix) }) },
  edges: [],
});
`;

describe("workflow bundle cache", () => {
  let dir: string;
  let cacheDir: string;
  const saved = process.env.CASEFILE_CACHE_DIR;

  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "casefile-bundle-cache-"));
    cacheDir = mkdtempSync(path.join(os.tmpdir(), "casefile-bundle-cache-dir-"));
    process.env.CASEFILE_CACHE_DIR = cacheDir;
  });
  afterEach(() => {
    if (saved === undefined) delete process.env.CASEFILE_CACHE_DIR;
    else process.env.CASEFILE_CACHE_DIR = saved;
    rmSync(dir, { recursive: true, force: true });
    rmSync(cacheDir, { recursive: true, force: true });
  });

  /** Writes a file dated `agoMs` back (its folder too: an edit in place leaves the folder's date alone). */
  const write = (name: string, text: string, agoMs = 60_000): void => {
    const file = path.join(dir, name);
    writeFileSync(file, text);
    const t = (Date.now() - agoMs) / 1000;
    utimesSync(file, t, t);
    utimesSync(dir, t, t);
  };

  /** Runs the workflow into a fresh case file and returns what it wrote, read back from disk. */
  let runs = 0;
  const run = async (): Promise<string> => {
    const caseFile = path.join(dir, `run${++runs}.casefile`);
    const result = await runSession({ kind: "run", workflowPath: path.join(dir, "workflow.ts"), caseFile }, { env: {} });
    assert.equal(result.status, "completed", JSON.stringify(result.error));
    const store = await openCaseFile(caseFile, { readOnly: true });
    try {
      const latest = store.latestCheckpoint(store.listRuns()[0]!.id)!;
      return store.readValues(latest.keys).out as string;
    } finally {
      store.close();
    }
  };
  const entries = (): { name: string; mtimeMs: number }[] =>
    readdirSync(path.join(cacheDir, "bundles")).map((name) => ({ name, mtimeMs: statSync(path.join(cacheDir, "bundles", name)).mtimeMs }));

  it("lives under $CASEFILE_CACHE_DIR, is off with CASEFILE_CACHE_DIR=off, else in the user's cache folder", () => {
    assert.equal(bundleCacheDir({ CASEFILE_CACHE_DIR: "/x/y" }), path.resolve("/x/y/bundles"));
    assert.equal(bundleCacheDir({ CASEFILE_CACHE_DIR: "off" }), undefined);
    assert.ok(bundleCacheDir({})!.startsWith(os.homedir()), bundleCacheDir({}));
  });

  it("reuses the bundle of an unchanged workflow", async () => {
    write("helper.ts", `export const suffix = "-a";`);
    write("workflow.ts", WORKFLOW("v1"));
    assert.equal(await run(), "v1-a");
    const first = entries();
    assert.equal(first.length, 1, "one cached bundle");
    assert.equal(await run(), "v1-a");
    assert.deepEqual(entries(), first, "the second run used the entry and did not write it again");
  });

  it("runs the edited workflow, not the cached bundle, after the workflow file is edited", async () => {
    write("helper.ts", `export const suffix = "-a";`);
    write("workflow.ts", WORKFLOW("v1"));
    assert.equal(await run(), "v1-a");
    assert.equal(entries().length, 1, "the first run's bundle is cached");
    write("workflow.ts", WORKFLOW("v2"));
    assert.equal(await run(), "v2-a");
    assert.equal(await run(), "v2-a");
  });

  it("runs the edited code after a file the workflow imports is edited, even with its size and date unchanged", async () => {
    write("helper.ts", `export const suffix = "-a";`);
    write("workflow.ts", WORKFLOW("v1"));
    assert.equal(await run(), "v1-a");
    assert.equal(entries().length, 1, "the first run's bundle is cached");
    const before = statSync(path.join(dir, "helper.ts"));
    // Same length, and dated exactly as before: only the content tells.
    writeFileSync(path.join(dir, "helper.ts"), `export const suffix = "-b";`);
    utimesSync(path.join(dir, "helper.ts"), before.atime, before.mtime);
    assert.equal(statSync(path.join(dir, "helper.ts")).size, before.size);
    assert.equal(await run(), "v1-b");
  });

  it("follows an import to a file added beside the one it resolved to before", async () => {
    write("helper.js", `exports.suffix = "-js";`);
    write("workflow.ts", WORKFLOW("v1"));
    assert.equal(await run(), "v1-js");
    assert.equal(entries().length, 1, "the first run's bundle is cached");
    // esbuild prefers helper.ts to helper.js for "./helper": the folder gained an entry.
    writeFileSync(path.join(dir, "helper.ts"), `export const suffix = "-ts";`);
    assert.equal(await run(), "v1-ts");
  });

  it("does not keep a bundle whose files were written while it was built", async () => {
    write("helper.ts", `export const suffix = "-a";`);
    write("workflow.ts", WORKFLOW("v1"), 0); // just saved: esbuild may read it mid-write
    assert.equal(await run(), "v1-a");
    assert.deepEqual(existsSync(path.join(cacheDir, "bundles")) ? entries() : [], [], "nothing cached");
  });

  it("bundles again when the cache is off", async () => {
    process.env.CASEFILE_CACHE_DIR = "off";
    write("helper.ts", `export const suffix = "-a";`);
    write("workflow.ts", WORKFLOW("v1"));
    assert.equal(await run(), "v1-a");
    write("workflow.ts", WORKFLOW("v2"));
    assert.equal(await run(), "v2-a");
  });
});
