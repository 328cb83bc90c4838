#!/usr/bin/env node
"use strict";
// The CLI is bundled to dist/cli.js by `npm run build`.
//
// Compiling the bundles (dist/cli.js, zod's...) is a good part of a short command's time, so V8's
// compiled code is kept between runs in the user's cache folder (the one the workflow bundle
// cache uses, src/runner/bundleCache.ts; $CASEFILE_CACHE_DIR=off keeps nothing): Node's own
// compile cache from Node 22.1, on Node 20 the same done here for this package's dist/ files.
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

/** Node 20: compiles this package's dist/*.js with V8's code cache (read before, written at exit). */
function compileCacheForDist(dir) {
  const vm = require("node:vm");
  const fs = require("node:fs");
  const crypto = require("node:crypto");
  // Without it, import() inside a bundle compiled here would fail: keep Node's own loader then.
  const importModuleDynamically = vm.constants && vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER;
  if (importModuleDynamically === undefined) return;
  const dist = path.join(__dirname, "..", "dist") + path.sep;
  const compile = Module.prototype._compile;
  const made = [];
  Module.prototype._compile = function (content, filename) {
    if (!filename.startsWith(dist)) return compile.call(this, content, filename);
    const key = crypto.createHash("sha256").update(`${process.version}\0${process.arch}\0${filename}\0`).update(content).digest("hex");
    const file = path.join(dir, key.slice(0, 40));
    let cachedData;
    try {
      cachedData = fs.readFileSync(file);
    } catch {
      // not cached yet
    }
    const script = new vm.Script(Module.wrap(content), { filename, cachedData, importModuleDynamically });
    if (cachedData === undefined || script.cachedDataRejected) made.push({ file, script });
    const require = Module.createRequire(filename);
    return script
      .runInThisContext({ displayErrors: true })
      .call(this.exports, this.exports, require, this, filename, path.dirname(filename));
  };
  process.once("exit", () => {
    for (const { file, script } of made) {
      try {
        fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
        fs.writeFileSync(`${file}.${process.pid}`, script.createCachedData(), { mode: 0o600 });
        fs.renameSync(`${file}.${process.pid}`, file);
      } catch {
        // No cache this time; the next run compiles again.
      }
    }
  });
}

try {
  const dir = cacheDir();
  if (dir && typeof Module.enableCompileCache === "function") Module.enableCompileCache(dir);
  else if (dir) compileCacheForDist(dir);
} catch {
  // No compile cache: the CLI runs as it would without.
}
require("../dist/cli.js").cli();
