import * as assert from "node:assert/strict";
import { copyFileSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as vscode from "vscode";
import type { CasefileTestApi } from "../../../src/extension/extension";
import { askBrowser, itWithBrowser } from "./exchange";
import { recordMetric } from "./metrics";

const RUN = "run-2026-11-30-a1";

/**
 * Where the time goes from the click that opens a small case file to the painted Run Inspector.
 * Cold (the inspector's modules, zod and sql.js not loaded yet) only when it runs alone in a fresh
 * window: `CASEFILE_E2E_GREP="Run Inspector cold open" npx tsx test/e2e/run.ts`. The extension
 * host and the browser run on one machine, so their epoch clocks compare: the host's marks (the
 * command, InspectorPanel.marks) and the page's (data-page-at... set by media/inspector.js) make
 * one timeline. It prints the split (the harness shows it beside the activation time); what it
 * asserts is what a person sees: the run's timeline painted.
 */
describe("Run Inspector cold open", () => {
  let dir: string;

  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "casefile-cold-open-"));
  });

  after(() => rmSync(dir, { recursive: true, force: true }));

  itWithBrowser("paints a small case file's run, timed from the click to the painted page", async () => {
    const api = await vscode.extensions.getExtension<CasefileTestApi>("casefile.casefile")!.activate();
    const folder = vscode.workspace.workspaceFolders?.[0];
    assert.ok(folder, "the harness opened a workspace folder");
    // A copy of the workspace's case file, so that no inspector another test opened is reused.
    const source = path.join(folder.uri.fsPath, "invoice.casefile");
    const file = path.join(dir, "cold-open.casefile");
    copyFileSync(source, file);
    if (existsSync(`${source}.journal`)) copyFileSync(`${source}.journal`, `${file}.journal`);
    const caseFile = vscode.Uri.file(file);

    const clickAt = performance.timeOrigin + performance.now();
    const result = (await vscode.commands.executeCommand("casefile.openInspector", caseFile, RUN)) as { ok: boolean };
    const commandDoneAt = performance.timeOrigin + performance.now();
    assert.equal(result.ok, true, "the command opened the inspector");
    const panel = await api.inspectorPanel(caseFile);
    assert.ok(panel?.marks.firstLoad, "the panel built its first view model");

    const page = await askBrowser({
      name: "coldOpen",
      waitFor: `body[data-loaded="${RUN}"]:has(.header-right .muted:text-is("cold-open.casefile"))`,
      read: { rows: ".timeline-row" },
      readDataset: "body",
      readResources: true,
    });
    assert.equal(page.found, true, page.error);
    assert.ok((page.texts.rows ?? []).length > 0, "the run's supersteps are painted in the timeline");
    const d = page.dataset ?? {};
    const at = (k: string): number => {
      const v = Number(d[k]);
      assert.ok(Number.isFinite(v), `the page recorded data-${k} (got ${d[k]})`);
      return v;
    };
    const { createdAt, firstLoad } = panel.marks;
    const paintedAt = at("paintedAt");
    const ms = (a: number, b: number): string => `${(b - a).toFixed(0)} ms`;
    recordMetric(
      "inspector cold open",
      `click to painted ${ms(clickAt, paintedAt)}. Host: loading the inspector's module ${ms(clickAt, createdAt)}, ` +
        `making the panel ${ms(createdAt, firstLoad.startedAt)}, reading the case file and building the view model ` +
        `${ms(firstLoad.startedAt, firstLoad.builtAt)}, command returned at +${ms(clickAt, commandDoneAt)}. ` +
        `Page: its document started at +${ms(clickAt, at("pageAt"))}, its script at +${ms(clickAt, at("scriptAt"))}, ` +
        `the view model arrived at +${ms(clickAt, at("receivedAt"))}, painted ${ms(at("receivedAt"), paintedAt)} after ` +
        `(parse ${d.parseMs} ms, render ${d.renderMs} ms). The page's fetches (ends, ms after its start): ` +
        (page.resources ?? []).map((r) => `${r.name.split("/").pop()} ${r.responseEnd.toFixed(0)}`).join(", "),
    );
    panel.panel.dispose();
  });
});
