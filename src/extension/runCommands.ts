import os from "node:os";
import * as path from "node:path";
import * as vscode from "vscode";
import type { EvalFormat, ReplayMode } from "../protocol/webview";
import { answerFromOption } from "../protocol/answer";
import type { InspectorAction } from "./inspectorPanel";
import type { Json } from "../engine/records";
import type { RunResult, RunSessions } from "./runSessions";
import { API_KEY_SECRETS } from "./runSessions";
import { readCaseFile } from "./caseFiles";
import { askWorkflowInput } from "./inputForm";
import { loadInspector } from "./inspectorLoader";
import { runCli } from "./cliProcess";
import { launchConfigOf, launchWithoutDebugging } from "./launchTask";
import { canRunWorkflowCode, warnRestricted } from "./trust";

/**
 * What the run commands do: start a workflow, resume from a checkpoint, fork with edited state,
 * replay a step, answer a request, export a step as an eval case. Called by the command handlers
 * in commands.ts and by the Run Inspector's actions (extension.ts). Each asks Workspace Trust
 * first: all of them load workflow code.
 */

export type ActionResult = RunResult | { ok: true; message: string; file?: string };

function refuseIfUntrusted(log: vscode.LogOutputChannel, what: string, quiet = false): ActionResult | undefined {
  const trust = canRunWorkflowCode();
  if (trust.ok) return undefined;
  log.info(`${what} refused: workspace is in Restricted Mode`);
  if (!quiet) void warnRestricted(trust.reason);
  return { ok: false, reason: trust.reason };
}

/**
 * Where a workflow's case file goes when a run names none and its case is not known (the
 * Workflow Graph's, F5's with no launch.json): casefile.caseFileFolder, else beside the workflow.
 * A new run from Run or Step leaves the name to the runner, which names the case from the input
 * (cases/<caseId>.casefile, engine/caseName.ts).
 */
export function caseFileFor(workflow: vscode.Uri): string {
  const { folder, root } = caseFolderOf(workflow);
  const name = path.basename(workflow.fsPath).replace(/\.[cm]?ts$/, "") + ".casefile";
  if (!folder) return path.join(path.dirname(workflow.fsPath), name);
  return path.resolve(root, folder, name);
}

/** The casefile.caseFileFolder setting, and the workspace folder it is relative to. */
function caseFolderOf(workflow: vscode.Uri): { folder: string; root: string } {
  const folder = vscode.workspace.getConfiguration("casefile").get<string>("caseFileFolder", "");
  return { folder, root: vscode.workspace.getWorkspaceFolder(workflow)?.uri.fsPath ?? path.dirname(workflow.fsPath) };
}

/**
 * Run and Step (the Workflows view, CodeLens, the palette): the input from the form (inputForm.ts,
 * unless given), then the run. A workflow that a casefile launch configuration runs is started
 * through that configuration without debugging (launchTask.ts): VS Code runs its preLaunchTask
 * (the examples' ERP stand-in) as F5 does, and the runner gets its envFile. The case file is the
 * one given, else the case's own, named by the runner from the input.
 */
export async function runWorkflow(
  extension: vscode.ExtensionContext,
  sessions: RunSessions,
  log: vscode.LogOutputChannel,
  mode: "run" | "step",
  workflow: vscode.Uri | undefined,
  input: Json | undefined,
  caseFile: string | undefined,
): Promise<ActionResult> {
  const refused = refuseIfUntrusted(log, mode);
  if (refused) return refused;
  const file = workflow ?? (await pickWorkflow(mode === "step" ? "Step Through Workflow" : "Run Workflow"));
  if (!file) return { ok: false, reason: "No workflow file chosen." };
  const given =
    input ??
    (await askWorkflowInput(extension, log, file, `${mode === "step" ? "Step through" : "Run"} ${path.basename(file.fsPath)}: input`));
  if (given === undefined) return { ok: false, reason: "No input given." };
  const { folder, root } = caseFolderOf(file);
  const start = (env: Record<string, string>): Promise<RunResult> =>
    sessions.start(
      {
        kind: "run",
        workflowPath: file.fsPath,
        ...(caseFile ? { caseFile } : folder ? { caseFolder: folder, caseFolderRoot: root } : {}),
        input: given,
      },
      { stepMode: mode === "step", title: `${mode === "step" ? "Stepping through" : "Running"} ${path.basename(file.fsPath)}`, env },
    );
  const launch = launchConfigOf(file);
  if (!launch) return tell(await start({}));
  log.info(`${mode}: through the launch configuration "${String(launch.config.name)}" without debugging`);
  const result = await launchWithoutDebugging(launch.folder, launch.config, start, () => sessions.control("stop"));
  return tell(
    result ?? {
      ok: false,
      reason: `The launch configuration "${String(launch.config.name)}" did not start${launch.config.preLaunchTask ? ` (its preLaunchTask "${String(launch.config.preLaunchTask)}": see its terminal)` : ""}.`,
    },
  );
}

export async function resumeFrom(
  sessions: RunSessions,
  log: vscode.LogOutputChannel,
  caseFile: vscode.Uri,
  checkpointId: string,
  patch?: Record<string, Json>,
): Promise<ActionResult> {
  const refused = refuseIfUntrusted(log, "resume");
  if (refused) return refused;
  const result = await sessions.start(
    { kind: "resume", caseFile: caseFile.fsPath, checkpointId, ...(patch ? { patch } : {}) },
    { stepMode: false, title: `${patch ? "Forking" : "Resuming"} from checkpoint ${checkpointId}` },
  );
  if (patch && result.ok) void followInOpenInspector(caseFile, result.runId, result.status); // the fork editor tells the rest
  return patch ? result : tell(result);
}

export async function replayStep(
  sessions: RunSessions,
  log: vscode.LogOutputChannel,
  caseFile: vscode.Uri,
  agentCallId: string,
  mode: ReplayMode,
  messages?: { role: "system" | "user" | "assistant"; content: string }[],
): Promise<ActionResult> {
  const refused = refuseIfUntrusted(log, "replay");
  if (refused) return refused;
  const result = await sessions.start(
    { kind: "replay", caseFile: caseFile.fsPath, agentCallId, mode, ...(messages ? { messages } : {}) },
    { stepMode: false, title: `Replaying ${agentCallId} (${mode})` },
  );
  return tell(result);
}

export async function answerRequest(
  sessions: RunSessions,
  log: vscode.LogOutputChannel,
  caseFile: vscode.Uri,
  requestId: string,
  answer: Json | undefined,
  opts: { inPlace?: boolean } = {},
): Promise<ActionResult> {
  const refused = refuseIfUntrusted(log, "respond", opts.inPlace);
  if (refused) return refused;
  const given = answer ?? (await askAnswer(caseFile, requestId));
  if (given === undefined) return { ok: false, reason: "No answer given." };
  const result = await sessions.start(
    { kind: "respond", caseFile: caseFile.fsPath, requestId, answer: given, by: userName() },
    { stepMode: false, title: `Answering ${requestId}` },
  );
  // From the inspector's request buttons, a refused answer is shown beside the request, not in a toast.
  return opts.inPlace && !result.ok ? result : tell(result);
}

/** The formats `casefile export-eval --format` takes, each with what it is for (a Record, so a new format must be listed). */
export const EVAL_FORMATS: Record<EvalFormat, string> = {
  json: "Casefile's own eval case (.eval.json): casefile eval and the Testing view run it",
  promptfoo: "promptfoo test cases (.promptfoo.yaml): tests: file://… in a promptfoo config",
  "openai-jsonl": "openai/evals JSONL (.jsonl): input and the expected action as ideal",
  "openai-evals": "OpenAI Evals API (.items.jsonl and .openai-eval.json): items, a string_check grader on the action, a run",
};

/**
 * Writes an eval case for an agent step, through the CLI in a child process: the export loads the
 * workflow file (its proposal schema and rules), which is workflow code, so it stays out of the
 * extension host and is refused in Restricted Mode.
 */
export async function exportStepAsEval(
  extension: vscode.ExtensionContext,
  log: vscode.LogOutputChannel,
  caseFile: vscode.Uri,
  agentCallId: string,
  format: EvalFormat | undefined,
): Promise<ActionResult> {
  const refused = refuseIfUntrusted(log, "export");
  if (refused) return refused;
  const chosen =
    format ??
    ((
      await vscode.window.showQuickPick(
        Object.entries(EVAL_FORMATS).map(([label, detail]) => ({ label, detail })),
        { title: "Export step as eval case: format" },
      )
    )?.label as EvalFormat | undefined);
  if (!chosen) return { ok: false, reason: "No format chosen." };
  const args = ["export-eval", caseFile.fsPath, "--step", agentCallId, "--format", chosen, "--json"];
  log.info(`export: casefile ${args.join(" ")}`);
  const { code, out, stdout } = await runCli(extension, args, path.dirname(caseFile.fsPath));
  if (code !== 0) {
    log.error(`export failed: ${out.trim()}`);
    return tell({ ok: false, reason: `Export failed: ${out.trim().split("\n").slice(-3).join(" ")}` });
  }
  // Loaded on first use (with zod): the extension's entry stays small.
  const { parseExportEvalResult } = await import("../protocol/exportEval.js");
  const result = parseExportEvalResult(stdout);
  if (!result.ok) {
    log.error(`export: the CLI's answer did not parse: ${result.error}\n${out.trim()}`);
    return tell({ ok: false, reason: `Export failed: the CLI's answer did not parse: ${result.error}` });
  }
  const file = result.value.path;
  log.info(`export: ${result.value.format} eval case ${result.value.id} written to ${file}`);
  const message = `Eval case written to ${vscode.workspace.asRelativePath(file)}`;
  void vscode.window.showInformationMessage(message, "Open").then((pick) => {
    if (pick) void vscode.window.showTextDocument(vscode.Uri.file(file));
  });
  return { ok: true, message, file };
}

export async function changeRule(
  extension: vscode.ExtensionContext,
  log: vscode.LogOutputChannel,
  caseFile: vscode.Uri,
  ruleId: string,
  action: "confirm" | "edit" | "delete",
  statement?: string,
): Promise<ActionResult> {
  const args = ["rules", caseFile.fsPath, action, ruleId, "--by", "vscode"];
  if (action === "edit") {
    const text =
      statement ?? (await vscode.window.showInputBox({ title: `Edit rule ${ruleId}`, prompt: "Statement", ignoreFocusOut: true }));
    if (!text) return { ok: false, reason: "No statement given." };
    args.push("--statement", text);
  }
  if (action === "delete" && statement === undefined) {
    const sure = await vscode.window.showWarningMessage(`Delete rule ${ruleId}?`, { modal: true }, "Delete");
    if (sure !== "Delete") return { ok: false, reason: "Not deleted." };
  }
  const { code, out } = await runCli(extension, args, path.dirname(caseFile.fsPath));
  log.info(`rules ${action} ${ruleId}: ${out.trim()}`);
  return tell(code === 0 ? { ok: true, message: out.trim() || `Rule ${ruleId}: ${action} done.` } : { ok: false, reason: out.trim() });
}

/** "Casefile: Set API Key": the key goes to SecretStorage only, never to settings or the log. */
export async function setApiKey(extension: vscode.ExtensionContext, provider?: unknown, key?: unknown): Promise<ActionResult> {
  const kind =
    provider === "openai" || provider === "azure"
      ? provider
      : ((await vscode.window.showQuickPick(["openai", "azure"], { title: "API key for which provider?" })) as
          "openai" | "azure" | undefined);
  if (!kind) return { ok: false, reason: "No provider chosen." };
  const value =
    typeof key === "string"
      ? key
      : await vscode.window.showInputBox({ title: `${API_KEY_SECRETS[kind]}`, password: true, ignoreFocusOut: true });
  if (!value) return { ok: false, reason: "No key given." };
  await extension.secrets.store(`casefile.${API_KEY_SECRETS[kind]}`, value);
  return { ok: true, message: `${API_KEY_SECRETS[kind]} stored in the editor's secret storage.` };
}

/** The inspector's actions, carried out; the returned sentence is shown in the panel. */
export async function performInspectorAction(
  extension: vscode.ExtensionContext,
  sessions: RunSessions,
  log: vscode.LogOutputChannel,
  caseFile: vscode.Uri,
  action: InspectorAction,
  forkEditor: (caseFile: vscode.Uri, checkpointId: string) => Promise<ActionResult>,
  replayEditor: (caseFile: vscode.Uri, agentCallId: string) => Promise<ActionResult>,
): Promise<string> {
  let result: ActionResult;
  switch (action.type) {
    case "resumeFrom":
      result = await resumeFrom(sessions, log, caseFile, action.checkpointId);
      break;
    case "forkWithEditedState":
      result = await forkEditor(caseFile, action.checkpointId);
      break;
    case "debugFromHere":
      // The debugger's own command (debugSessions.ts), so the panel and the Runs view start the same session.
      result = (await vscode.commands.executeCommand("casefile.debugFromHere", caseFile, action.checkpointId)) as ActionResult;
      break;
    case "replayStep": {
      const callId = await agentCallOfStep(caseFile, action.stepId);
      result =
        action.mode === "edited" ? await replayEditor(caseFile, callId) : await replayStep(sessions, log, caseFile, callId, action.mode);
      break;
    }
    case "exportStepAsEval":
      result = await exportStepAsEval(extension, log, caseFile, await agentCallOfStep(caseFile, action.stepId), action.format);
      break;
    default: {
      const never: never = action;
      throw new Error(`unhandled action ${JSON.stringify(never)}`);
    }
  }
  if (!result.ok) throw new Error(result.reason);
  return result.message;
}

/**
 * The agent call recorded for a step the inspector names (replay and export take agent call ids).
 * The engine gives both the same id; a case file that does not is matched by run, superstep and
 * executor. Unmatched, the step id goes on as it is and the runner or CLI says what is wrong.
 */
async function agentCallOfStep(caseFile: vscode.Uri, stepId: string): Promise<string> {
  const { openCaseFile } = await import("../casefile/index.js");
  const store = await openCaseFile(caseFile.fsPath, { readOnly: true });
  try {
    if (store.getAgentCall(stepId)) return stepId;
    for (const run of store.listRuns()) {
      const step = store.listSteps(run.id).find((s) => s.id === stepId);
      if (!step) continue;
      const call = store.listAgentCalls(run.id).find((c) => c.superstep === step.superstep && c.executor === step.executor);
      if (call) return call.id;
    }
    return stepId;
  } finally {
    store.close();
  }
}

/**
 * Tells the person how an action ended. A run's notification offers "Open in Inspector"; an
 * inspector already open on its case file follows the run (the new branch of a resume or fork).
 */
function tell(result: ActionResult): ActionResult {
  if (!result.ok) {
    void vscode.window.showErrorMessage(result.reason);
    return result;
  }
  if (!("runId" in result)) {
    void vscode.window.showInformationMessage(result.message);
    return result;
  }
  const caseFile = vscode.Uri.file(result.caseFile);
  void followInOpenInspector(caseFile, result.runId, result.status);
  void vscode.window.showInformationMessage(result.message, OPEN_IN_INSPECTOR).then((pick) => {
    if (pick === OPEN_IN_INSPECTOR) void vscode.commands.executeCommand("casefile.openInspector", caseFile, result.runId);
  });
  return result;
}

export const OPEN_IN_INSPECTOR = "Open in Inspector";

async function followInOpenInspector(caseFile: vscode.Uri, runId: string, status: string): Promise<void> {
  const { InspectorPanel } = await loadInspector();
  await InspectorPanel.get(caseFile)?.follow(runId, status);
}

async function askJson(title: string, value: string): Promise<Json | undefined> {
  const text = await vscode.window.showInputBox({
    title,
    value,
    ignoreFocusOut: true,
    validateInput: (v) => {
      try {
        JSON.parse(v);
        return undefined;
      } catch (e) {
        return (e as Error).message;
      }
    },
  });
  return text === undefined ? undefined : (JSON.parse(text) as Json);
}

/** Workspace .ts files that call defineWorkflow: the Workflows view's list, and the Run picker's. */
export async function findWorkflowFiles(): Promise<vscode.Uri[]> {
  const files = await vscode.workspace.findFiles("**/*.{ts,mts}", "**/{node_modules,dist,out,.vscode-test}/**", 2000);
  const found: vscode.Uri[] = [];
  for (const uri of files) {
    if (uri.fsPath.endsWith(".d.ts")) continue;
    const text = Buffer.from(await vscode.workspace.fs.readFile(uri)).toString("utf8");
    if (text.includes("defineWorkflow(")) found.push(uri);
  }
  return found.sort((a, b) => a.fsPath.localeCompare(b.fsPath));
}

/**
 * The workflow a command acts on when none was given (the palette): the active editor's when it is
 * a workflow file, else the workspace's only one, else the person picks; with none in the
 * workspace it says so. Used by Run, Step, Debug and Show Workflow Graph.
 */
export async function pickWorkflow(title = "Run Workflow"): Promise<vscode.Uri | undefined> {
  const active = vscode.window.activeTextEditor?.document;
  if (active && active.languageId === "typescript" && active.getText().includes("defineWorkflow(")) return active.uri;
  const files = await findWorkflowFiles();
  if (files.length === 1) return files[0];
  if (files.length === 0) {
    void vscode.window.showInformationMessage(
      `${title}: no workflow files (TypeScript calling defineWorkflow) in this workspace. Casefile: New Workflow writes one.`,
    );
    return undefined;
  }
  const picked = await vscode.window.showQuickPick(
    files.map((uri) => ({ label: path.basename(uri.fsPath), description: vscode.workspace.asRelativePath(uri), uri })),
    { title, placeHolder: "Workflow file" },
  );
  return picked?.uri;
}

/** The workflow file a command was given: a Uri, or a tree item carrying one (the Workflows view's). */
export function workflowUriOf(arg: unknown): vscode.Uri | undefined {
  if (arg instanceof vscode.Uri) return arg;
  const uri = typeof arg === "object" && arg !== null ? (arg as { resourceUri?: unknown }).resourceUri : undefined;
  return uri instanceof vscode.Uri ? uri : undefined;
}

/** Who answers a request from the editor: the OS user (recorded with the answer). */
function userName(): string | undefined {
  try {
    return os.userInfo().username;
  } catch {
    return undefined; // no passwd entry for this uid: the answer is recorded without a name
  }
}

/**
 * A person's answer from the Requests view: a quick pick of the request's options (or, with
 * none, approve / reject), then an optional comment. The runner checks it against the request's
 * answer schema; a refused answer is shown with the reason and the request stays open.
 */
async function askAnswer(caseFile: vscode.Uri, requestId: string): Promise<Json | undefined> {
  const prompt = await readCaseFile(caseFile, (store) => {
    for (const run of store.listRuns()) {
      const hit = store.latestCheckpoint(run.id)?.waiting.find((w) => w.id === requestId);
      if (hit) return hit.prompt;
    }
    return undefined;
  }).catch(() => undefined);
  const options = prompt?.options?.length ? prompt.options : ["approve", "reject"];
  const picked = await vscode.window.showQuickPick(
    [...options.map((o) => ({ label: o })), { label: "$(json) Answer as JSON…", json: true }],
    { title: prompt?.title ?? `Answer request ${requestId}`, placeHolder: prompt?.detail ?? "Your answer", ignoreFocusOut: true },
  );
  if (!picked) return undefined;
  if ("json" in picked) return askJson(`Answer to request ${requestId} (JSON)`, '{"decision": "approve"}');
  const comment = await vscode.window.showInputBox({
    title: `${picked.label}: comment (optional)`,
    prompt: "Recorded with your answer, your name and the time",
    ignoreFocusOut: true,
  });
  if (comment === undefined) return undefined;
  return answerFromOption(picked.label, comment);
}
