import * as assert from "node:assert/strict";
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import { invoiceSeed } from "../../../examples/invoice/erpData";
import { openCaseFile } from "../../../src/casefile/index";
import type { AgentCallRecord } from "../../../src/engine/records";
import type { CasefileTestApi } from "../../../src/extension/extension";
import { suiteConfig } from "./config";
import { useErp } from "./erp";

/** The repository: the suite is bundled to dist/e2e/ (buildSuite.ts). */
const ROOT = path.resolve(__dirname, "../..");
/** The fixture extension test/e2e/lmProvider/, loaded beside Casefile by the harness in the trusted pass. */
const LM_EXTENSION = "casefile-test.lm-provider";

type Result = { ok: true; runId: string; status: string; caseFile: string; message: string } | { ok: false; reason: string };

/**
 * The vscode-lm provider for real: a chat model registered through VS Code's Language Model API
 * (by the fixture extension, as Copilot or any other model extension would) answers the invoice
 * example's agent step. The runner child process asks the editor for the call over IPC; the
 * model's answer goes through the same proposal checks and commit rules as any other.
 */
describe("The vscode-lm provider: a model from VS Code's Language Model API", function () {
  this.timeout(120_000);
  useErp(invoiceSeed);
  let workflow: vscode.Uri;
  let caseFile: vscode.Uri;
  let runId: string;
  const requestsLog = path.join(suiteConfig().exchangeDir, "lm-requests.jsonl");
  const settings = () => vscode.workspace.getConfiguration("casefile");

  before(async () => {
    const loaded = vscode.extensions.all.filter((e) => !e.id.startsWith("vscode.")).map((e) => e.id);
    const casefile = vscode.extensions.getExtension<CasefileTestApi>("casefile.casefile");
    assert.ok(casefile, `Casefile is not loaded; loaded: ${loaded.join(", ")}`);
    await casefile.activate();
    const lm = vscode.extensions.getExtension(LM_EXTENSION);
    assert.ok(
      lm,
      `the fixture extension ${LM_EXTENSION} is not loaded (test/e2e/run.ts adds it in the trusted pass); loaded: ${loaded.join(", ")}`,
    );
    await lm.activate();
    const folder = path.join(vscode.workspace.workspaceFolders![0]!.uri.fsPath, "invoice-lm");
    mkdirSync(folder, { recursive: true });
    copyFileSync(path.join(ROOT, "examples", "invoice", "workflow.ts"), path.join(folder, "workflow.ts"));
    workflow = vscode.Uri.file(path.join(folder, "workflow.ts"));
    caseFile = vscode.Uri.file(path.join(folder, "INV-1002.casefile"));
    await settings().update("provider", "vscode-lm", vscode.ConfigurationTarget.Workspace);
    await settings().update("model", "casefile-test", vscode.ConfigurationTarget.Workspace);
    rmSync(requestsLog, { force: true });
  });

  after(async () => {
    await settings().update("provider", undefined, vscode.ConfigurationTarget.Workspace);
    await settings().update("model", undefined, vscode.ConfigurationTarget.Workspace);
  });

  it("the editor offers the fixture's model through vscode.lm", async () => {
    const models = await vscode.lm.selectChatModels({ family: "casefile-test" });
    assert.deepEqual(
      models.map((m) => m.id),
      ["casefile-test-model"],
    );
  });

  it("Run Workflow with provider vscode-lm: the editor's model answers the agent step, and the case file records it", async () => {
    const result = (await vscode.commands.executeCommand("casefile.run", workflow, { invoiceId: "INV-1002" }, caseFile.fsPath)) as Result;
    assert.equal(result.ok, true, result.ok ? "" : result.reason);
    assert.ok(result.ok, "expected: result.ok");
    runId = result.runId;
    // The fixture model asks for a credit note (the scripted fixture would have approved): the commit accepts it.
    assert.equal(result.status, "completed");

    const call = await agentCall(runId);
    assert.equal(call.provider, "vscode-lm");
    assert.equal(call.mode, "live");
    assert.equal((call.proposal as { action?: string }).action, "request_credit_note");
    assert.match(call.raw ?? "", /Answered by the e2e suite's language model/);
    assert.equal(call.rejection, undefined);

    // What the model was sent is the context the case file recorded, message for message (the
    // Language Model API has no system role: the system message arrives as a user message).
    const sent = sentRequests();
    assert.equal(sent.length, 1);
    assert.equal(sent[0]!.model, "casefile-test-model");
    assert.deepEqual(
      sent[0]!.messages.map((m) => m.content),
      call.request.messages.map((m) => m.content),
    );

    const store = await openCaseFile(caseFile.fsPath, { readOnly: true });
    try {
      const verdict = store.listVerdicts(runId)[0];
      assert.equal(verdict?.verdict, "accepted");
    } finally {
      store.close();
    }
  });

  it("Replay Step (live) calls the editor's model again, in a new branch", async () => {
    const call = await agentCall(runId);
    const replayed = (await vscode.commands.executeCommand("casefile.replayStep", caseFile, call.id, "live")) as Result;
    assert.equal(replayed.ok, true, replayed.ok ? "" : replayed.reason);
    assert.ok(replayed.ok, "expected: replayed.ok");
    assert.notEqual(replayed.runId, runId);
    assert.equal(sentRequests().length, 2, "the live replay called the model once more");
    const branch = await agentCall(replayed.runId);
    assert.equal(branch.provider, "vscode-lm");
    assert.equal(branch.mode, "live");
    assert.equal(branch.hash, call.hash, "the same state gives the same context");
  });

  it("with no model of the chosen family, the run fails with an error naming the Language Model API", async () => {
    await settings().update("model", "no-such-family", vscode.ConfigurationTarget.Workspace);
    const other = vscode.Uri.file(path.join(path.dirname(caseFile.fsPath), "INV-1001.casefile"));
    const result = (await vscode.commands.executeCommand("casefile.run", workflow, { invoiceId: "INV-1001" }, other.fsPath)) as Result;
    await settings().update("model", "casefile-test", vscode.ConfigurationTarget.Workspace);
    // The model call fails: the run stops failed with the reason, and what ran before is kept.
    assert.ok(result.ok, result.ok ? "" : result.reason);
    assert.equal(result.status, "failed");
    assert.match(result.message, /no language model is available in this editor \(vscode\.lm\)/);
    const store = await openCaseFile(other.fsPath, { readOnly: true });
    try {
      const [run] = store.listRuns();
      assert.equal(run?.status, "failed");
      assert.match(run?.error?.message ?? "", /no language model is available/);
      assert.ok(store.listCheckpoints(run!.id).length >= 1, "the checkpoints before the model step are kept");
    } finally {
      store.close();
    }
  });

  function sentRequests(): { model: string; messages: { role: string; content: string }[] }[] {
    if (!existsSync(requestsLog)) return [];
    return readFileSync(requestsLog, "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { model: string; messages: { role: string; content: string }[] });
  }

  async function agentCall(run: string): Promise<AgentCallRecord> {
    const store = await openCaseFile(caseFile.fsPath, { readOnly: true });
    try {
      const [call] = store.listAgentCalls(run);
      assert.ok(call, `run ${run} has an agent call`);
      return call;
    } finally {
      store.close();
    }
  }
});
