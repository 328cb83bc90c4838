import * as assert from "node:assert/strict";
import * as vscode from "vscode";

/** Restricted Mode (the untrusted pass): the debugger runs workflow code, so no session starts, and the person is told why. */
describe("Restricted Mode refuses to debug", () => {
  before(async () => {
    await vscode.extensions.getExtension("casefile.casefile")?.activate();
  });

  it("Debug Workflow and Debug from Here refuse with the explanation, and no debug session starts", async () => {
    const folder = vscode.workspace.workspaceFolders![0]!.uri;
    const calls: [string, ...unknown[]][] = [
      ["casefile.debugWorkflow", vscode.Uri.joinPath(folder, "workflow.ts"), { invoiceId: "INV-1001" }],
      ["casefile.debugFromHere", vscode.Uri.joinPath(folder, "invoice.casefile"), "run-2026-11-30-a1-cp1"],
    ];
    for (const [command, ...args] of calls) {
      const result = (await vscode.commands.executeCommand(command, ...args)) as { ok: boolean; reason?: string };
      assert.equal(result.ok, false, `${command} refused`);
      assert.match(result.reason ?? "", /Restricted Mode/, command);
    }
    assert.equal(vscode.debug.activeDebugSession, undefined);
  });
});
