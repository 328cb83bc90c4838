// Mutation testing of the engine and the case-file store (issue 18): `npm run test:mutation`
// (test/mutation/run.mjs says how to narrow it to a file or folder, and where its incremental
// results live). Not part of `npm test`: a whole run of both folders takes hours on a shared
// 2-core machine. Run it on the files you changed before calling an engine or store change done:
//   npm run test:mutation -- src/engine/commitStep.ts src/casefile/journal.ts
// and put the score in your note (`node test/mutation/summary.mjs`).
/** @type {import("@stryker-mutator/api/core").PartialStrykerOptions} */
export default {
  testRunner: "mocha",
  // The type checker pays for itself: it refuses 36-41% of the mutants (control.ts 16 of 45,
  // effectStep.ts 128 of 311), code that could not be written here, which would otherwise each run
  // their covering tests (8 s a mutant on this machine under load) and count as survivors. It
  // costs one start (15-70 s) and an incremental check per mutant.
  checkers: ["typescript"],
  tsconfigFile: "tsconfig.mutation.json",
  // Only the two layers and the protocol they import: type-checking the tests and the extension too
  // made the checker 2.6 GB and the run's bottleneck (the test runner sat at 18% CPU waiting on it).
  // Type checking only the files a mutant touches (and what imports them), not the whole project per mutant.
  typescriptChecker: { prioritizePerformanceOverAccuracy: true },
  mutate: (process.env.CASEFILE_MUTATE ?? "src/engine/**/*.ts,src/casefile/**/*.ts").split(","),
  // The tests of these two layers: unit tests on real case files in temp folders, reopened from disk.
  mochaOptions: {
    config: ".mocharc.json",
    spec: ["test/unit/engine/**/*.test.ts", "test/unit/casefile/**/*.test.ts"],
  },
  coverageAnalysis: "perTest",
  incremental: true,
  incrementalFile: process.env.CASEFILE_MUTATE_INCREMENTAL ?? "test/mutation/incremental/all.json",
  concurrency: 1,
  // A mutant whose covering tests run past 1.5x their dry-run time plus this is a Timeout (counted
  // as detected). Most timeouts are mutants that make a wait never end (control.ts's pause loop);
  // each costs this long plus a restart of the test runner, so it is kept short.
  timeoutMS: 5000,
  // mutant-log (test/mutation/mutantLog.mjs): a line per mutant as it is tested, for a run stopped early.
  plugins: ["@stryker-mutator/*", "./test/mutation/mutantLog.mjs"],
  reporters: ["clear-text", "progress", "json", "mutant-log"],
  jsonReporter: { fileName: "reports/mutation/mutation.json" },
  thresholds: { high: 90, low: 85, break: null },
  // Not copied into the sandbox: the e2e harness's downloads (a symlink in worktrees) and test output.
  ignorePatterns: [".vscode-test", "test-output", "*.vsix", "test/mutation/incremental"],
  tempDirName: ".stryker-tmp",
  cleanTempDir: "always",
};
