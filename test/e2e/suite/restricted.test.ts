import * as assert from "node:assert/strict";
import * as vscode from "vscode";

/** Runs in a code-server started without --disable-workspace-trust: the workspace is untrusted. */
describe("Restricted Mode", () => {
  before(async () => {
    await vscode.extensions.getExtension("casefile.casefile")?.activate();
  });

  it("the workspace is untrusted and the extension still activates (limited support)", () => {
    assert.equal(vscode.workspace.isTrusted, false);
    assert.equal(vscode.extensions.getExtension("casefile.casefile")?.isActive, true);
  });

  it("Run and Step refuse with an explanation instead of running workflow code", async () => {
    for (const command of ["casefile.run", "casefile.step"]) {
      const result = (await vscode.commands.executeCommand(command)) as { ok: boolean; reason?: string };
      assert.equal(result.ok, false, `${command} refused`);
      assert.match(result.reason ?? "", /Restricted Mode/);
      assert.match(result.reason ?? "", /inspected/);
    }
  });
});
