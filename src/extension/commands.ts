import * as path from "node:path";
import * as vscode from "vscode";
import { CASE_FILE_GLOB } from "./caseFiles";
import type { InspectorActions } from "./inspectorPanel";
import { canRunWorkflowCode } from "./trust";
import type { CasefileViews } from "./views";

/**
 * Every command of the extension, as factories `(ctx) => handler`. extension.ts registers them in
 * one loop under the `casefile.` prefix; package.json contributes each one with category
 * "Casefile" (the e2e suite checks the two lists agree). Handlers return a plain result so the
 * e2e suite can assert what happened, as well as telling the person.
 */

export interface Ctx {
  readonly extension: vscode.ExtensionContext;
  readonly log: vscode.LogOutputChannel;
  readonly views: CasefileViews;
  readonly inspector: InspectorActions;
}

export type CommandResult = { ok: true; message?: string } | { ok: false; reason: string };

type Handler = (...args: unknown[]) => unknown;
type Factory = (ctx: Ctx) => Handler;

export const commands = {
  run: (ctx) => (uri?: unknown) => startWorkflow(ctx, "run", uri),
  step: (ctx) => (uri?: unknown) => startWorkflow(ctx, "step", uri),
  openInspector: (ctx) => async (uri?: unknown, runId?: unknown) => {
    const caseFile = uri instanceof vscode.Uri ? uri : await pickCaseFile();
    if (!caseFile) return { ok: false, reason: "No case file chosen." } satisfies CommandResult;
    // Loaded on first use: the panel brings zod (the message schemas), too heavy for activation.
    const { InspectorPanel } = await import("./inspectorPanel.js");
    const panel = await InspectorPanel.show(
      ctx.extension.extensionUri,
      ctx.log,
      ctx.inspector,
      caseFile,
      typeof runId === "string" ? runId : undefined,
    );
    return { ok: true, message: panel.panel.title } satisfies CommandResult;
  },
  refreshViews: (ctx) => () => {
    ctx.views.refresh();
    return { ok: true } satisfies CommandResult;
  },
} satisfies Record<string, Factory>;

export type CommandName = keyof typeof commands;

/** Run and Step both execute workflow code: refused in Restricted Mode, with the reason shown. */
async function startWorkflow(ctx: Ctx, mode: "run" | "step", uri: unknown): Promise<CommandResult> {
  const trust = canRunWorkflowCode();
  if (!trust.ok) {
    ctx.log.info(`${mode} refused: workspace is in Restricted Mode`);
    void vscode.window.showWarningMessage(trust.reason);
    return trust;
  }
  const target = uri instanceof vscode.Uri ? path.basename(uri.fsPath) : "a workflow";
  const reason = `Running ${target} from the editor is not built yet: the runner integration is still to come (issue 5).`;
  void vscode.window.showInformationMessage(reason);
  return { ok: false, reason };
}

async function pickCaseFile(): Promise<vscode.Uri | undefined> {
  const files = await vscode.workspace.findFiles(CASE_FILE_GLOB, "**/node_modules/**");
  if (files.length === 0) {
    void vscode.window.showInformationMessage("No case files (*.casefile) in this workspace yet.");
    return undefined;
  }
  if (files.length === 1) return files[0];
  const picked = await vscode.window.showQuickPick(
    files.map((uri) => ({ label: path.basename(uri.fsPath), description: vscode.workspace.asRelativePath(uri), uri })),
    { title: "Open Run Inspector", placeHolder: "Case file" },
  );
  return picked?.uri;
}
