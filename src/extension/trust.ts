import * as vscode from "vscode";

/**
 * Workspace Trust. In Restricted Mode case files open and can be inspected, but nothing that runs
 * workflow code does (run, step, resume, fork, replay). Every such entry point asks `refuseIfUntrusted`
 * first and shows the returned explanation instead of acting.
 */
export const RESTRICTED_MODE_EXPLANATION =
  "Casefile does not run workflow code in Restricted Mode: running, stepping, resuming and replaying execute code from this workspace. " +
  "Case files can still be opened and inspected. Trust the workspace (Manage Workspace Trust) to run workflows.";

export function canRunWorkflowCode(): { ok: true } | { ok: false; reason: string } {
  return vscode.workspace.isTrusted ? { ok: true } : { ok: false, reason: RESTRICTED_MODE_EXPLANATION };
}

/** The command behind VS Code's own "Manage Workspace Trust" (the Restricted Mode banner's). */
export const MANAGE_TRUST_COMMAND = "workbench.trust.manage";
const MANAGE_TRUST = "Manage Workspace Trust";

/**
 * Shows a Restricted Mode refusal with a button that opens Workspace Trust, so the way out is one
 * click from the refusal. Called wherever something that would run workflow code is refused.
 */
export async function warnRestricted(reason: string): Promise<void> {
  const pick = await vscode.window.showWarningMessage(reason, MANAGE_TRUST);
  if (pick === MANAGE_TRUST) await vscode.commands.executeCommand(MANAGE_TRUST_COMMAND);
}
