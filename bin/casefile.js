#!/usr/bin/env node
"use strict";
// The CLI is bundled to dist/cli.js by `npm run build`.
//
// Compiling the bundles (dist/cli.js, zod's, yaml's...) is a good part of a short command's time,
// so V8's compiled code is kept between runs in the user's cache folder (the one the workflow
// bundle cache uses, src/runner/bundleCache.ts; $CASEFILE_CACHE_DIR=off keeps nothing): Node's own
// compile cache from Node 22.1; before it (Node 20), loadBundle below.
const Module = require("node:module");
const path = require("node:path");

function cacheDir() {
  const set = process.env.CASEFILE_CACHE_DIR;
  if (set) return set === "off" ? undefined : path.join(path.resolve(set), "v8");
  const os = require("node:os");
  const home = os.homedir();
  if (!home) return undefined;
  if (process.platform === "win32")
    return path.join(process.env.LOCALAPPDATA || path.join(home, "AppData", "Local"), "casefile", "Cache", "v8");
  if (process.platform === "darwin") return path.join(home, "Library", "Caches", "casefile", "v8");
  return path.join(process.env.XDG_CACHE_HOME || path.join(home, ".cache"), "casefile", "v8");
}

/** Cache entries kept; when a write finds more, the least recently written go. */
const MAX_ENTRIES = 48;

/**
 * Loads a bundle of dist/ as Node's loader would (CommonJS wrapper, its own `require`), compiled
 * with V8's code cache: `vm.Script` with the cached data of an earlier run of the same command.
 * The bundles it requires by "./name.js" (zod's, yaml's, the commands' vendor bundles) load the
 * same way, once each, into Node's module cache; every other require is Node's. An entry is keyed by the SHA-256 of the
 * bundle's text (with Node's version, the CPU and the command), so changed code never meets old
 * compiled code: V8 itself only checks the text's length. Entries are written at exit, by the
 * first run of a command (or when V8 rejected the entry, e.g. after a change of V8 flags), with
 * the functions that run compiled; a cache that cannot be read or written is no cache.
 */
function cachedLoader(dir) {
  const fs = require("node:fs");
  const vm = require("node:vm");
  const crypto = require("node:crypto");
  const command = /^[\w-]{1,40}$/.test(process.argv[2] || "") ? process.argv[2] : "-";
  const made = [];
  function load(file) {
    // In Node's module cache, as Node's loader would put it: a require of the same file by path
    // from anywhere in the process gets this module, not a second copy.
    const known = require.cache[file];
    if (known) return known.exports;
    const source = fs.readFileSync(file, "utf8");
    // A script compiled here has no host for import() on Node 20 (only an experimental vm hook):
    // a bundle that may call it (the OpenTelemetry exporter's import("http")) is Node's to load.
    if (source.includes("import(")) return Module.createRequire(file)(file);
    const key = crypto.createHash("sha256").update(`${process.version}\0${process.arch}\0${command}\0`).update(source).digest("hex");
    const entry = path.join(dir, key.slice(0, 48));
    let cachedData;
    try {
      cachedData = fs.readFileSync(entry);
    } catch {
      // Not cached yet (or unreadable): compiled from the text.
    }
    const script = new vm.Script(Module.wrap(source), { filename: file, cachedData });
    if (cachedData === undefined || script.cachedDataRejected) made.push({ entry, script });
    const module = new Module(file, null);
    module.filename = file;
    const nodeRequire = Module.createRequire(file);
    const bundleRequire = (id) => (/^\.\/[\w-]+\.js$/.test(id) ? load(path.join(path.dirname(file), id)) : nodeRequire(id));
    Object.assign(bundleRequire, { resolve: nodeRequire.resolve, cache: nodeRequire.cache, main: undefined });
    require.cache[file] = module;
    try {
      script
        .runInThisContext({ displayErrors: true })
        .call(module.exports, module.exports, bundleRequire, module, file, path.dirname(file));
    } catch (e) {
      delete require.cache[file];
      throw e;
    }
    module.loaded = true;
    return module.exports;
  }
  process.once("exit", () => {
    if (made.length === 0) return;
    try {
      fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
      for (const { entry, script } of made) {
        fs.writeFileSync(`${entry}.${process.pid}`, script.createCachedData(), { mode: 0o600 });
        fs.renameSync(`${entry}.${process.pid}`, entry);
      }
      const entries = fs.readdirSync(dir).map((f) => ({ f, at: fs.statSync(path.join(dir, f)).mtimeMs }));
      entries.sort((a, b) => b.at - a.at);
      for (const { f } of entries.slice(MAX_ENTRIES)) fs.rmSync(path.join(dir, f), { force: true });
    } catch {
      // No cache this time: the next run compiles again.
    }
  });
  return load;
}

const cli = path.join(__dirname, "..", "dist", "cli.js");
let load = require;
try {
  const dir = cacheDir();
  if (dir) {
    // V8 checks an entry against the flags it was made under: the one flag the CLI sets
    // (baselineWasmOnly in src/casefile/sqlite.ts, which cli() calls) is set before anything compiles.
    require("node:v8").setFlagsFromString("--liftoff-only");
    if (typeof Module.enableCompileCache === "function") Module.enableCompileCache(dir);
    else load = cachedLoader(dir);
  }
} catch {
  // No compile cache: the CLI runs as it would without.
}
load(cli).cli();
