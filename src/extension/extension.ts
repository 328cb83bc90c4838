import * as vscode from "vscode";
import type { Ctx } from "./commands";
import { commands } from "./commands";
import { registerAuthoring } from "./authoring";
import { closeCaseFileReaders, loadContext, loadInspectorViewModel, loadSuperstepDetail, releaseCaseFile } from "./caseFiles";
import type { ExperimentPanel } from "./experimentPanel";
import type { GraphPanel } from "./graphPanel";
import type { InspectorActions, InspectorPanel } from "./inspectorPanel";
import { ExperimentEditor } from "./experimentOpen";
import { ForkEditor } from "./forkEditor";
import { inspectorRunState, loadInspector } from "./inspectorLoader";
import { answerRequest, performInspectorAction } from "./runCommands";
import { RunSessions } from "./runSessions";
import { CasefileViews } from "./views";
import { CasefileDebugging } from "./debugSessions";
import { EvalTests } from "./evalTests";

/**
 * Entry point, bundled alone into dist/extension.js. Activation only registers: commands, views,
 * the custom editor, the CodeLens. Everything heavy is a bundle of its own beside it (esbuild.mjs:
 * the case-file layer with sql.js, zod, the panels, the runner client), `require`d by an
 * `import()` on first use: the Runs view loads the case-file bundle when it is first drawn, a
 * panel its own bundle when it opens. The build fails if this entry imports one of them statically.
 */
/** When this module started running, in the extension host's `performance.now()` time. */
const moduleStartedAt = performance.now();

/** What activate returns: read by the e2e suite (through `extension.exports`), by no one else. */
export interface CasefileTestApi {
  ctx: Ctx;
  /** How long activate() itself took, in ms (module loading not included). */
  activateMs: number;
  /**
   * `performance.now()` marks in the extension host: this module starting to run (after VS Code
   * read and compiled it), activate() called, activate() returning. The e2e suite (same process)
   * splits the time of `ext.activate()` with them.
   */
  marks: { moduleStartedAt: number; activateStartedAt: number; activateEndedAt: number };
  inspectorPanel(caseFile: vscode.Uri): Promise<InspectorPanel | undefined>;
  graphPanel(workflow: vscode.Uri): Promise<GraphPanel | undefined>;
  experimentPanel(results: vscode.Uri): Promise<ExperimentPanel | undefined>;
}

export function activate(context: vscode.ExtensionContext): CasefileTestApi {
  const started = performance.now();
  const log = vscode.window.createOutputChannel("Casefile", { log: true });
  const views = new CasefileViews(context);
  const runs = new RunSessions(
    context,
    log,
    () => views.refresh(),
    // Kept for the Run Inspector; its module (and zod) loads only when an inspector opens.
    inspectorRunState,
    // The running superstep, highlighted in the open Workflow Graphs of the run's workflow.
    () => authoring.liveChanged(),
  );
  const forks = new ForkEditor(context, runs, log);
  // The `casefile` debugger: configurations, the inline adapter, js-debug for executor code (debugSessions.ts).
  const debug = new CasefileDebugging(context, log, inspectorRunState, () => views.refresh());
  // Eval cases in the Testing view; runs spawn `casefile eval --json` (evalTests.ts).
  const evalTests = new EvalTests(context, runs, log);
  const inspector = inspectorActions(context, runs, forks, debug, log);
  const ctx: Ctx = { extension: context, log, views, runs, forks, debug, evalTests, inspector };
  context.subscriptions.push(log, views, runs, forks, debug, evalTests);
  for (const [name, factory] of Object.entries(commands)) {
    context.subscriptions.push(vscode.commands.registerCommand(`casefile.${name}`, factory(ctx)));
  }
  // "Open With… > Experiment" on a results file of `casefile experiment` (experimentOpen.ts).
  context.subscriptions.push(vscode.window.registerCustomEditorProvider(ExperimentEditor.viewType, new ExperimentEditor()));
  // Workflow Graph, CodeLens above defineWorkflow, workflow problems as diagnostics (authoring.ts).
  const authoring = registerAuthoring(context, log, (workflow, caseFile) => runs.liveFor(workflow, caseFile));
  const ended = performance.now();
  const activateMs = ended - started;
  log.info(`activated in ${activateMs.toFixed(1)} ms`);
  return {
    ctx,
    activateMs,
    marks: { moduleStartedAt, activateStartedAt: started, activateEndedAt: ended },
    inspectorPanel: async (caseFile) => (await loadInspector()).InspectorPanel.get(caseFile),
    graphPanel: async (workflow) => (await import("./graphPanel.js")).GraphPanel.get(workflow),
    experimentPanel: async (results) => (await import("./experimentPanel.js")).ExperimentPanel.get(results),
  };
}

export function deactivate(): void {
  closeCaseFileReaders();
}

function inspectorActions(
  context: vscode.ExtensionContext,
  runs: RunSessions,
  forks: ForkEditor,
  debug: CasefileDebugging,
  log: vscode.LogOutputChannel,
): InspectorActions {
  return {
    load: (caseFile, runId) => loadInspectorViewModel(caseFile, runId),
    loadOpening: (caseFile, runId) => loadInspectorViewModel(caseFile, runId, "opening"),
    loadSuperstep: loadSuperstepDetail,
    loadContext,
    release: releaseCaseFile,
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
    // The Requests view's command with the panel's answer: refused answers come back to the panel.
    answer: async (caseFile, requestId, answer) => {
      const r = await answerRequest(runs, log, caseFile, requestId, answer, { inPlace: true });
      return r.ok ? { ok: true, message: r.message } : { ok: false, reason: r.reason };
    },
    // A casefile debug session, when one runs, is what the panel's buttons drive; else the step-mode run.
    control: (action) => debug.control(action) || runs.control(action),
  };
}
