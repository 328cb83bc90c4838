// `npm run package [-- --target <vsce target>]`: builds for production, emits the workflow
// authors' type declarations, and packages a platform-specific .vsix with @vscode/vsce.
//
// Why per-platform: the runner bundles workflow files with esbuild at run time, and esbuild's
// native binary is per platform (@esbuild/<os>-<cpu>). esbuild-wasm would be one package for all
// platforms, but measured on the invoice workflow it is ~40x slower warm (635 ms vs 15 ms) and
// ~16x slower cold (9.0 s vs 0.56 s, which every run pays: the runner is a fresh process).
// So each .vsix carries the binary of its target; the target defaults to this machine's.
// For another target, install its binary first: `npm install --no-save --force @esbuild/<os>-<cpu>@<esbuild's version>`.
import { execFileSync } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const VSCE_TO_ESBUILD = {
  "win32-x64": "win32-x64",
  "win32-arm64": "win32-arm64",
  "linux-x64": "linux-x64",
  "linux-arm64": "linux-arm64",
  "linux-armhf": "linux-arm",
  "alpine-x64": "linux-x64",
  "alpine-arm64": "linux-arm64",
  "darwin-x64": "darwin-x64",
  "darwin-arm64": "darwin-arm64",
};
const arg = process.argv.indexOf("--target");
const target = arg > 0 ? process.argv[arg + 1] : `${process.platform}-${process.arch === "arm" ? "armhf" : process.arch}`;
const platformPkg = VSCE_TO_ESBUILD[target];
if (!platformPkg) throw new Error(`unknown target ${target}; one of ${Object.keys(VSCE_TO_ESBUILD).join(", ")}`);
const binary = `node_modules/@esbuild/${platformPkg}`;
if (!existsSync(binary)) {
  const version = require("esbuild/package.json").version;
  throw new Error(`esbuild's binary for ${target} is missing: npm install --no-save --force @esbuild/${platformPkg}@${version}`);
}

const node = process.execPath;
const run = (args) => execFileSync(node, args, { stdio: "inherit" });
run(["esbuild.mjs", "--production"]);
run(["build/types.mjs"]);
const { version, name } = require("../package.json");
const out = `dist/${name}-${target}-${version}.vsix`;
run([require.resolve("@vscode/vsce/vsce"), "package", "--target", target, "--skip-license", "--allow-missing-repository", "--no-rewrite-relative-links", "--out", out]);
console.log(`${out}: ${(statSync(out).size / 1024 / 1024).toFixed(2)} MB`);
