import * as vscode from "vscode";
import { CasefileDebugSession } from "../debug/session";

/**
 * The casefile debug adapter, run inline in the extension host: the same DAP session class
 * `casefile dap` serves on stdio (src/debug/session.ts, no `vscode`), given what only the editor
 * knows (where the bundled runner is, the environment with the API keys from SecretStorage).
 * A bundle of its own (esbuild.mjs), loaded by debugSessions.ts when the first session starts.
 */
export function inlineAdapter(opts: {
  runnerPath: string;
  env: NodeJS.ProcessEnv;
  log: vscode.LogOutputChannel;
}): vscode.DebugAdapterDescriptor {
  const session = new CasefileDebugSession({ runnerPath: opts.runnerPath, env: opts.env });
  return new vscode.DebugAdapterInlineImplementation(session);
}
