import { readdirSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import Mocha from "mocha";
import { suiteConfig } from "./config";
import { takeMetrics } from "./metrics";

/**
 * The e2e suite's entry, called by VS Code's extension host exactly as `@vscode/test-electron`
 * calls it: `run()` resolves when the tests are done. It writes the counts and failures to the
 * result file the harness (test/e2e/run.ts or electron.ts) waits for, then resolves or rejects.
 *
 * The suite is bundled to JavaScript first (test/e2e/buildSuite.ts): the extension host cannot
 * run TypeScript. Each `*.test.js` beside this file is loaded; which ones run depends on the mode
 * (a trusted workspace, Restricted Mode, or examples/ opened as a newcomer would).
 */

export interface SuiteResult {
  mode: string;
  passes: number;
  failures: number;
  pending: number;
  durationMs: number;
  tests: { title: string; state: "passed" | "failed" | "pending"; durationMs: number; error?: string }[];
  metrics?: Record<string, string>;
}

export async function run(): Promise<void> {
  const config = suiteConfig();
  // CASEFILE_E2E_GREP (passed through code-server's environment) runs only the tests whose titles match, while working on them.
  const grep = process.env.CASEFILE_E2E_GREP;
  const mocha = new Mocha({ ui: "bdd", timeout: 120_000, color: false, reporter: "spec", ...(grep ? { grep } : {}) });
  const files = readdirSync(__dirname)
    .filter((f) => f.endsWith(".test.js"))
    // Each pass runs the files named for its mode; the trusted pass runs the rest.
    .filter((f) => (config.mode === "trusted" ? !f.startsWith("restricted") && !f.startsWith("newcomer") : f.startsWith(config.mode)))
    .sort();
  for (const f of files) mocha.addFile(path.join(__dirname, f));
  await mocha.loadFilesAsync();

  const started = Date.now();
  const result: SuiteResult = { mode: config.mode, passes: 0, failures: 0, pending: 0, durationMs: 0, tests: [] };
  const failed: (() => void)[] = [];
  await new Promise<void>((resolve) => {
    const runner = mocha.run(() => resolve());
    runner.on("pass", (t) => {
      result.passes++;
      result.tests.push({ title: t.fullTitle(), state: "passed", durationMs: t.duration ?? 0 });
    });
    runner.on("fail", (t, err: unknown) => {
      result.failures++;
      const entry: SuiteResult["tests"][number] = { title: t.fullTitle(), state: "failed", durationMs: t.duration ?? 0 };
      const describe = (): string => (err instanceof Error ? `${err.message}\n${err.stack ?? ""}` : String(err));
      entry.error = describe();
      // An afterEach hook may add to the message what the extension logged (debug.test.ts): read it again once the run ends.
      failed.push(() => (entry.error = describe()));
      result.tests.push(entry);
    });
    runner.on("pending", (t) => {
      result.pending++;
      result.tests.push({ title: t.fullTitle(), state: "pending", durationMs: 0 });
    });
  });
  for (const reread of failed) reread();
  result.durationMs = Date.now() - started;
  result.metrics = takeMetrics();
  if (files.length === 0) {
    result.failures++;
    result.tests.push({ title: "suite", state: "failed", durationMs: 0, error: `no test files for mode ${config.mode} in ${__dirname}` });
  }
  writeFileSync(config.resultFile, JSON.stringify(result, null, 2));
  if (result.failures > 0) throw new Error(`${result.failures} e2e test(s) failed`);
}
