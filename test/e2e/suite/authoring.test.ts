import * as assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import { suiteConfig } from "./config";

/**
 * Writing workflows in a trusted workspace: New Workflow scaffolds a file and its tsconfig.json,
 * the CodeLens offers Run | Step | Graph above defineWorkflow, the Workflow Graph opens, a broken
 * workflow's problems reach the Problems panel on save, and a case file opens in the Run Inspector
 * through its custom editor.
 */
describe("Authoring workflows", function () {
  this.timeout(120_000);
  const workspace = vscode.Uri.file(suiteConfig().workspace);

  let hadTsconfig = false;

  before(async () => {
    await vscode.extensions.getExtension("casefile.casefile")!.activate();
    hadTsconfig = existsSync(path.join(workspace.fsPath, "tsconfig.json"));
  });

  // The workspace is shared with the suites that follow (the Workflows view lists every workflow).
  after(async () => {
    // Closes only its own tabs: the Run Inspector it opened stays, as a person would leave it.
    const mine = vscode.window.tabGroups.all
      .flatMap((g) => g.tabs)
      .filter((t) => t.label === "e2e-flow.ts" || t.label === "Graph: e2e-flow.ts");
    await vscode.window.tabGroups.close(mine);
    await vscode.workspace.fs.delete(vscode.Uri.file(path.join(workspace.fsPath, "e2e-flow.ts")));
    if (!hadTsconfig) await vscode.workspace.fs.delete(vscode.Uri.file(path.join(workspace.fsPath, "tsconfig.json")));
  });

  it("New Workflow writes the template and maps casefile and zod to the extension's types", async () => {
    const r = (await vscode.commands.executeCommand("casefile.newWorkflow", workspace, "E2E Flow")) as { ok: boolean; message?: string };
    assert.equal(r.ok, true, JSON.stringify(r));
    const file = path.join(workspace.fsPath, "e2e-flow.ts");
    assert.match(readFileSync(file, "utf8"), /defineWorkflow\(\{\n {2}name: "E2E Flow"/);
    const tsconfig = JSON.parse(readFileSync(path.join(workspace.fsPath, "tsconfig.json"), "utf8")) as {
      compilerOptions: { paths: Record<string, string[]> };
    };
    const casefileTypes = tsconfig.compilerOptions.paths.casefile![0]!;
    assert.ok(casefileTypes.endsWith("/dist/types/casefile/engine/index.d.ts"), casefileTypes);
  });

  it("shows Run | Step | Graph above defineWorkflow", async () => {
    const uri = vscode.Uri.file(path.join(workspace.fsPath, "e2e-flow.ts"));
    await vscode.window.showTextDocument(uri);
    const lenses = (await vscode.commands.executeCommand("vscode.executeCodeLensProvider", uri)) as vscode.CodeLens[];
    const ours = lenses.filter((l) => l.command?.command.startsWith("casefile."));
    assert.deepEqual(
      ours.map((l) => l.command!.command),
      ["casefile.run", "casefile.step", "casefile.showGraph"],
    );
  });

  it("opens the Workflow Graph of the scaffolded workflow", async () => {
    const uri = vscode.Uri.file(path.join(workspace.fsPath, "e2e-flow.ts"));
    const r = (await vscode.commands.executeCommand("casefile.showGraph", uri)) as { ok: boolean; message?: string };
    assert.equal(r.ok, true, JSON.stringify(r));
    assert.equal(r.message, "Graph: e2e-flow.ts");
    const tabs = vscode.window.tabGroups.all.flatMap((g) => g.tabs.map((t) => t.label));
    assert.ok(tabs.includes("Graph: e2e-flow.ts"), tabs.join(", "));
  });

  it("puts a broken workflow's problems in the Problems panel when it is saved", async () => {
    const uri = vscode.Uri.file(path.join(workspace.fsPath, "e2e-flow.ts"));
    const doc = await vscode.workspace.openTextDocument(uri);
    const editor = await vscode.window.showTextDocument(doc);
    const text = doc.getText();
    const at = text.indexOf('owns: ["excess"]');
    assert.ok(at > 0, "expected: at > 0");
    await editor.edit((e) =>
      e.replace(new vscode.Range(doc.positionAt(at), doc.positionAt(at + 'owns: ["excess"]'.length)), 'owns: ["nowhere"]'),
    );
    await doc.save();
    const deadline = Date.now() + 60_000;
    let problems: vscode.Diagnostic[] = [];
    while (Date.now() < deadline) {
      problems = vscode.languages.getDiagnostics(uri).filter((d) => d.source === "casefile");
      if (problems.length) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    assert.ok(problems.length > 0, "a casefile diagnostic appears");
    assert.ok(
      problems.some((d) => /nowhere/.test(d.message)),
      problems.map((d) => d.message).join("\n"),
    );
  });

  it("opens a case file in the Run Inspector through the custom editor", async () => {
    const caseFiles = await vscode.workspace.findFiles("**/*.casefile");
    assert.ok(caseFiles.length > 0 && existsSync(caseFiles[0]!.fsPath), "the harness prepared a case file");
    await vscode.commands.executeCommand("vscode.openWith", caseFiles[0], "casefile.caseFile");
    const deadline = Date.now() + 30_000;
    let labels: string[] = [];
    while (Date.now() < deadline) {
      labels = vscode.window.tabGroups.all.flatMap((g) => g.tabs.map((t) => t.label));
      if (labels.some((l) => l.startsWith("Run Inspector: "))) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    assert.ok(labels.includes(`Run Inspector: ${path.basename(caseFiles[0]!.fsPath)}`), labels.join(", "));
  });
});
