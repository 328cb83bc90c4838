import * as assert from "node:assert/strict";
import * as vscode from "vscode";

/** Restricted Mode (the untrusted pass): every command that would load workflow code refuses, and says why. */
describe("Restricted Mode refuses the run commands", () => {
  before(async () => {
    await vscode.extensions.getExtension("casefile.casefile")?.activate();
  });

  it("Resume, Fork, Replay, Answer Request and Export refuse with the explanation", async () => {
    const caseFile = vscode.Uri.joinPath(vscode.workspace.workspaceFolders![0]!.uri, "invoice.casefile");
    const calls: [string, ...unknown[]][] = [
      ["casefile.resume", caseFile, "run-2026-11-30-a1-cp1"],
      ["casefile.forkWithEditedState", caseFile, "run-2026-11-30-a1-cp1"],
      ["casefile.replayStep", caseFile, "run-2026-11-30-a1-call-triage-1", "recorded"],
      ["casefile.answerRequest", caseFile, "req-1", { decision: "approve" }],
      ["casefile.exportStepAsEval", caseFile, "run-2026-11-30-a1-call-triage-1", "json"],
    ];
    for (const [command, ...args] of calls) {
      const result = (await vscode.commands.executeCommand(command, ...args)) as { ok: boolean; reason?: string };
      assert.equal(result.ok, false, `${command} refused`);
      assert.match(result.reason ?? "", /Restricted Mode/, command);
    }
  });
});
