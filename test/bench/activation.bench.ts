/**
 * `npm run bench:activation`: the extension's activation time and bundle sizes against the
 * targets (activation < 50 ms; dist/extension.js < 1.5 MB, sql-wasm.wasm aside).
 *
 * Bundle sizes are measured on a production build (`node esbuild.mjs --production`, what
 * `npm run package` ships), made here first. Activation comes from the last e2e run in a real
 * VS Code (`npm run test:e2e` writes test-output/e2e/metrics-<mode>.json): this bench does not
 * start code-server itself; without a recorded run it says so.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import * as path from "node:path";

const ROOT = path.resolve(__dirname, "../..");
const MB = 1024 * 1024;
const kb = (n: number): string => `${(n / 1024).toFixed(1)} KB`;

execFileSync(process.execPath, ["esbuild.mjs", "--production"], { cwd: ROOT, stdio: "inherit" });

console.log("Bundle sizes (production build):");
const files = [
  "dist/extension.js",
  ...readdirSync(path.join(ROOT, "media"))
    .filter((f) => f.endsWith(".js"))
    .map((f) => `media/${f}`),
  "dist/runner.js",
  "dist/describe.js",
  "dist/tokenCounter.js",
];
for (const f of files) {
  const size = statSync(path.join(ROOT, f)).size;
  const target = f === "dist/extension.js" ? `  (target < 1.5 MB: ${size < 1.5 * MB ? "met" : "MISSED"})` : "";
  console.log(`  ${f.padEnd(24)} ${kb(size).padStart(10)}${target}`);
}
console.log(
  `  ${"dist/sql-wasm.wasm".padEnd(24)} ${kb(statSync(path.join(ROOT, "dist/sql-wasm.wasm")).size).padStart(10)}  (aside: loaded on first case-file read)`,
);

console.log("Activation (from the last e2e run in code-server):");
let found = false;
for (const mode of ["trusted", "restricted"]) {
  const file = path.join(ROOT, "test-output/e2e", `metrics-${mode}.json`);
  if (!existsSync(file)) continue;
  found = true;
  const metrics = JSON.parse(readFileSync(file, "utf8")) as Record<string, string>;
  const line = metrics.activation ?? "(no activation metric recorded)";
  const body = /activate\(\) body ([\d.]+) ms/.exec(line);
  const total = /ext\.activate\(\) ([\d.]+) ms/.exec(line);
  const ms = Number(total?.[1] ?? body?.[1]);
  const verdict = Number.isFinite(ms) ? ` (target < 50 ms: ${ms < 50 ? "met" : "MISSED"})` : "";
  console.log(`  ${mode.padEnd(10)} ${line}${verdict}  [${new Date(statSync(file).mtimeMs).toISOString()}]`);
}
if (!found) console.log("  no e2e run recorded yet: run `npm run test:e2e`, then this bench again.");
