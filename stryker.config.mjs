// Mutation testing of the engine and the case-file store (issue 18): `npm run test:mutation`.
// Not part of `npm test` (a whole run of both folders takes hours on a shared 2-core machine);
// run it before calling an engine or store change done, on the files you changed:
//   npm run test:mutation -- --mutate src/engine/commitStep.ts,src/casefile/journal.ts
// and put the score in your note. Stryker 10 needs Node >= 22 (the project's own floor is 20): on
// this machine `bash test/e2e/setup.sh` leaves Node 24 in .vscode-test/node24; put its bin first
// on PATH for the run. Incremental: a rerun tests only mutants whose code or
// covering tests changed since the last run on this machine (reports/stryker-incremental.json,
// kept out of git: it is this machine's cache, and a shared copy would conflict on every merge).
/** @type {import("@stryker-mutator/api/core").PartialStrykerOptions} */
export default {
  testRunner: "mocha",
  checkers: ["typescript"],
  tsconfigFile: "tsconfig.json",
  // Type checking only the files a mutant touches (and what imports them), not the whole project per mutant.
  typescriptChecker: { prioritizePerformanceOverAccuracy: true },
  mutate: ["src/engine/**/*.ts", "src/casefile/**/*.ts"],
  // The tests of these two layers: unit tests on real case files in temp folders, reopened from disk.
  mochaOptions: {
    config: ".mocharc.json",
    spec: ["test/unit/engine/**/*.test.ts", "test/unit/casefile/**/*.test.ts"],
  },
  coverageAnalysis: "perTest",
  incremental: true,
  incrementalFile: "reports/stryker-incremental.json",
  concurrency: 1,
  timeoutMS: 20000,
  // mutant-log (test/mutation/mutantLog.mjs): a line per mutant as it is tested, for a run stopped early.
  plugins: ["@stryker-mutator/*", "./test/mutation/mutantLog.mjs"],
  reporters: ["clear-text", "progress", "json", "mutant-log"],
  jsonReporter: { fileName: "reports/mutation/mutation.json" },
  thresholds: { high: 90, low: 85, break: null },
  // Not copied into the sandbox: the e2e harness's downloads (a symlink in worktrees) and test output.
  ignorePatterns: [".vscode-test", "test-output", "*.vsix"],
  tempDirName: ".stryker-tmp",
  cleanTempDir: "always",
};
