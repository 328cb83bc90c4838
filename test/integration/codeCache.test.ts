import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import Module from "node:module";
import path from "node:path";
import { root, tempDir } from "./helpers";

/**
 * bin/casefile.js keeps V8's compiled code of the bundles between runs (on Node 20 its own
 * loader, `vm.Script` cached data keyed by each bundle's SHA-256; from Node 22.1 Node's compile
 * cache). What a user can tell: the second run of a command prints what the first did from the
 * cache it left; a changed bundle runs as changed, even when its length is the same (V8 alone
 * would take the old code then); a cache that cannot be written or read changes nothing.
 * Each test runs a private copy of bin/ and dist/, which it may change.
 */
const nodeHasCompileCache = typeof (Module as { enableCompileCache?: unknown }).enableCompileCache === "function";

function install(): { dir: string; cli: string } {
  const dir = tempDir("casefile-codecache-");
  mkdirSync(path.join(dir, "bin"));
  mkdirSync(path.join(dir, "dist"));
  copyFileSync(path.join(root, "bin/casefile.js"), path.join(dir, "bin/casefile.js"));
  for (const f of readdirSync(path.join(root, "dist")))
    if (/\.(js|wasm|ranks)$/.test(f)) copyFileSync(path.join(root, "dist", f), path.join(dir, "dist", f));
  return { dir, cli: path.join(dir, "bin/casefile.js") };
}

function run(cli: string, args: string[], cache: string): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [cli, ...args], { env: { ...process.env, CASEFILE_CACHE_DIR: cache }, encoding: "utf8" });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** The cache's entries with their size and time written. */
function entries(cache: string): Map<string, string> {
  const dir = path.join(cache, "v8");
  if (!existsSync(dir)) return new Map();
  return new Map(
    readdirSync(dir, { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile())
      .map((e) => {
        const f = path.join(e.parentPath, e.name);
        const s = statSync(f);
        return [f, `${s.size}@${s.mtimeMs}`];
      }),
  );
}

describe("the CLI's code cache (bin/casefile.js)", function () {
  this.timeout(60_000);
  let dir = "";
  let cli = "";
  let caseFile = "";
  before(() => {
    ({ dir, cli } = install());
    caseFile = path.join(dir, "four.casefile");
    // Made by the repository's CLI: the private copy has no esbuild beside it to bundle a workflow.
    execFileSync(
      process.execPath,
      [path.join(root, "bin/casefile.js"), "run", path.join(root, "test/fixtures/workflows/fourSteps.ts"), "--case-file", caseFile],
      {
        env: { ...process.env, CASEFILE_CACHE_DIR: "off" },
      },
    );
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("a command's second run prints what its first did, from the entries the first left, which it keeps", () => {
    const cache = path.join(dir, "cache-a");
    const first = run(cli, ["inspect", caseFile], cache);
    assert.equal(first.code, 0, first.stderr);
    const made = entries(cache);
    // At least the CLI's own bundle (a development build's zod says "import()" in a comment, and
    // a bundle with that text is left to Node's loader: see bin/casefile.js).
    assert.ok(made.size >= 1, `the first run cached the CLI's bundle: ${[...made.keys()].join(", ")}`);
    const second = run(cli, ["inspect", caseFile], cache);
    assert.deepEqual(second, first, "the same output, exit code and no warning");
    if (!nodeHasCompileCache) {
      // An entry V8 rejected would be written again: unchanged entries were used as they are.
      assert.deepEqual(entries(cache), made, "the second run used the entries and wrote none");
    }
    const other = run(cli, ["--help"], cache);
    assert.equal(other.code, 0, other.stderr);
    assert.match(other.stdout, /^usage:/, "another command runs from the same cache folder");
  });

  it("runs a changed bundle as changed, even at the same length, and caches the new code beside the old", () => {
    const cache = path.join(dir, "cache-b");
    const before = run(cli, ["--help"], cache);
    assert.match(before.stdout, /casefile inspect/, "the usage names inspect");
    const bundle = path.join(dir, "dist/cli.js");
    const text = readFileSync(bundle, "utf8");
    assert.ok(text.includes("casefile inspect "), "the bundle holds the usage text");
    // Same length: V8's own check of cached data (the source's length) would not see the change.
    writeFileSync(bundle, text.replaceAll("casefile inspect ", "casefile INSPECT "));
    try {
      const after = run(cli, ["--help"], cache);
      assert.equal(after.code, 0, after.stderr);
      assert.match(after.stdout, /casefile INSPECT /, "the changed text is printed");
      assert.doesNotMatch(after.stdout, /casefile inspect /, "nothing of the old code ran");
    } finally {
      writeFileSync(bundle, text);
    }
    const again = run(cli, ["--help"], cache);
    assert.deepEqual(again, before, "the bundle as it was runs as it did");
  });

  it("a cache folder that cannot be written, or entries that are not V8's, change nothing", () => {
    const expected = run(cli, ["inspect", caseFile], "off");
    assert.equal(expected.code, 0, expected.stderr);
    // A file where the folder would be: nothing can be created under it.
    const blocker = path.join(dir, "blocker");
    writeFileSync(blocker, "not a folder");
    assert.deepEqual(
      run(cli, ["inspect", caseFile], path.join(blocker, "cache")),
      expected,
      "an unwritable cache: same output, no warning",
    );

    const cache = path.join(dir, "cache-c");
    assert.deepEqual(run(cli, ["inspect", caseFile], cache), expected, "first run");
    for (const f of entries(cache).keys()) writeFileSync(f, Buffer.alloc(statSync(f).size, 7));
    assert.deepEqual(run(cli, ["inspect", caseFile], cache), expected, "damaged entries are not used");
    assert.deepEqual(run(cli, ["inspect", caseFile], cache), expected, "and are replaced");
  });

  it("CASEFILE_CACHE_DIR=off keeps nothing", () => {
    const cwdCache = path.join(dir, "off");
    const r = spawnSync(process.execPath, [cli, "--help"], {
      cwd: dir,
      env: { ...process.env, CASEFILE_CACHE_DIR: "off" },
      encoding: "utf8",
    });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(existsSync(cwdCache), false, "no folder named off");
  });
});
