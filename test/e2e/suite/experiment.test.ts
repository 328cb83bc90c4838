import * as assert from "node:assert/strict";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import type { CasefileTestApi } from "../../../src/extension/extension";
import results from "../../fixtures/experiment/v1-vs-v2.experiment.json";
import { suiteConfig } from "./config";
import { askBrowser, itWithBrowser } from "./exchange";

/**
 * The Experiment panel in a real editor, on a results file `casefile experiment` wrote (the
 * invoice example's two cases under the example and a version that tolerates 10%): opened with
 * Open With > Experiment, by casefile.openExperiment on the results file, and from an eval case
 * file (as the Testing view's context menu passes it), which opens the same panel on that case.
 */
describe("Experiment panel", function () {
  this.timeout(120_000);
  const dir = path.join(suiteConfig().workspace, "experiment-e2e");
  const file = vscode.Uri.file(path.join(dir, "v1-vs-v2.experiment.json"));
  const escalated = results.cases.find((c) => c.expected.verdict === "escalated")!;
  let api: CasefileTestApi;

  before(async () => {
    api = await vscode.extensions.getExtension<CasefileTestApi>("casefile.casefile")!.activate();
    mkdirSync(dir, { recursive: true });
    writeFileSync(file.fsPath, JSON.stringify(results, null, 2));
  });

  after(async () => {
    const mine = vscode.window.tabGroups.all.flatMap((g) => g.tabs).filter((t) => t.label.startsWith("Experiment: "));
    await vscode.window.tabGroups.close(mine);
    rmSync(dir, { recursive: true, force: true });
  });

  const tabs = (): string[] => vscode.window.tabGroups.all.flatMap((g) => g.tabs.map((t) => t.label));
  async function waitForTab(label: string): Promise<void> {
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline && !tabs().includes(label)) await new Promise((r) => setTimeout(r, 250));
    assert.ok(tabs().includes(label), tabs().join(", "));
  }

  it("opens a results file with Open With > Experiment, and the command reveals the same panel", async () => {
    await vscode.commands.executeCommand("vscode.openWith", file, "casefile.experiment");
    await waitForTab("Experiment: v1-vs-v2");
    const r = (await vscode.commands.executeCommand("casefile.openExperiment", file)) as { ok: boolean; message?: string };
    assert.deepEqual(r, { ok: true, message: "Experiment: v1-vs-v2" });
    assert.equal(tabs().filter((t) => t === "Experiment: v1-vs-v2").length, 1, "one panel per results file");
    const shown = (await api.experimentPanel(file))?.shown;
    assert.equal(shown?.type, "load", JSON.stringify(shown).slice(0, 300));
  });

  it("from an eval case file (a Testing view item's uri) opens the experiment that ran it, on that case", async () => {
    const caseFile = vscode.Uri.file(path.join(dir, escalated.file));
    const r = (await vscode.commands.executeCommand("casefile.openExperiment", { id: "test-item", uri: caseFile })) as { ok: boolean };
    assert.equal(r.ok, true, JSON.stringify(r));
    const shown = (await api.experimentPanel(file))?.shown;
    assert.equal(shown?.type === "load" ? shown.case : undefined, escalated.id);
    const none = (await vscode.commands.executeCommand("casefile.openExperiment", vscode.Uri.file(path.join(dir, "other.eval.json")))) as {
      ok: boolean;
      reason?: string;
    };
    assert.equal(none.ok, false);
    assert.match(none.reason ?? "", /No experiment results \(\*\.experiment\.json\) beside other\.eval\.json ran it/);
  });

  itWithBrowser("shows the totals, the matrix with the regression, and the context diff of that case", async () => {
    const checks = await askBrowser({
      name: "experiment",
      waitFor: 'body[data-loaded$="v1-vs-v2.experiment.json"]',
      read: {
        totals: "#totals tbody tr",
        regression: "#matrix td.regression",
        verdict: "#diff .diff-verdict",
        added: "#diff ins.diff-added",
      },
    });
    assert.equal(checks.found, true, checks.error);
    const norm = (s: string) => s.replace(/\s+/g, " ").trim();
    assert.match(norm(checks.texts.totals?.[0] ?? ""), /^v1 \(baseline\) 100% 2\/2 628 0 ms/);
    assert.match(norm(checks.texts.totals?.[1] ?? ""), /^v2 50% 1\/2 650 0 ms/);
    assert.deepEqual(checks.texts.regression?.map(norm), ["FAIL regression approve_variance / accepted 325 tokens · 0 ms"]);
    assert.deepEqual(checks.texts.verdict?.map(norm), ["1 of 2 messages differ."]);
    assert.deepEqual(checks.texts.added?.map(norm), ["Variances up to 10% may be approved."]);
    assert.deepEqual(checks.cspViolations ?? [], [], "the page's CSP refused nothing");
  });
});
