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
