import * as assert from "node:assert/strict";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import { openCaseFile } from "../../../src/casefile/index";

type Result = { ok: true; runId: string; status: string; caseFile: string; message: string } | { ok: false; reason: string };

/**
 * The casefile.tokenBudget setting reaches the runner: a workflow whose agent step declares no
 * budget is refused above the setting (the model is not called), and runs with the setting at 0.
 * Scripted model, no network.
 */
describe("The casefile.tokenBudget setting", function () {
  this.timeout(120_000);
  let folder: string;
  let workflow: vscode.Uri;
  const settings = () => vscode.workspace.getConfiguration("casefile");

  before(async () => {
    await vscode.extensions.getExtension("casefile.casefile")!.activate();
    folder = path.join(vscode.workspace.workspaceFolders![0]!.uri.fsPath, "budget");
    mkdirSync(folder, { recursive: true });
    writeFileSync(
      path.join(folder, "claims.ts"),
      `import { agent, code, defineWorkflow, edge, z } from "casefile";
export default defineWorkflow({
  name: "claims",
  version: 1,
  state: { note: z.string() },
  start: "propose",
  executors: {
    propose: agent({
      proposal: z.object({ action: z.enum(["pay", "refuse"]), reason: z.string(), facts: z.array(z.string()) }),
      model: { model: "gpt-4o-mini" },
      context: () => [{ role: "user", content: "Decide whether to pay the claim of 40 for a broken window, reported on time." }],
    }),
    done: code({ owns: ["note"], run: (ctx) => ctx.write("note", "done") }),
  },
  edges: [edge("propose", "done")],
});
`,
    );
    writeFileSync(
      path.join(folder, "claims.responses.json"),
      JSON.stringify({ responses: [{ step: "propose", response: { action: "pay", reason: "small", facts: [] } }] }),
    );
    workflow = vscode.Uri.file(path.join(folder, "claims.ts"));
  });

  after(async () => {
    await settings().update("tokenBudget", undefined, vscode.ConfigurationTarget.Workspace);
    rmSync(folder, { recursive: true, force: true });
  });

  async function run(caseFile: string): Promise<{ status: string; error?: { code: string; message: string } }> {
    const result = (await vscode.commands.executeCommand("casefile.run", workflow, {}, caseFile)) as Result;
    assert.ok(result.ok, result.ok ? "" : result.reason);
    const store = await openCaseFile(caseFile, { readOnly: true });
    try {
      const record = store.getRun(result.runId)!;
      return { status: record.status, ...(record.error ? { error: record.error } : {}) };
    } finally {
      store.close();
    }
  }

  it("refuses an agent step that declares no budget above the setting, before the model is called", async () => {
    await settings().update("tokenBudget", 5, vscode.ConfigurationTarget.Workspace);
    const outcome = await run(path.join(folder, "refused.casefile"));
    assert.equal(outcome.status, "failed");
    assert.equal(outcome.error?.code, "TOKEN_BUDGET_EXCEEDED");
    assert.match(outcome.error!.message, /above the hard budget of 5 tokens; the model was not called/);
  });

  it("runs the step with the setting at 0 (no default budget)", async () => {
    await settings().update("tokenBudget", 0, vscode.ConfigurationTarget.Workspace);
    const outcome = await run(path.join(folder, "unbudgeted.casefile"));
    assert.equal(outcome.status, "completed", JSON.stringify(outcome.error));
  });
});
