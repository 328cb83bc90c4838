import * as assert from "node:assert/strict";
import * as path from "node:path";
import * as vscode from "vscode";
import { openCaseFile } from "../../../src/casefile/index";
import type { CommitBatch } from "../../../src/engine/store";
import type { CasefileTestApi } from "../../../src/extension/extension";
import { askBrowser, itWithBrowser } from "./exchange";

const RUN = "run-2026-11-30-a1";

/** The workspace holds invoice.casefile, written by the harness from test/fixtures/casefile with the real store. */
describe("Run Inspector on a fixture case file", () => {
  let api: CasefileTestApi;
  let caseFile: vscode.Uri;

  before(async () => {
    const ext = vscode.extensions.getExtension<CasefileTestApi>("casefile.casefile")!;
    api = await ext.activate();
    const folder = vscode.workspace.workspaceFolders?.[0];
    assert.ok(folder, "the harness opened a workspace folder");
    caseFile = vscode.Uri.joinPath(folder.uri, "invoice.casefile");
  });

  it("the Runs view lists the workspace's case file", async () => {
    // Other suites of this pass write case files of their own into the workspace (the Testing view's run of the invoice example).
    const names = (await api.ctx.views.listCaseFiles()).map((u) => path.basename(u.fsPath));
    assert.ok(names.includes("invoice.casefile"), `the Runs view lists the fixture's invoice.casefile: ${names.join(", ")}`);
  });

  it("opens as a webview panel titled after the case file", async () => {
    const result = (await vscode.commands.executeCommand("casefile.openInspector", caseFile, RUN)) as { ok: boolean; message?: string };
    assert.deepEqual(result, { ok: true, message: "Run Inspector: invoice.casefile" });
    // The tab model reaches the extension host a moment after the panel opens in the workbench.
    let tabs: readonly vscode.Tab[] = [];
    let tab: vscode.Tab | undefined;
    for (let i = 0; i < 50 && !tab; i++) {
      tabs = vscode.window.tabGroups.all.flatMap((g) => g.tabs);
      tab = tabs.find((t) => t.label === "Run Inspector: invoice.casefile");
      if (!tab) await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(tab, `a tab for the inspector among ${tabs.map((t) => t.label).join(", ")}`);
    assert.ok(tab.input instanceof vscode.TabInputWebview, "expected: tab.input instanceof vscode.TabInputWebview");
    assert.match(tab.input.viewType, /casefile\.runInspector/);
  });

  // Reading a webview's DOM needs the browser harness (test/e2e/run.ts); under @vscode/test-electron
  // these are reported skipped by name, and fail in CI (exchange.ts itWithBrowser).

  itWithBrowser("shows the run's timeline and proposal vs commit in the webview, and answers an action", async () => {
    const checks = await askBrowser({
      name: "inspector",
      waitFor: `body[data-loaded="${RUN}"]`,
      read: { rows: ".timeline-row", title: ".title strong" },
      click: ['.timeline-row:has(.superstep-number:text-is("#2"))', '.tab[data-tab="decision"]', 'button[data-action="resume"]'],
      waitAfterClicks: [".verdict-large", "#notice.visible"],
      readAfterClicks: { verdict: ".verdict-large", rules: ".rule", proposal: ".proposal-json", notice: "#notice" },
    });
    // The details (and the State tab) came from the host on selection: the real round trip through the store.
    const state = await askBrowser({
      name: "state",
      waitFor: `body[data-loaded="${RUN}"]`,
      read: {},
      click: ['.tab[data-tab="state"]'],
      waitAfterClicks: ["table.state"],
      readAfterClicks: { rows: "table.state tbody tr", note: ".tab-body > div > p" },
    });
    assert.equal(state.found, true, state.error);
    assert.deepEqual(
      state.after?.rows?.map((r) => normalise(r).split(" ")[0]),
      ["decision", "invoice", "proposal", "supplier"],
    );
    assert.match(
      state.after?.rows?.map(normalise).find((r) => r.startsWith("invoice")) ?? "",
      /fact of record from erp:invoices\/INV-1042/,
    );
    assert.match(state.after?.note?.[0] ?? "", /State after superstep 2; marks compare with superstep 1\./);
    assert.equal(checks.found, true, checks.error);
    assert.deepEqual(checks.texts.rows?.map(normalise), [
      "#0 loadInvoice loadSupplier",
      "#1 triage",
      "#2 decide accepted",
      "#3 postPayment",
    ]);
    assert.deepEqual(checks.texts.title, ["invoice"]);
    assert.deepEqual(checks.after?.verdict?.map(normalise), ["Accepted"]);
    assert.equal(checks.after?.rules?.length, 3);
    assert.match(checks.after?.proposal?.[0] ?? "", /"action": "approve"/);
    // The host answered the Resume click through the runner: the fixture's run names a workflow file the workspace lacks.
    assert.match(checks.after?.notice?.[0] ?? "", /^BUNDLE_FAILED: cannot bundle workflow \S*invoice\.workflow\.ts/);
    assert.deepEqual(checks.cspViolations, [], "the panel's CSP refused nothing the inspector does");
  });

  itWithBrowser("follows the case file: a superstep written while the panel is open appears in the timeline", async () => {
    const store = await openCaseFile(caseFile.fsPath, { create: false });
    try {
      store.commit(extraSuperstep(RUN, 4));
    } finally {
      store.close();
    }
    const checks = await askBrowser({
      name: "live",
      waitFor: '.timeline-row[data-index="4"]',
      read: { rows: ".timeline-row", selected: ".detail-head h2" },
    });
    assert.equal(checks.found, true, checks.error);
    assert.deepEqual(checks.texts.rows?.map(normalise).slice(-2), ["#3 postPayment", "#4 archive"]);
    assert.deepEqual(checks.texts.selected, ["Superstep 2"], "the person's selection is kept");
  });

  itWithBrowser("comes back with its run and the person's selection after being hidden behind another editor", async () => {
    const doc = await vscode.workspace.openTextDocument({ content: "covering the inspector", language: "plaintext" });
    await vscode.window.showTextDocument(doc, { viewColumn: vscode.ViewColumn.Active, preview: false });
    await new Promise((r) => setTimeout(r, 500));
    const panel = await api.inspectorPanel(caseFile);
    assert.ok(panel, "expected: panel");
    assert.equal(panel.panel.visible, false, "the text editor covers the inspector");
    panel.panel.reveal();
    const checks = await askBrowser({
      name: "reshown",
      waitFor: `body[data-loaded="${RUN}"]`,
      read: { rows: ".timeline-row", selected: ".detail-head h2" },
    });
    assert.equal(checks.found, true, checks.error);
    assert.equal(checks.texts.rows?.length, 5);
    assert.deepEqual(checks.texts.selected, ["Superstep 2"]);
    await vscode.commands.executeCommand("workbench.action.closeAllEditors");
    await vscode.commands.executeCommand("casefile.openInspector", caseFile, RUN);
  });

  itWithBrowser("drops malformed and hostile messages from the webview, logs them, and keeps working", async () => {
    const panel = await api.inspectorPanel(caseFile);
    assert.ok(panel, "the inspector is open");
    const droppedBefore = panel.dropped;
    const checks = await askBrowser({
      name: "hostile",
      waitFor: `body[data-loaded="${RUN}"]`,
      read: {},
      postRaw: [
        { type: "resumeFrom", runId: RUN },
        { type: "runShell", command: "rm -rf /" },
        { type: "exportStepAsEval", runId: RUN, stepId: "x", format: "../../etc/passwd" },
        "not an object",
      ],
      clickAfterRaw: ['.timeline-row:has(.superstep-number:text-is("#1"))', 'button[data-action="export"]'],
      waitAfterClicks: ["#notice.visible"],
      readAfterClicks: { notice: "#notice" },
    });
    assert.equal(checks.found, true, checks.error);
    assert.equal(panel.dropped - droppedBefore, 4);
    // The Casefile log channel writes to a file under the extension's log folder.
    const logged = await readLogs(api.ctx.extension.logUri);
    assert.equal((logged.match(/dropped a malformed message from the webview/g) ?? []).length, 4, logged.slice(-2000));
    // The export ran (the CLI, in a child process) for the step's agent call, and said why it could not.
    assert.match(checks.after?.notice?.[0] ?? "", /^Export failed: casefile: \w+: /);
    assert.doesNotMatch(checks.after?.notice?.[0] ?? "", /no agent step/);
  });
});

/** One more superstep for a run of the invoice fixture: a code step and its checkpoint. */
function extraSuperstep(runId: string, n: number): CommitBatch {
  const at = "2026-11-30T10:09:00.000Z";
  return {
    values: [{ run: runId, key: "archived", version: 1, value: true }],
    steps: [
      {
        id: `${runId}-s${n}-archive`,
        runId,
        superstep: n,
        executor: "archive",
        kind: "code",
        status: "ok",
        startedAt: at,
        endedAt: at,
        durationMs: 4,
        writes: ["archived"],
        sent: 0,
      },
    ],
    checkpoints: [
      {
        v: 1,
        id: `${runId}-cp${n}`,
        runId,
        superstep: n,
        parentId: `${runId}-cp${n - 1}`,
        createdAt: at,
        workflow: { name: "invoice", version: 1, graphHash: "g-7f3a", executors: ["archive"] },
        keys: { archived: { version: 1, run: runId } },
        pending: [],
        fanIn: {},
        local: {},
        waiting: [],
      },
    ],
  };
}

async function readLogs(dir: vscode.Uri): Promise<string> {
  let text = "";
  for (const [name, type] of await vscode.workspace.fs.readDirectory(dir)) {
    if (type === vscode.FileType.File && name.endsWith(".log")) {
      text += new TextDecoder().decode(await vscode.workspace.fs.readFile(vscode.Uri.joinPath(dir, name)));
    }
  }
  return text;
}

function normalise(s: string): string {
  return s.replace(/\s+/g, " ").trim();
}
