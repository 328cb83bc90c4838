import * as vscode from "vscode";
import type { Ctx } from "./commands";
import { commands } from "./commands";
import { registerAuthoring } from "./authoring";
import { loadInspectorViewModel, loadSuperstepDetail } from "./caseFiles";
import type { InspectorActions, InspectorPanel } from "./inspectorPanel";
import { ForkEditor } from "./forkEditor";
import { performInspectorAction } from "./runCommands";
import { RunSessions } from "./runSessions";
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
  const runs = new RunSessions(
    context,
    log,
    () => views.refresh(),
    // The panel module (and zod) loads only once a run starts, never on activation.
    (state) => void import("./inspectorPanel.js").then(({ InspectorPanel }) => InspectorPanel.showRunState({ type: "runState", ...state })),
  );
  const forks = new ForkEditor(context, runs, log);
  const ctx: Ctx = { extension: context, log, views, runs, forks, inspector: inspectorActions(context, runs, forks, log) };
  context.subscriptions.push(log, views, runs, forks);
  for (const [name, factory] of Object.entries(commands)) {
    context.subscriptions.push(vscode.commands.registerCommand(`casefile.${name}`, factory(ctx)));
  }
  // Workflow Graph, CodeLens above defineWorkflow, workflow problems as diagnostics (authoring.ts).
  registerAuthoring(context, log);
  const activateMs = performance.now() - started;
  log.info(`activated in ${activateMs.toFixed(1)} ms`);
  return { ctx, activateMs, inspectorPanel: async (caseFile) => (await import("./inspectorPanel.js")).InspectorPanel.get(caseFile) };
}

export function deactivate(): void {}

function inspectorActions(
  context: vscode.ExtensionContext,
  runs: RunSessions,
  forks: ForkEditor,
  log: vscode.LogOutputChannel,
): InspectorActions {
  return {
    load: loadInspectorViewModel,
    loadSuperstep: loadSuperstepDetail,
    // Every action loads workflow code, so each is refused in Restricted Mode (runCommands.ts).
    perform: (caseFile, action) =>
      performInspectorAction(
        context,
        runs,
        log,
        caseFile,
        action,
        (c, id) => forks.edit(c, id),
        (c, id) => forks.editReplay(c, id),
      ),
    control: (action) => runs.control(action),
  };
}
