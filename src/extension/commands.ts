import * as path from "node:path";
import * as vscode from "vscode";
import { CASE_FILE_GLOB } from "./caseFiles";
import type { Json } from "../engine/records";
import type { ForkEditor } from "./forkEditor";
import { loadInspector } from "./inspectorLoader";
import type { InspectorActions } from "./inspectorPanel";
import { answerRequest, changeRule, EVAL_FORMATS, exportStepAsEval, replayStep, resumeFrom, runWorkflow, setApiKey } from "./runCommands";
import type { EvalFormat } from "../protocol/webview";
import type { RunSessions } from "./runSessions";
import type { CasefileViews } from "./views";
import type { CasefileDebugging } from "./debugSessions";

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
  /** Continue, Step or Stop for the running workflow (status bar item; panel buttons). */
  stepControl: (ctx) => async (action?: unknown) => {
    const chosen =
      action === "continue" || action === "step" || action === "stop" || action === "pause"
        ? action
        : ((await vscode.window.showQuickPick(["continue", "step", "stop"], { title: "Casefile run" })) as
            "continue" | "step" | "stop" | undefined);
    if (!chosen) return { ok: false, reason: "Nothing chosen." } satisfies CommandResult;
    return ctx.debug.control(chosen) || ctx.runs.control(chosen)
      ? ({ ok: true } satisfies CommandResult)
      : ({ ok: false, reason: "No workflow is running." } satisfies CommandResult);
  },
  // A debug session resuming from a checkpoint (a Runs view item carries its case file and id; the inspector passes both).
  debugFromHere: (ctx) => async (uri?: unknown, checkpointId?: unknown) => {
    const target = await caseFileAndId(uri, checkpointId, "Checkpoint id to debug from");
    return target ? ctx.debug.debugFromHere(target.caseFile, target.id) : noTarget;
  },
  // A debug session of a workflow file (a Uri or a Workflows view item); the input as given, else asked for.
  debugWorkflow: (ctx) => (uri?: unknown, input?: unknown, caseFile?: unknown) => {
    const workflow = uri instanceof vscode.Uri ? uri : isItemWithUri(uri) ? uri.resourceUri : vscode.window.activeTextEditor?.document.uri;
    if (!workflow) return { ok: false, reason: "No workflow file chosen." } satisfies CommandResult;
    return ctx.debug.debugWorkflow(workflow, input, typeof caseFile === "string" ? caseFile : undefined);
  },
  setApiKey: (ctx) => (provider?: unknown, key?: unknown) => setApiKey(ctx.extension, provider, key),
  // The Rules view's actions; a rule item carries its case file and id. `statement` lets the e2e suite skip the prompt.
  confirmRule: (ctx) => (item?: unknown) => ruleAction(ctx, item, "confirm"),
  editRule: (ctx) => (item?: unknown, statement?: unknown) => ruleAction(ctx, item, "edit", statement),
  deleteRule: (ctx) => (item?: unknown, confirmed?: unknown) => ruleAction(ctx, item, "delete", confirmed === true ? "" : undefined),
  openInspector: (ctx) => async (uri?: unknown, runId?: unknown) => {
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
    );
    return { ok: true, message: panel.panel.title } satisfies CommandResult;
  },
  refreshViews: (ctx) => () => {
    ctx.views.refresh();
    return { ok: true } satisfies CommandResult;
  },
} satisfies Record<string, Factory>;

export type CommandName = keyof typeof commands;

const noTarget = { ok: false, reason: "Nothing chosen." } satisfies CommandResult;

/** Run and Step both execute workflow code: refused in Restricted Mode, with the reason shown (runCommands.ts). */
function startWorkflow(ctx: Ctx, mode: "run" | "step", uri: unknown, input: unknown, caseFile: unknown) {
  const workflow = uri instanceof vscode.Uri ? uri : isItemWithUri(uri) ? uri.resourceUri : undefined;
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

function isItemWithUri(value: unknown): value is { resourceUri: vscode.Uri } {
  return typeof value === "object" && value !== null && (value as { resourceUri?: unknown }).resourceUri instanceof vscode.Uri;
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
