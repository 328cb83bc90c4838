import * as assert from "node:assert/strict";
import { existsSync } from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import { openCaseFile } from "../../../src/casefile/index";
import type { CasefileTestApi } from "../../../src/extension/extension";
import { askBrowser, itWithBrowser } from "./exchange";
import { recordMetric } from "./metrics";

type Result = { ok: true; runId: string; status: string; caseFile: string; message: string } | { ok: false; reason: string };

const THEMES = [
  ["light-modern", "Default Light Modern"],
  ["dark-modern", "Default Dark Modern"],
  ["high-contrast", "Default High Contrast"],
] as const;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * A newcomer's first ten minutes (issue 13), in code-server with the repository's examples/ as the
 * workspace (test/e2e/run.ts, pass "newcomer"): nothing is started by the test. Run on the invoice
 * workflow goes through the input form and the examples' launch configuration, whose preLaunchTask
 * starts the ERP stand-in; the run waits for a person; the request is answered with the button in
 * the Run Inspector; the run completes; the graph opens from the inspector. Timings are printed.
 */
describe("Newcomer: examples/ opened as the workspace", function () {
  this.timeout(300_000);
  let api: CasefileTestApi;
  let root: string;
  let workflow: vscode.Uri;
  let caseFile: vscode.Uri;
  let runId = "";

  before(async () => {
    api = await vscode.extensions.getExtension<CasefileTestApi>("casefile.casefile")!.activate();
    root = vscode.workspace.workspaceFolders![0]!.uri.fsPath;
    workflow = vscode.Uri.file(path.join(root, "invoice", "workflow.ts"));
    caseFile = vscode.Uri.file(path.join(root, "invoice", "cases", "INV-1001.casefile"));
  });

  after(async () => {
    await vscode.workspace.getConfiguration("workbench").update("colorTheme", undefined, vscode.ConfigurationTarget.Global);
  });

  it("opens the invoice workflow with 0 problems: casefile and zod resolve with no npm install in examples/", async () => {
    const editor = await vscode.window.showTextDocument(workflow);
    const at = editor.document.positionAt(editor.document.getText().indexOf("defineWorkflow({"));
    // The TypeScript server has read the project once it can say what defineWorkflow is.
    let hover = "";
    for (let i = 0; i < 120 && !hover.includes("Workflow"); i++) {
      const hovers = (await vscode.commands.executeCommand("vscode.executeHoverProvider", editor.document.uri, at)) as vscode.Hover[];
      hover = hovers
        .flatMap((h) => h.contents)
        .map((c) => (typeof c === "string" ? c : c.value))
        .join(" ");
      if (!hover.includes("Workflow")) await sleep(500);
    }
    assert.match(hover, /Workflow/, `TypeScript knows defineWorkflow from "casefile" (hover: ${hover || "none"})`);
    await sleep(2000);
    const problems = vscode.languages
      .getDiagnostics(workflow)
      .filter((d) => d.severity === vscode.DiagnosticSeverity.Error || d.severity === vscode.DiagnosticSeverity.Warning);
    assert.deepEqual(
      problems.map((d) => `${d.range.start.line + 1}: ${d.message}`),
      [],
      "the invoice workflow shows no problem",
    );
  });

  itWithBrowser(
    "runs the invoice workflow from the Workflows view through the input form; the ERP's task starts; the run waits",
    async () => {
      const listed = await api.ctx.views.listWorkflows();
      const item = listed.find((u) => u.fsPath === workflow.fsPath);
      assert.ok(item, `the Workflows view lists invoice/workflow.ts: ${listed.map((u) => u.fsPath).join(", ")}`);
      // What the view's inline Run button invokes, with the view's item.
      const t0 = performance.now();
      const running = vscode.commands.executeCommand("casefile.run", item) as Thenable<Result>;
      const form = await askBrowser({
        name: "newcomer-input-form",
        waitFor: '.quick-input-widget .quick-input-title:has-text("Run workflow.ts: input")',
        read: { items: ".quick-input-widget .monaco-list-row .label-name" },
        keys: [{ type: "Fill in the form", press: "Enter" }, { type: "INV-1001", press: "Enter" }, { press: "Enter" }],
      });
      assert.ok(form.found, form.error ?? "the input form opened");
      const submitted = performance.now();
      const result = await running;
      const finished = performance.now();
      assert.ok(result.ok, result.ok ? "" : result.reason);
      assert.equal(result.status, "waiting", `a 9% variance escalates: the run waits for a person (the run said: ${result.message})`);
      assert.equal(result.caseFile, caseFile.fsPath, "the case file is named from the input: cases/INV-1001.casefile");
      runId = result.runId;
      assert.ok(existsSync(path.join(root, ".erp", "erp.env")), "the ERP stand-in's task wrote its address (.erp/erp.env)");
      assert.ok(
        vscode.tasks.taskExecutions.some((e) => e.task.name === "ERP stand-in"),
        "the ERP stand-in runs as the launch configuration's preLaunchTask",
      );
      const waiting = (await api.ctx.views.trees.requests.getChildren()).filter((r) => r.caseFile.fsPath === caseFile.fsPath);
      assert.equal(waiting.length, 1, "the Requests view lists the review");
      recordMetric("newcomer: Run clicked to finished notification", `${((finished - t0) / 1000).toFixed(1)} s`);
      recordMetric("newcomer: input form submitted to finished notification", `${((finished - submitted) / 1000).toFixed(1)} s`);
    },
  );

  itWithBrowser("opens the case file's inspector on the waiting request (timed cold and warm), and answers it there", async () => {
    assert.ok(runId, "the run above waits");
    const paint = async (): Promise<number> => {
      const t0 = performance.now();
      await vscode.commands.executeCommand("vscode.open", caseFile);
      for (let i = 0; i < 600; i++) {
        const p = (await api.inspectorPanel(caseFile))?.painted;
        if (p?.runId === runId && p.at > t0) return p.at - t0;
        await sleep(25);
      }
      throw new Error("the Run Inspector did not paint the run within 15 s");
    };
    const cold = await paint();
    (await api.inspectorPanel(caseFile))!.dispose();
    await sleep(500);
    const warm = await paint();
    recordMetric("newcomer: case file clicked to painted inspector, cold", `${cold.toFixed(0)} ms`);
    recordMetric("newcomer: case file clicked to painted inspector, warm", `${warm.toFixed(0)} ms`);

    const answer = await askBrowser({
      name: "newcomer-answer",
      waitFor: ".request-card.request-waiting .request-option",
      read: { prompt: ".request-card h3", options: ".request-option", status: "header .status" },
      click: ["textarea.request-comment", '.request-option[data-option="approve"]'],
      waitAfterClicks: ["header .status-completed", ".request-answered"],
      readAfterClicks: { status: "header .status", answered: ".request-answered .answered-by" },
    });
    assert.ok(answer.found, answer.error ?? "the inspector showed the request");
    assert.match(answer.texts.prompt?.[0] ?? "", /Review invoice INV-1001/, "the request's prompt is on the card");
    assert.deepEqual(answer.texts.options, ["approve", "reject"], "the options are buttons");
    assert.match(answer.after?.status?.[0] ?? "", /completed/i, "the run completes once answered");
    assert.match(answer.after?.answered?.[0] ?? "", /Answered by .+: approve at /, "the card says who answered, what and when");
    const store = await openCaseFile(caseFile.fsPath, { readOnly: true });
    try {
      assert.equal(store.getRun(runId)?.status, "completed", "the case file records the run completed");
    } finally {
      store.close();
    }
  });

  itWithBrowser("reads in Light Modern, Dark Modern and High Contrast (screenshots)", async () => {
    for (const [slug, theme] of THEMES) {
      await vscode.workspace.getConfiguration("workbench").update("colorTheme", theme, vscode.ConfigurationTarget.Global);
      await sleep(1500);
      const shot = await askBrowser({
        name: `newcomer-inspector-${slug}`,
        waitFor: ".request-answered",
        read: { status: "header .status", answered: ".request-answered .answered-by" },
      });
      assert.ok(shot.found, shot.error ?? `the inspector shows in ${theme}`);
    }
  });

  itWithBrowser("opens the Workflow Graph from the inspector's header, fitted to its panel", async () => {
    const opened = await askBrowser({
      name: "newcomer-graph-button",
      waitFor: "button.show-graph:not([disabled])",
      read: {},
      click: ["button.show-graph"],
    });
    assert.ok(opened.found, opened.error ?? "the inspector has a Graph button");
    let graph;
    for (let i = 0; i < 120 && !graph; i++) {
      graph = await api.graphPanel(workflow);
      if (!graph) await sleep(250);
    }
    assert.ok(graph, "the Workflow Graph of invoice/workflow.ts opened");
    const drawn = await askBrowser({
      name: "newcomer-graph",
      waitFor: '.node[data-executor="review"]',
      read: { nodes: ".node .node-name", zoom: "#zoom-level" },
    });
    assert.ok(drawn.found, drawn.error ?? "the graph is drawn");
    assert.ok((drawn.texts.nodes ?? []).includes("review"), `the graph shows the request step: ${drawn.texts.nodes?.join(", ")}`);
    assert.match(drawn.texts.zoom?.[0] ?? "", /%/, "the graph shows its zoom");
  });
});
