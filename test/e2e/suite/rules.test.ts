import * as assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as path from "node:path";
import * as vscode from "vscode";
import type { CasefileTestApi } from "../../../src/extension/extension";

/** The repository: the suite is bundled to dist/e2e/ (buildSuite.ts). */
const ROOT = path.resolve(__dirname, "../..");

/** The Rules view over a rule book in the workspace, changed from the editor (through the CLI's rules command). */
describe("Rules view", function () {
  this.timeout(60_000);
  let api: CasefileTestApi;
  let book: string;

  before(async () => {
    api = await vscode.extensions.getExtension<CasefileTestApi>("casefile.casefile")!.activate();
    book = path.join(vscode.workspace.workspaceFolders![0]!.uri.fsPath, "rules.casefile");
    // A rule an agent proposed, as the CLI adds it: unconfirmed until a person confirms it.
    execFileSync(
      process.execPath,
      [path.join(ROOT, "dist", "cli.js"), "rules", book, "add", "--statement", "Acme may vary up to 8%", "--by", "agent"],
      {
        env: { ...process.env, ELECTRON_RUN_AS_NODE: "1" },
      },
    );
  });

  async function listed() {
    return (await api.ctx.views.trees.rules.getChildren()).filter((n) => n.caseFile.fsPath === book);
  }

  it("lists the rule unconfirmed; Confirm, Edit and Delete change the rule book", async () => {
    const [rule] = await listed();
    assert.ok(rule && rule.kind === "rule", "the rule is listed");
    assert.equal(rule.statement, "Acme may vary up to 8%");
    assert.equal(rule.confirmed, false);

    assert.equal(((await vscode.commands.executeCommand("casefile.confirmRule", rule)) as { ok: boolean }).ok, true);
    const [confirmed] = await listed();
    assert.ok(confirmed?.kind === "rule" && confirmed.confirmed, 'expected: confirmed?.kind === "rule" && confirmed.confirmed');

    assert.equal(
      ((await vscode.commands.executeCommand("casefile.editRule", confirmed, "Acme may vary up to 6%")) as { ok: boolean }).ok,
      true,
    );
    const [edited] = await listed();
    assert.ok(edited?.kind === "rule", 'expected: edited?.kind === "rule"');
    assert.equal(edited.statement, "Acme may vary up to 6%");

    assert.equal(((await vscode.commands.executeCommand("casefile.deleteRule", edited, true)) as { ok: boolean }).ok, true);
    assert.deepEqual(await listed(), []);
  });
});
