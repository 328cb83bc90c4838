import * as path from "node:path";
import * as vscode from "vscode";
import { CASE_FILE_GLOB } from "./caseFiles";
import type { Json } from "../engine/records";
import type { ForkEditor } from "./forkEditor";
import { openExperiment } from "./experimentOpen";
import { loadInspector } from "./inspectorLoader";
import type { InspectorActions } from "./inspectorPanel";
import {
  answerRequest,
  changeRule,
  EVAL_FORMATS,
  exportStepAsEval,
  pickWorkflow,
  replayStep,
  resumeFrom,
  runWorkflow,
  setApiKey,
  workflowUriOf,
} from "./runCommands";
import type { EvalFormat } from "../protocol/webview";
import type { RunSessions } from "./runSessions";
import type { CasefileViews } from "./views";
import type { CasefileDebugging } from "./debugSessions";
import type { EvalTests } from "./evalTests";
import { openRemoteCase, pullRemoteCase, setStorePassword, type RemoteNode, type RemoteResult } from "./remoteCases";

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
  readonly runs: RunSessions;
  readonly forks: ForkEditor;
  readonly debug: CasefileDebugging;
  readonly evalTests: EvalTests;
}

export type CommandResult = { ok: true; message?: string } | { ok: false; reason: string };

type Handler = (...args: unknown[]) => unknown;
type Factory = (ctx: Ctx) => Handler;

export const commands = {
  // Arguments: a workflow Uri (or a Workflows view item), then optionally the input and the case
  // file path (the e2e suite passes both; a person is asked for the input).
  run: (ctx) => (uri?: unknown, input?: unknown, caseFile?: unknown) => startWorkflow(ctx, "run", uri, input, caseFile),
  step: (ctx) => (uri?: unknown, input?: unknown, caseFile?: unknown) => startWorkflow(ctx, "step", uri, input, caseFile),
  resume: (ctx) => async (uri?: unknown, checkpointId?: unknown) => {
    const target = await caseFileAndId(uri, checkpointId, "Checkpoint id to resume from");
    return target ? resumeFrom(ctx.runs, ctx.log, target.caseFile, target.id) : noTarget;
  },
  forkWithEditedState: (ctx) => async (uri?: unknown, checkpointId?: unknown) => {
    const target = await caseFileAndId(uri, checkpointId, "Checkpoint id to fork from");
    return target ? ctx.forks.edit(target.caseFile, target.id) : noTarget;
  },
  replayStep: (ctx) => async (uri?: unknown, agentCallId?: unknown, mode?: unknown) => {
    const target = await caseFileAndId(uri, agentCallId, "Agent step id to replay");
    if (!target) return noTarget;
    const chosen =
      mode === "recorded" || mode === "live" || mode === "edited"
        ? mode
        : ((await vscode.window.showQuickPick(["recorded", "live", "edited"], { title: "Replay mode" })) as
            "recorded" | "live" | "edited" | undefined);
    if (chosen === "edited") return ctx.forks.editReplay(target.caseFile, target.id);
    return chosen ? replayStep(ctx.runs, ctx.log, target.caseFile, target.id, chosen) : noTarget;
  },
  answerRequest: (ctx) => async (uri?: unknown, requestId?: unknown, answer?: unknown) => {
    const target = await caseFileAndId(uri, requestId, "Request id to answer");
    return target ? answerRequest(ctx.runs, ctx.log, target.caseFile, target.id, answer as Json | undefined) : noTarget;
  },
  exportStepAsEval: (ctx) => async (uri?: unknown, agentCallId?: unknown, format?: unknown) => {
    const target = await caseFileAndId(uri, agentCallId, "Agent step id to export");
    const f = typeof format === "string" && Object.hasOwn(EVAL_FORMATS, format) ? (format as EvalFormat) : undefined;
    return target ? exportStepAsEval(ctx.extension, ctx.log, target.caseFile, target.id, f) : noTarget;
  },
  /** Continue, Step or Stop for the running workflow (status bar item; panel buttons). With none running it says so, and offers nothing to pick. */
  stepControl: (ctx) => async (action?: unknown) => {
    if (ctx.debug.active.length === 0 && !ctx.runs.running) return whyNot(NOTHING_RUNNING);
    const chosen =
      action === "continue" || action === "step" || action === "stop" || action === "pause"
        ? action
        : ((await vscode.window.showQuickPick(["continue", "step", "stop"], { title: "Casefile run" })) as
            "continue" | "step" | "stop" | undefined);
    if (!chosen) return { ok: false, reason: "Nothing chosen." } satisfies CommandResult;
    return ctx.debug.control(chosen) || ctx.runs.control(chosen) ? ({ ok: true } satisfies CommandResult) : whyNot(NOTHING_RUNNING);
  },
  // A debug session resuming from a checkpoint (a Runs view item carries its case file and id; the inspector passes both).
  debugFromHere: (ctx) => async (uri?: unknown, checkpointId?: unknown) => {
    const target = await caseFileAndId(uri, checkpointId, "Checkpoint id to debug from");
    return target ? ctx.debug.debugFromHere(target.caseFile, target.id) : noTarget;
  },
  // A debug session of a workflow file (a Uri or a Workflows view item); the input as given, else asked for.
  debugWorkflow: (ctx) => async (uri?: unknown, input?: unknown, caseFile?: unknown) => {
    const workflow = workflowUriOf(uri) ?? (await pickWorkflow("Debug Workflow"));
    if (!workflow) return { ok: false, reason: "No workflow file chosen." } satisfies CommandResult;
    return ctx.debug.debugWorkflow(workflow, input, typeof caseFile === "string" ? caseFile : undefined);
  },
  setApiKey: (ctx) => (provider?: unknown, key?: unknown) => setApiKey(ctx.extension, provider, key),
  // The Rules view's actions; a rule item carries its case file and id. `statement` lets the e2e suite skip the prompt.
  confirmRule: (ctx) => (item?: unknown) => ruleAction(ctx, item, "confirm"),
  editRule: (ctx) => (item?: unknown, statement?: unknown) => ruleAction(ctx, item, "edit", statement),
  deleteRule: (ctx) => (item?: unknown, confirmed?: unknown) => ruleAction(ctx, item, "delete", confirmed === true ? "" : undefined),
  // Arguments: the case file, optionally a run id and a step to show ({ superstep, executor }: a failed eval case's link).
  openInspector: (ctx) => async (uri?: unknown, runId?: unknown, step?: unknown) => {
    const caseFile = uri instanceof vscode.Uri ? uri : await pickCaseFile();
    if (!caseFile) return { ok: false, reason: "No case file chosen." } satisfies CommandResult;
    // Loaded on first use: the panel brings zod (the message schemas), too heavy for activation.
    const { InspectorPanel } = await loadInspector();
    const panel = await InspectorPanel.show(
      ctx.extension.extensionUri,
      ctx.log,
      ctx.inspector,
      caseFile,
      typeof runId === "string" ? runId : undefined,
      isStep(step) ? step : undefined,
    );
    return { ok: true, message: panel.panel.title } satisfies CommandResult;
  },
  // A failed eval case's "Open Step in Run Inspector" (the Testing view's message menu and link; evalTests.ts).
  openEvalCaseInInspector: (ctx) => (arg?: unknown) => ctx.evalTests.openInInspector(arg),
  // A results file of `casefile experiment`, an eval case file or Testing view item (its experiments), or a pick.
  openExperiment: (ctx) => (arg?: unknown) => openExperiment(ctx.extension, ctx.log, arg),
  refreshViews: (ctx) => () => {
    ctx.views.refreshRemote();
    return { ok: true } satisfies CommandResult;
  },
  // Remote cases (remoteCases.ts): a Runs view node is the argument; the e2e suite passes the store and password to skip the prompts.
  setStorePassword: (ctx) => (store?: unknown, password?: unknown) => setStorePassword(ctx.extension, store, password),
  openRemoteCase: (ctx) => (node?: unknown) => told(openRemoteCase(ctx.extension, node as RemoteNode)),
  pullRemoteCase: (ctx) => async (node?: unknown) => {
    const r = await told(pullRemoteCase(ctx.extension, node as RemoteNode));
    if (r.ok) ctx.views.refresh();
    return r;
  },
  moreRemoteCases: (ctx) => async (node?: unknown) => ({ ok: true, listed: await ctx.views.trees.runs.more(node as RemoteNode) }),
} satisfies Record<string, Factory>;

export type CommandName = keyof typeof commands;

const noTarget = { ok: false, reason: "Nothing chosen." } satisfies CommandResult;

const NOTHING_RUNNING =
  "No workflow is running: Continue, Step and Stop act on a run started with Casefile: Step Through Workflow, or on a Casefile debug session.";

/** A command that cannot act says why, where the person looks (a notification), and returns the reason. */
function whyNot(reason: string): CommandResult {
  void vscode.window.showInformationMessage(reason);
  return { ok: false, reason };
}

/** Run and Step both execute workflow code: refused in Restricted Mode, with the reason shown (runCommands.ts). */
function startWorkflow(ctx: Ctx, mode: "run" | "step", uri: unknown, input: unknown, caseFile: unknown) {
  const workflow = workflowUriOf(uri);
  return runWorkflow(
    ctx.extension,
    ctx.runs,
    ctx.log,
    mode,
    workflow,
    input as Json | undefined,
    typeof caseFile === "string" ? caseFile : undefined,
  );
}

function isStep(value: unknown): value is { superstep: number; executor: string } {
  const v = value as { superstep?: unknown; executor?: unknown } | null;
  return typeof v === "object" && v !== null && typeof v.superstep === "number" && typeof v.executor === "string";
}

async function ruleAction(ctx: Ctx, item: unknown, action: "confirm" | "edit" | "delete", statement?: unknown) {
  const target = await caseFileAndId(item, undefined, "Rule id");
  if (!target) return noTarget;
  const result = await changeRule(
    ctx.extension,
    ctx.log,
    target.caseFile,
    target.id,
    action,
    typeof statement === "string" ? statement : undefined,
  );
  ctx.views.refresh();
  return result;
}

/** A case file and an id, from the arguments (tree items pass both) or asked for. */
async function caseFileAndId(uri: unknown, id: unknown, prompt: string): Promise<{ caseFile: vscode.Uri; id: string } | undefined> {
  if (typeof uri === "object" && uri !== null && "caseFile" in uri && "id" in uri) {
    const item = uri as { caseFile: unknown; id: unknown };
    if (item.caseFile instanceof vscode.Uri && typeof item.id === "string") return { caseFile: item.caseFile, id: item.id };
  }
  const caseFile = uri instanceof vscode.Uri ? uri : await pickCaseFile();
  if (!caseFile) return undefined;
  const chosen = typeof id === "string" ? id : await vscode.window.showInputBox({ title: prompt, ignoreFocusOut: true });
  return chosen ? { caseFile, id: chosen } : undefined;
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

/** Shows a remote case's open or pull to the person, and hands the result back to the caller. */
async function told(pending: Promise<RemoteResult>): Promise<RemoteResult> {
  const r = await pending;
  if (r.ok) void vscode.window.showInformationMessage(r.message);
  else void vscode.window.showErrorMessage(r.reason);
  return r;
}
