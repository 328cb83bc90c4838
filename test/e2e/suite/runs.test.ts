import * as assert from "node:assert/strict";
import { copyFileSync, existsSync, mkdirSync, readFileSync } from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import { invoiceSeed } from "../../../examples/invoice/erpData";
import { openCaseFile } from "../../../src/casefile/index";
import type { CasefileTestApi } from "../../../src/extension/extension";
import { useErp } from "./erp";
import { askBrowser, browserAvailable, browserCheckLeftOut, itWithBrowser } from "./exchange";

/** The repository: the suite is bundled to dist/e2e/ (buildSuite.ts). */
const ROOT = path.resolve(__dirname, "../..");

type Result = { ok: true; runId: string; status: string; caseFile: string; message: string; file?: string } | { ok: false; reason: string };

/**
 * The invoice example run from the editor: the ERP stand-in runs in this process (the extension
 * host), the workflow is copied into the workspace, and every command goes through the real
 * runner child process with the scripted model (workflow.responses.json).
 */
describe("Running the invoice example from the editor", function () {
  // A busy 2-core machine: bundling the workflow and a run take seconds each.
  this.timeout(120_000);
  let api: CasefileTestApi;
  useErp(invoiceSeed);
  let workflow: vscode.Uri;
  let caseFile: vscode.Uri;
  let runId: string;

  before(async () => {
    api = await vscode.extensions.getExtension<CasefileTestApi>("casefile.casefile")!.activate();
    const folder = vscode.workspace.workspaceFolders![0]!.uri.fsPath;
    mkdirSync(path.join(folder, "invoice"), { recursive: true });
    for (const f of ["workflow.ts", "workflow.responses.json"]) {
      copyFileSync(path.join(ROOT, "examples", "invoice", f), path.join(folder, "invoice", f));
    }
    workflow = vscode.Uri.file(path.join(folder, "invoice", "workflow.ts"));
    caseFile = vscode.Uri.file(path.join(folder, "invoice", "INV-1001.casefile"));
  });

  it("the Workflows view lists the workspace's workflow file", async () => {
    // Other suites may add workflow files of their own (the New Workflow scaffold): ours must be among them.
    const listed = (await api.ctx.views.listWorkflows()).map((u) => vscode.workspace.asRelativePath(u));
    assert.ok(listed.includes("invoice/workflow.ts"), listed.join(", "));
    assert.ok(!listed.some((f) => f.endsWith("erpData.ts") || f.endsWith(".d.ts")), "only files that call defineWorkflow");
  });

  it("Run Workflow runs it to the person's review, and the Runs view lists its case file", async () => {
    const result = (await vscode.commands.executeCommand("casefile.run", workflow, { invoiceId: "INV-1001" }, caseFile.fsPath)) as Result;
    assert.equal(result.ok, true, result.ok ? "" : result.reason);
    assert.ok(result.ok, "expected: result.ok");
    // A 9% variance: the tolerance rule escalates the agent's "approve", and the run waits for a person.
    assert.equal(result.status, "waiting");
    runId = result.runId;
    const listed = await api.ctx.views.listCaseFiles();
    assert.ok(
      listed.some((u) => u.fsPath === caseFile.fsPath),
      listed.map((u) => u.fsPath).join(", "),
    );
  });

  it("the Runs view draws the run with its checkpoints and steps, and the Requests view lists its review", async () => {
    const { runs, requests } = api.ctx.views.trees;
    const file = (await runs.getChildren()).find((n) => n.kind === "caseFile" && n.caseFile.fsPath === caseFile.fsPath)!;
    const [run, ...others] = await runs.getChildren(file);
    assert.equal(others.length, 0);
    assert.equal(run?.kind === "run" && run.id, runId);
    const checkpoints = (await runs.getChildren(run)).filter((n) => n.kind === "checkpoint");
    assert.ok(checkpoints.length >= 3, `${checkpoints.length} checkpoints`);
    const steps = (await Promise.all(checkpoints.map((c) => runs.getChildren(c)))).flat();
    assert.ok(
      steps.some((s) => s.kind === "step" && s.agent && s.executor === "propose"),
      steps.map((s) => (s.kind === "step" ? s.executor : s.kind)).join(", "),
    );
    const waiting = (await requests.getChildren()).filter((r) => r.caseFile.fsPath === caseFile.fsPath);
    assert.equal(waiting.length, 1);
    assert.equal(waiting[0]!.kind, "request");
  });

  it("Step Workflow pauses at each superstep boundary until told to continue", async () => {
    const stepped = vscode.Uri.file(path.join(path.dirname(caseFile.fsPath), "INV-1002.casefile"));
    const running = vscode.commands.executeCommand(
      "casefile.step",
      workflow,
      { invoiceId: "INV-1002" },
      stepped.fsPath,
    ) as Thenable<Result>;
    let paused = api.ctx.runs.pausedAt;
    for (let i = 0; i < 300 && !paused; i++) {
      await new Promise((r) => setTimeout(r, 100));
      paused = api.ctx.runs.pausedAt;
    }
    assert.ok(paused, "the run paused");
    const first = paused.superstep;
    assert.deepEqual(await vscode.commands.executeCommand("casefile.stepControl", "step"), { ok: true });
    for (let i = 0; i < 300 && (api.ctx.runs.pausedAt?.superstep ?? first) === first; i++) await new Promise((r) => setTimeout(r, 100));
    assert.ok((api.ctx.runs.pausedAt?.superstep ?? -1) > first, "one Step moved one superstep on and paused again");
    if (browserAvailable()) {
      // The Run Inspector shows where the run waits, and its Continue button lets it go on.
      const at = api.ctx.runs.pausedAt!;
      await vscode.commands.executeCommand("casefile.openInspector", stepped, at.runId);
      const checks = await askBrowser({
        name: "step-controls",
        waitFor: '#run-controls[data-state="paused"] button[data-control="continue"]:not([disabled])',
        read: { state: "#run-controls .run-state", buttons: "#run-controls button" },
        click: ['button[data-control="continue"]'],
      });
      if (!checks.found) await vscode.commands.executeCommand("casefile.stepControl", "continue");
      assert.equal(checks.found, true, checks.error);
      assert.equal(checks.texts.state?.[0]?.trim(), `Paused ${at.runId} before superstep ${at.superstep}`);
      assert.deepEqual(
        checks.texts.buttons?.map((b) => b.trim()),
        ["Continue", "Step", "Stop"],
      );
    } else {
      await vscode.commands.executeCommand("casefile.stepControl", "continue");
      browserCheckLeftOut("the Run Inspector's run controls (Paused ..., Continue/Step/Stop)");
    }
    const result = await running;
    assert.equal(result.ok, true, result.ok ? "" : result.reason);
    // A 2% variance: approved and paid, no person needed.
    assert.ok(result.ok, "expected: result.ok");
    assert.equal(result.status, "completed");
  });

  it("the Workflow Graph follows a step-mode run live: it highlights where the run waits, moves with Step, lets go when it stops", async () => {
    const stepped = vscode.Uri.file(path.join(path.dirname(caseFile.fsPath), "INV-1002-graph.casefile"));
    const shown = (await vscode.commands.executeCommand("casefile.showGraph", workflow)) as { ok: boolean; reason?: string };
    assert.equal(shown.ok, true, shown.reason);
    const panel = await api.graphPanel(workflow);
    assert.ok(panel, "the graph panel of the workflow is open");
    const running = vscode.commands.executeCommand(
      "casefile.step",
      workflow,
      { invoiceId: "INV-1002" },
      stepped.fsPath,
    ) as Thenable<Result>;
    /** Polls (100 ms, up to 30 s) until `get` gives something. */
    const until = async <T>(what: string, get: () => T | undefined): Promise<T> => {
      for (let i = 0; i < 300; i++) {
        const v = get();
        if (v !== undefined) return v;
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error(`timed out waiting for ${what}`);
    };
    /** The highlight once it shows where the run waits now, checked against the case file's checkpoint. */
    const highlightAtPause = async () => {
      // Paused before superstep N: the graph shows the checkpoint the run waits at, N - 1.
      const at = await until("the run to pause", () => api.ctx.runs.pausedAt);
      const live = await until(`the graph to show checkpoint ${at.superstep - 1}`, () => {
        const l = panel.live;
        return l && l.runId === at.runId && l.superstep === at.superstep - 1 ? l : undefined;
      });
      const store = await openCaseFile(stepped.fsPath, { readOnly: true });
      try {
        const pending = [...new Set(store.latestCheckpoint(at.runId)!.pending.map((m) => m.to))];
        assert.deepEqual(live, { source: "checkpoint", runId: at.runId, superstep: at.superstep - 1, executors: pending });
      } finally {
        store.close();
      }
      assert.ok(live.executors.length > 0, "something runs next");
      return live;
    };
    try {
      const first = await highlightAtPause();
      if (browserAvailable()) {
        const checks = await askBrowser({
          name: "graph-live",
          waitFor: `.node.running[data-executor="${first.executors[0]}"]`,
          read: { live: "#live", running: ".node.running" },
        });
        assert.equal(checks.found, true, checks.error);
        assert.equal(
          checks.texts.live?.[0],
          `Latest checkpoint (superstep ${first.superstep}) of run ${first.runId}: pending ${first.executors.join(", ")}`,
        );
        assert.equal(checks.texts.running?.length, first.executors.length);
      } else {
        browserCheckLeftOut("the Workflow Graph's highlight of the running executors");
      }
      assert.deepEqual(await vscode.commands.executeCommand("casefile.stepControl", "step"), { ok: true });
      await until("one Step", () => ((api.ctx.runs.pausedAt?.superstep ?? first.superstep) > first.superstep ? true : undefined));
      const second = await highlightAtPause();
      assert.ok(second.superstep > first.superstep, "expected: second.superstep > first.superstep");
    } finally {
      if (api.ctx.runs.running) await vscode.commands.executeCommand("casefile.stepControl", "stop");
    }
    const result = await running;
    assert.ok(result.ok, result.ok ? "" : result.reason);
    assert.equal(result.status, "stopped");
    // No run drives it any more: the graph shows what the workflow's own case file says (the
    // run above went to another file, so here: nothing), not the stopped run's last superstep.
    const own = path.join(path.dirname(workflow.fsPath), "workflow.casefile");
    assert.ok(!existsSync(own), `${own} is not there`);
    await until("the graph to let go of the run", () => (!api.ctx.runs.running && panel.live === null ? true : undefined));
    await vscode.commands.executeCommand("workbench.action.closeAllEditors");
  });

  itWithBrowser("the Run Inspector shows the agent's proposal against the commit's verdict", async () => {
    const superstep = await agentSuperstep();
    await vscode.commands.executeCommand("workbench.action.closeAllEditors");
    await vscode.commands.executeCommand("casefile.openInspector", caseFile, runId);
    const checks = await askBrowser({
      name: "run-proposal",
      waitFor: `body[data-loaded="${runId}"]`,
      read: { rows: ".timeline-row" },
      click: [`.timeline-row:has(.superstep-number:text-is("#${superstep}"))`, '.tab[data-tab="decision"]'],
      waitAfterClicks: [".verdict-large"],
      readAfterClicks: { verdict: ".verdict-large", proposal: ".proposal-json", rules: ".rule" },
    });
    assert.equal(checks.found, true, checks.error);
    assert.match(checks.after?.proposal?.[0] ?? "", /"action": "approve_variance"/);
    assert.deepEqual(
      checks.after?.verdict?.map((s) => s.replace(/\s+/g, " ").trim()),
      ["Escalated"],
    );
    assert.ok((checks.after?.rules?.length ?? 0) >= 1, "the commit's rules are listed");
  });

  it("Resume from Checkpoint forks a branch of the run", async () => {
    const first = await firstCheckpoint();
    const result = (await vscode.commands.executeCommand("casefile.resume", caseFile, first)) as Result;
    assert.equal(result.ok, true, result.ok ? "" : result.reason);
    assert.ok(result.ok, "expected: result.ok");
    assert.notEqual(result.runId, runId);
    const model = await api.ctx.inspector.load(caseFile, result.runId);
    const branch = model.branches.find((b) => b.runId === result.runId);
    assert.ok(branch, JSON.stringify(model.branches));
    assert.equal(branch.parentRunId, runId);
    assert.equal(branch.parentCheckpointId, first);
    // The Runs view draws the branch under the run it came from.
    const { runs } = api.ctx.views.trees;
    const file = (await runs.getChildren()).find((n) => n.kind === "caseFile" && n.caseFile.fsPath === caseFile.fsPath)!;
    const [run] = await runs.getChildren(file);
    const under = (await runs.getChildren(run)).filter((n) => n.kind === "run");
    assert.deepEqual(
      under.map((n) => n.kind === "run" && n.id),
      [result.runId],
    );
  });

  it("Fork with Edited State opens the state as JSON; a save the schemas refuse is a diagnostic on the key, a valid one forks", async () => {
    const store = await openCaseFile(caseFile.fsPath, { readOnly: true });
    const checkpoint = store
      .listCheckpoints(runId)
      .map((c) => store.getCheckpoint(c.id)!)
      .find((c) => "variance" in c.keys)!;
    store.close();
    const opened = (await vscode.commands.executeCommand("casefile.forkWithEditedState", caseFile, checkpoint.id)) as Result;
    assert.ok(opened.ok && opened.file, opened.ok ? "" : opened.reason);
    const doc = await vscode.workspace.openTextDocument(opened.file);
    const state = JSON.parse(doc.getText()) as { variance: { amount: number; pct: number } };
    const save = async (text: string): Promise<Result> => {
      api.ctx.forks.lastOutcome.delete(doc.uri.fsPath);
      const edit = new vscode.WorkspaceEdit();
      edit.replace(doc.uri, new vscode.Range(0, 0, doc.lineCount, 0), text);
      await vscode.workspace.applyEdit(edit);
      await doc.save();
      for (let i = 0; i < 600 && !api.ctx.forks.lastOutcome.has(doc.uri.fsPath); i++) await new Promise((r) => setTimeout(r, 100));
      return api.ctx.forks.lastOutcome.get(doc.uri.fsPath) as Result;
    };
    const refused = await save(JSON.stringify({ ...state, variance: { ...state.variance, pct: "lots" } }, null, 2));
    assert.equal(refused.ok, false);
    const diagnostics = api.ctx.forks.diagnosticsOf(doc.uri);
    assert.equal(diagnostics.length, 1);
    assert.equal(doc.getText(diagnostics[0]!.range), '"variance"');
    const forked = await save(JSON.stringify({ ...state, variance: { ...state.variance, pct: 1 } }, null, 2));
    assert.equal(forked.ok, true, forked.ok ? "" : forked.reason);
    assert.equal(api.ctx.forks.diagnosticsOf(doc.uri).length, 0);
    await vscode.commands.executeCommand("workbench.action.closeAllEditors");
  });

  it("Export Step as Eval writes the eval case into the workspace and names it", async () => {
    const store = await openCaseFile(caseFile.fsPath, { readOnly: true });
    const call = store.listAgentCalls(runId)[0]!;
    store.close();
    const result = (await vscode.commands.executeCommand("casefile.exportStepAsEval", caseFile, call.id, "json")) as Result;
    assert.equal(result.ok, true, result.ok ? "" : result.reason);
    assert.ok(result.ok && result.file, "expected: result.ok && result.file");
    assert.ok(result.file.startsWith(vscode.workspace.workspaceFolders![0]!.uri.fsPath), result.file);
    assert.ok(existsSync(result.file), "expected: existsSync(result.file)");
    const evalCase = JSON.parse(readFileSync(result.file, "utf8")) as { step: string };
    assert.equal(evalCase.step, call.executor);
    assert.match(result.message, /Eval case written to invoice\/evals\//);
  });

  it("Replay Step replays the agent step as a branch: recorded, and edited from its context saved in an editor", async () => {
    const store = await openCaseFile(caseFile.fsPath, { readOnly: true });
    const call = store.listAgentCalls(runId)[0]!;
    store.close();
    const recorded = (await vscode.commands.executeCommand("casefile.replayStep", caseFile, call.id, "recorded")) as Result;
    assert.equal(recorded.ok, true, recorded.ok ? "" : recorded.reason);
    assert.ok(recorded.ok, "expected: recorded.ok");
    assert.notEqual(recorded.runId, runId);

    const opened = (await vscode.commands.executeCommand("casefile.replayStep", caseFile, call.id, "edited")) as Result;
    assert.ok(opened.ok && opened.file, opened.ok ? "" : opened.reason);
    const doc = await vscode.workspace.openTextDocument(opened.file);
    const messages = JSON.parse(doc.getText()) as { role: string; content: string }[];
    assert.deepEqual(messages, call.request.messages, "the editor holds the step's recorded context");
    messages[messages.length - 1]!.content += "\nThe supplier confirmed the price rise in writing.";
    const edit = new vscode.WorkspaceEdit();
    edit.replace(doc.uri, new vscode.Range(0, 0, doc.lineCount, 0), JSON.stringify(messages, null, 2));
    await vscode.workspace.applyEdit(edit);
    await doc.save();
    for (let i = 0; i < 600 && !api.ctx.forks.lastOutcome.has(doc.uri.fsPath); i++) await new Promise((r) => setTimeout(r, 100));
    const edited = api.ctx.forks.lastOutcome.get(doc.uri.fsPath) as Result | undefined;
    assert.ok(edited, "the save replayed the step");
    assert.equal(edited.ok, true, edited.ok ? "" : edited.reason);
    await vscode.commands.executeCommand("workbench.action.closeAllEditors");
  });

  it("Answer Request answers the waiting review and the run goes on", async () => {
    const store = await openCaseFile(caseFile.fsPath, { readOnly: true });
    const waiting = store.latestCheckpoint(runId)?.waiting[0];
    store.close();
    assert.ok(waiting, "the run waits for a person");
    const answer = { decision: "reject", comment: "Price rise not agreed; ask for a credit note." };
    const result = (await vscode.commands.executeCommand("casefile.answerRequest", caseFile, waiting.id, answer)) as Result;
    assert.equal(result.ok, true, result.ok ? "" : result.reason);
    assert.ok(result.ok, "expected: result.ok");
    assert.notEqual(result.status, "waiting");
  });

  async function agentSuperstep(): Promise<number> {
    const store = await openCaseFile(caseFile.fsPath, { readOnly: true });
    try {
      return store.listAgentCalls(runId)[0]!.superstep;
    } finally {
      store.close();
    }
  }

  async function firstCheckpoint(): Promise<string> {
    const store = await openCaseFile(caseFile.fsPath, { readOnly: true });
    try {
      return store.listCheckpoints(runId)[0]!.id;
    } finally {
      store.close();
    }
  }
});
