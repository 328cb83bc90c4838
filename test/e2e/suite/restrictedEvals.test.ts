import * as assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import { toOwnJson, type EvalCase } from "../../../src/engine/evalCase";
import type { CasefileTestApi } from "../../../src/extension/extension";
import { caseItemId } from "../../../src/extension/evalTestTree";
import { RESTRICTED_MODE_EXPLANATION } from "../../../src/extension/trust";

/** Restricted Mode (the untrusted pass): the Testing view lists eval cases (parsing runs no code) and refuses to run them, saying why. */
describe("Restricted Mode lists eval cases in the Testing view but does not run them", function () {
  this.timeout(60_000);

  it("the case is listed; running it ends errored with the reason, before any process starts", async () => {
    const api = await vscode.extensions.getExtension<CasefileTestApi>("casefile.casefile")!.activate();
    const dir = path.join(vscode.workspace.workspaceFolders![0]!.uri.fsPath, "restricted-evals");
    mkdirSync(dir, { recursive: true });
    const file = path.join(dir, "case-r.eval.json");
    const c: EvalCase = {
      format: "casefile-eval",
      v: 1,
      id: "case-r",
      workflow: { name: "invoice-variance", version: 1, file: "workflow.ts" },
      step: "propose",
      request: { messages: [{ role: "user", content: "Decide." }], model: "m", params: {}, responseSchema: {}, hash: "h" },
      facts: {},
      rules: [],
      answer: '{"action":"approve"}',
      expected: { action: "approve", verdict: "accepted", proposal: { action: "approve" } },
      provenance: { caseFile: path.join(dir, "x.casefile"), runId: "run-1", superstep: 1, agentCallId: "c1" },
    };
    writeFileSync(file, toOwnJson(c));
    await api.ctx.evalTests.discover(true);
    const id = caseItemId(file, "case-r");
    let item: vscode.TestItem | undefined;
    api.ctx.evalTests.controller.items.forEach(function walk(i) {
      if (i.id === id) item = i;
      i.children.forEach(walk);
    });
    assert.ok(item, `listed in Restricted Mode: ${id}`);
    const outcomes = await api.ctx.evalTests.execute(new vscode.TestRunRequest([item]), undefined, undefined);
    assert.deepEqual(outcomes.get(id), { kind: "refused", message: RESTRICTED_MODE_EXPLANATION });
  });
});
