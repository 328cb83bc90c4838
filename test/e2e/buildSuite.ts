import { readdirSync } from "node:fs";
import * as path from "node:path";
import * as esbuild from "esbuild";

/**
 * Bundles the e2e suite (test/e2e/suite/*.ts) to CommonJS in dist/e2e/: the extension host runs
 * JavaScript only. `vscode` is provided by the host; mocha is resolved from node_modules at run
 * time (the output sits inside the repo, so Node finds it).
 */
export const ROOT = path.resolve(__dirname, "../..");
export const SUITE_OUT = path.join(ROOT, "dist", "e2e");

export async function buildSuite(): Promise<string> {
  const dir = path.join(ROOT, "test", "e2e", "suite");
  const entryPoints = readdirSync(dir)
    .filter((f) => f === "index.ts" || f.endsWith(".test.ts"))
    .map((f) => path.join(dir, f));
  await esbuild.build({
    entryPoints,
    outdir: SUITE_OUT,
    bundle: true,
    platform: "node",
    target: "node20",
    format: "cjs",
    sourcemap: "inline",
    external: ["vscode", "mocha", "esbuild"],
    logLevel: "warning",
  });
  return path.join(SUITE_OUT, "index.js");
}
