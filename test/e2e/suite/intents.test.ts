import * as assert from "node:assert/strict";
import { copyFileSync, mkdirSync } from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import { supplierSeed } from "../../../examples/supplier/erpSeed";
import { openCaseFile } from "../../../src/casefile/index";
import type { CasefileTestApi } from "../../../src/extension/extension";
import { useErp } from "./erp";

/** The repository: the suite is bundled to dist/e2e/ (buildSuite.ts). */
const ROOT = path.resolve(__dirname, "../..");

type Result = { ok: true; status: string; message: string } | { ok: false; reason: string };

/**
 * The Intents view on a real failure: the supplier-onboarding example runs from the editor against
 * the ERP stand-in, whose supplier collection already holds the id it will assign next (someone
 * created SUP-1002 by hand), so the create is refused with 409. The intent was written before the
 * act; it is recorded as failed with the ERP's answer, the run stops failed, and the Intents view
 * lists it across the workspace's case files.
 */
describe("The Intents view lists a failed effect", function () {
  this.timeout(120_000);
  let api: CasefileTestApi;
  const erp = useErp({ ...supplierSeed(2), suppliers: { "SUP-1002": { legalName: "Created by hand", taxNumber: "DE000000000" } } });
  let caseFile: vscode.Uri;
  let runId: string;

  before(async () => {
    api = await vscode.extensions.getExtension<CasefileTestApi>("casefile.casefile")!.activate();
    const folder = path.join(vscode.workspace.workspaceFolders![0]!.uri.fsPath, "supplier");
    mkdirSync(folder, { recursive: true });
    for (const f of ["workflow.ts", "workflow.responses.json"]) {
      copyFileSync(path.join(ROOT, "examples", "supplier", f), path.join(folder, f));
    }
    caseFile = vscode.Uri.file(path.join(folder, "APP-0000.casefile"));
  });

  it("a refused create leaves a failed intent with the system's answer, and the Intents view lists it", async () => {
    const workflow = vscode.Uri.file(path.join(path.dirname(caseFile.fsPath), "workflow.ts"));
    const result = (await vscode.commands.executeCommand(
      "casefile.run",
      workflow,
      { applicationId: "APP-0000" },
      caseFile.fsPath,
    )) as Result;
    // The run stops failed, and what the editor tells the person names the effect and the system's answer.
    assert.equal(result.ok, true, result.ok ? "" : result.reason);
    assert.ok(result.ok, "expected: result.ok");
    assert.equal(result.status, "failed");
    assert.match(result.message, /failed: EFFECT_FAILED: .*createSupplier.*409/);

    const store = await openCaseFile(caseFile.fsPath, { readOnly: true });
    const runs = store.listRuns();
    assert.equal(runs.length, 1);
    runId = runs[0]!.id;
    assert.equal(runs[0]!.status, "failed");
    const intents = store.listIntents({ runId });
    store.close();
    const failed = intents.filter((i) => i.status === "failed");
    assert.equal(failed.length, 1, JSON.stringify(intents.map((i) => [i.executor, i.status])));
    assert.match(failed[0]!.error?.message ?? "", /409/);
    assert.ok(!intents.some((i) => i.status === "done"), "no effect after the failed one happened");
    // Nothing was created: the ERP holds only the hand-made supplier.
    assert.deepEqual(Object.keys(erp().snapshot().collections.suppliers ?? {}), ["SUP-1002"]);

    const listed = (await api.ctx.views.trees.intents.getChildren()).filter((n) => n.caseFile.fsPath === caseFile.fsPath);
    assert.equal(listed.length, 1);
    const node = listed[0]!;
    assert.ok(node.kind === "intent", 'expected: node.kind === "intent"');
    assert.equal(node.id, failed[0]!.id);
    assert.equal(node.status, "failed");
    assert.equal(node.runId, runId);
    const item = api.ctx.views.trees.intents.getTreeItem(node);
    assert.match(String(item.description), /^failed · createSupplier · APP-0000\.casefile$/);
    assert.match(String(item.tooltip), /409/);
    assert.equal(item.command?.command, "casefile.openInspector", "clicking it opens the run in the Run Inspector");
  });
});
