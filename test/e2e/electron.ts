/**
 * The same e2e suite (test/e2e/suite/) under @vscode/test-electron, for machines that can download
 * VS Code desktop (CI elsewhere, a developer's laptop). It cannot run on this project's machines,
 * which cannot reach the download host: there, use `npm run test:e2e` (code-server + Chromium).
 * Usage: `npm run build && tsx test/e2e/electron.ts`.
 *
 * Differences from the code-server harness: no browser is attached, so the tests that read a
 * webview's DOM are not registered (see suite/exchange.ts `browserAvailable`); everything that runs
 * in the extension host (activation, commands, views, the inspector panel, Restricted Mode) runs.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { runTests } from "@vscode/test-electron";
import { openCaseFile } from "../../src/casefile/index";
import { commitInvoiceRun } from "../fixtures/casefile/fixture";
import { buildSuite, ROOT } from "./buildSuite";
import type { SuiteResult } from "./suite/index";

async function main(): Promise<number> {
  const suiteIndex = await buildSuite();
  let passes = 0;
  let failures = 0;
  let skipped = 0;
  for (const mode of ["trusted", "restricted"] as const) {
    const work = mkdtempSync(path.join(os.tmpdir(), `casefile-electron-${mode}-`));
    const workspace = path.join(work, "workspace");
    mkdirSync(workspace);
    const store = await openCaseFile(path.join(workspace, "invoice.casefile"), { create: true });
    commitInvoiceRun(store);
    store.close();
    const resultFile = path.join(work, "result.json");
    try {
      await runTests({
        extensionDevelopmentPath: ROOT,
        extensionTestsPath: suiteIndex,
        launchArgs: [
          workspace,
          "--disable-extensions",
          "--user-data-dir",
          path.join(work, "user-data"),
          ...(mode === "trusted" ? ["--disable-workspace-trust"] : []),
        ],
        // No CASEFILE_E2E_EXCHANGE: there is no browser harness to answer DOM questions.
        extensionTestsEnv: {
          CASEFILE_E2E_MODE: mode,
          CASEFILE_E2E_RESULT: resultFile,
          CASEFILE_E2E_WORKSPACE: workspace,
          ...(process.env.CI ? { CI: process.env.CI } : {}),
        },
      });
    } catch (err) {
      console.error(`[${mode}] ${err instanceof Error ? err.message : String(err)}`);
    }
    try {
      const r = JSON.parse(readFileSync(resultFile, "utf8")) as SuiteResult;
      passes += r.passes;
      failures += r.failures;
      skipped += r.pending;
      for (const t of r.tests) {
        const mark = t.state === "passed" ? "✔" : t.state === "pending" ? "SKIPPED" : "✘";
        console.log(`  ${mark} [${mode}] ${t.title}${t.error ? `\n    ${t.error}` : ""}`);
      }
    } catch {
      failures++;
      console.error(`[${mode}] no result file: VS Code did not start or the suite did not run`);
    }
    rmSync(work, { recursive: true, force: true });
  }
  console.log(`${passes} passed, ${failures} failed, ${skipped} skipped`);
  // In CI a skipped test is a failed one: nothing may pass by not running.
  return failures === 0 && passes > 0 && !(skipped && process.env.CI) ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
