#!/usr/bin/env node
"use strict";
// The CLI is bundled to dist/cli.js by `npm run build`.
//
// Compiling the bundles (dist/cli.js, zod's...) is a good part of a short command's time, so V8's
// compiled code is kept between runs in the user's cache folder (the one the workflow bundle
// cache uses, src/runner/bundleCache.ts; $CASEFILE_CACHE_DIR=off keeps nothing): Node's own
// compile cache, from Node 22.1. (On Node 20 there is none: doing it by hand means patching the
// module loader and an experimental vm flag that prints a warning on every command.)
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

try {
  const dir = cacheDir();
  if (dir && typeof Module.enableCompileCache === "function") Module.enableCompileCache(dir);
} catch {
  // No compile cache: the CLI runs as it would without.
}
require("../dist/cli.js").cli();
