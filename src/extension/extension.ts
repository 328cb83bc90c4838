import * as vscode from "vscode";
import type { Ctx } from "./commands";
import { commands } from "./commands";
import { loadInspectorViewModel, loadSuperstepDetail } from "./caseFiles";
import type { InspectorActions, InspectorPanel } from "./inspectorPanel";
import { canRunWorkflowCode } from "./trust";
import { CasefileViews } from "./views";

/**
 * Entry point. Activation stays light: it registers commands and views and nothing else. zod,
 * sql.js, the tokenizer and esbuild load on first use, inside the handlers that need them
 * (`import()` below and in commands.ts and caseFiles.ts; esbuild keeps those modules uninitialised
 * until then).
 */
/** What activate returns: read by the e2e suite (through `extension.exports`), by no one else. */
export interface CasefileTestApi {
  ctx: Ctx;
  /** How long activate() itself took, in ms (module loading not included). */
  activateMs: number;
  inspectorPanel(caseFile: vscode.Uri): Promise<InspectorPanel | undefined>;
}

export function activate(context: vscode.ExtensionContext): CasefileTestApi {
  const started = performance.now();
  const log = vscode.window.createOutputChannel("Casefile", { log: true });
  const views = new CasefileViews();
  const ctx: Ctx = { extension: context, log, views, inspector: inspectorActions() };
  context.subscriptions.push(log, views);
  for (const [name, factory] of Object.entries(commands)) {
    context.subscriptions.push(vscode.commands.registerCommand(`casefile.${name}`, factory(ctx)));
  }
  const activateMs = performance.now() - started;
  log.info(`activated in ${activateMs.toFixed(1)} ms`);
  return { ctx, activateMs, inspectorPanel: async (caseFile) => (await import("./inspectorPanel.js")).InspectorPanel.get(caseFile) };
}

export function deactivate(): void {}

function inspectorActions(): InspectorActions {
  return {
    load: loadInspectorViewModel,
    loadSuperstep: loadSuperstepDetail,
    perform: async (_caseFile, action) => {
      if (action.type !== "exportStepAsEval") {
        const trust = canRunWorkflowCode();
        if (!trust.ok) return trust.reason;
      }
      switch (action.type) {
        case "resumeFrom":
          return `Resume from checkpoint ${action.checkpointId} is not built yet: the runner integration is still to come.`;
        case "forkWithEditedState":
          return `Fork with edited state from checkpoint ${action.checkpointId} is not built yet: the state editor is still to come.`;
        case "replayStep":
          return `Replay (${action.mode}) of step ${action.stepId} is not built yet: the runner integration is still to come.`;
        case "exportStepAsEval":
          return `Export of step ${action.stepId} as a ${action.format} eval case is not built yet.`;
        default: {
          const never: never = action;
          throw new Error(`unhandled action ${JSON.stringify(never)}`);
        }
      }
    },
  };
}
