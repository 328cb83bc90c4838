import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { setFlagsFromString } from "node:v8";
import type { SqlJsStatic } from "sql.js";

/**
 * Loads sql.js once per process. Every SqlJsStore.open awaits the same promise; a failure is not
 * cached, so a later open can try again (for instance after the wasm file was restored).
 */
let loading: Promise<SqlJsStatic> | undefined;

export function loadSqlJs(): Promise<SqlJsStatic> {
  if (!loading) {
    loading = Promise.resolve()
      .then(() => {
        const file = findSqlWasm();
        const bytes = readFileSync(file);
        // Handing sql.js the bytes (rather than a locateFile callback) means it never looks for
        // the wasm itself, which in a bundle would resolve against the wrong directory.
        const wasmBinary = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
        // Required here, not at the top: a process that opens no case file never runs sql.js's
        // glue. The plain Node build (package "default" export), not the browser one: no fetch.
        const initSqlJs = require("sql.js") as typeof import("sql.js");
        return initSqlJs({ wasmBinary });
      })
      .catch((e: unknown) => {
        loading = undefined;
        throw e;
      });
  }
  return loading;
}

/**
 * Where sql-wasm.wasm is. In the esbuild bundle (dist/runner.js, dist/cli.js...) the build copies
 * it next to the bundle, so `__dirname` comes first; running from TypeScript source under tsx, it
 * is found through the sql.js package in node_modules.
 */
export function findSqlWasm(): string {
  const candidates = [path.join(__dirname, "sql-wasm.wasm")];
  // The package is looked up only when the bundle has no copy beside it: a lookup walks the
  // node_modules folders above (~10 ms of a short command).
  if (existsSync(candidates[0]!)) return candidates[0]!;
  try {
    candidates.push(path.join(path.dirname(require.resolve("sql.js")), "sql-wasm.wasm"));
  } catch {
    // Not resolvable (a bundle shipped without node_modules): only the copy beside us can work.
  }
  const found = candidates.find((c) => existsSync(c));
  if (!found) throw new Error(`sql-wasm.wasm not found; looked in: ${candidates.join(", ")}`);
  return found;
}

/**
 * Compiles WebAssembly (sql.js's SQLite) with V8's baseline compiler only. By default V8 also
 * recompiles the module with its optimising compiler in the background, which cost a short
 * command ~30 MB of peak memory and a core's worth of time for no gain (measured on `casefile
 * inspect` of a small case file: 100 MB -> 66 MB). Called by the processes that are ours alone,
 * the CLI and the runner, before they open a case file; never in the extension host, whose V8
 * is VS Code's.
 */
export function baselineWasmOnly(): void {
  try {
    setFlagsFromString("--liftoff-only");
  } catch {
    // A Node without the flag runs as before.
  }
}
