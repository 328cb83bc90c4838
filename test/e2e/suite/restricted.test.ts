import * as assert from "node:assert/strict";
import * as vscode from "vscode";
import { askBrowser, itWithBrowser } from "./exchange";

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

  it("case files still open in the Run Inspector", async () => {
    const caseFile = vscode.Uri.joinPath(vscode.workspace.workspaceFolders![0]!.uri, "invoice.casefile");
    const result = (await vscode.commands.executeCommand("casefile.openInspector", caseFile, "run-2026-11-30-a1")) as { ok: boolean };
    assert.equal(result.ok, true);
  });

  itWithBrowser(
    "the inspector explains Restricted Mode, links to Manage Workspace Trust, and disables resume, fork, replay and export",
    async () => {
      const checks = await askBrowser({
        name: "restricted-inspector",
        waitFor: 'body[data-loaded="run-2026-11-30-a1"]',
        read: { banner: ".banner", link: ".banner a.manage-trust" },
        click: ['.timeline-row:has(.superstep-number:text-is("#1"))'],
        readAfterClicks: {
          enabled: ".actions button:not([disabled])",
          disabled: ".actions button[disabled]",
        },
      });
      assert.equal(checks.found, true, checks.error);
      assert.match(checks.texts.banner?.[0] ?? "", /Restricted Mode\. Casefile does not run workflow code/);
      assert.deepEqual(checks.texts.link, ["Manage Workspace Trust"], "the banner's way out is a link");
      // Export loads the workflow file (its proposal schema and rules): workflow code, like the rest.
      assert.deepEqual(
        checks.after?.disabled?.map((t) => t.trim()),
        ["Resume from here", "Debug from here", "Fork with edited state", "Replay step", "Export as eval"],
      );
      assert.deepEqual(checks.after?.enabled ?? [], [], "nothing that runs workflow code is enabled");
    },
  );
});
