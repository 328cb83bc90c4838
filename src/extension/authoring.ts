import * as path from "node:path";
import * as vscode from "vscode";
import type { Described, WorkflowProblem } from "../protocol/describe";
import type { GraphLive } from "../protocol/graph";
import { caseFileFor, pickWorkflow, workflowUriOf } from "./runCommands";
import { canRunWorkflowCode, warnRestricted } from "./trust";

/**
 * Writing workflows: the Workflow Graph command, the CodeLens above `defineWorkflow` (Run | Step |
 * Graph), and workflow problems in the Problems panel. Registered from extension.ts; everything
 * heavy (zod, the graph panel, the describe child process) loads on first use.
 *
 * Loading a workflow runs its code, so the graph and the diagnostics come from a child process
 * (dist/describe.js) and only in a trusted workspace.
 */

const DEFINE_WORKFLOW = /\bdefineWorkflow\s*\(/g;
const IMPORTS_CASEFILE = /\bfrom\s*["']casefile["']/;
const WORKFLOW_SELECTOR: vscode.DocumentSelector = [
  { language: "typescript", scheme: "file" },
  { language: "typescriptreact", scheme: "file" },
];

export interface AuthoringApi {
  /** Workflow problems in the Problems panel, by file. */
  readonly diagnostics: vscode.DiagnosticCollection;
  /** Describes a workflow in a child process and refreshes its diagnostics. */
  validate(workflow: vscode.Uri): Promise<Described | { ok: false; reason: string }>;
  /**
   * Tells the open Workflow Graphs that what a run highlights changed (RunSessions, as the runner's
   * events arrive). Loads nothing: before a graph was first opened there is nothing to tell.
   */
  liveChanged(): void;
}

/** What a run going now highlights in a workflow's graph (RunSessions.liveFor). */
export type RunnerLive = (workflowPath: string, caseFile: string) => GraphLive | undefined;

export function registerAuthoring(context: vscode.ExtensionContext, log: vscode.LogOutputChannel, runnerLive?: RunnerLive): AuthoringApi {
  const diagnostics = vscode.languages.createDiagnosticCollection("casefile");
  let graphModule: Promise<typeof import("./graphPanel.js")> | undefined;
  const loadGraph = (): Promise<typeof import("./graphPanel.js")> => (graphModule ??= import("./graphPanel.js"));
  const describePath = path.join(context.extensionPath, "dist", "describe.js");

  const describe = async (workflow: vscode.Uri): Promise<Described> => {
    const { describeInChild } = await import("../runner/describe.js");
    const described = await describeInChild(describePath, workflow.fsPath);
    showProblems(diagnostics, workflow, described);
    return described;
  };

  const validate = async (workflow: vscode.Uri): Promise<Described | { ok: false; reason: string }> => {
    const trust = canRunWorkflowCode();
    if (!trust.ok) return trust;
    return describe(workflow);
  };

  const showGraph = async (uri?: unknown): Promise<{ ok: true; message: string } | { ok: false; reason: string }> => {
    // A Uri (CodeLens, the inspector), a Workflows view item, else the palette's pick (runCommands.ts).
    const given = workflowUriOf(uri);
    const trust = canRunWorkflowCode();
    if (!trust.ok) {
      void warnRestricted(trust.reason);
      return trust;
    }
    const workflow = given ?? (await pickWorkflow("Show Workflow Graph"));
    if (!workflow) return { ok: false, reason: "No workflow file chosen." };
    const { GraphPanel } = await loadGraph();
    const panel = await GraphPanel.show(
      context.extensionUri,
      log,
      { describe, caseFileFor, runnerLive: (w, caseFile) => runnerLive?.(w.fsPath, caseFile) },
      workflow,
    );
    return { ok: true, message: panel.panel.title };
  };

  context.subscriptions.push(
    diagnostics,
    vscode.commands.registerCommand("casefile.showGraph", showGraph),
    vscode.commands.registerCommand("casefile.newWorkflow", (folder?: unknown, name?: unknown) => newWorkflow(context, folder, name)),
    vscode.commands.registerCommand("casefile.revealExecutor", async (uri: unknown, executor: unknown) => {
      if (!(uri instanceof vscode.Uri) || typeof executor !== "string") return false;
      const { revealExecutor } = await loadGraph();
      return revealExecutor(uri, executor);
    }),
    vscode.languages.registerCodeLensProvider(WORKFLOW_SELECTOR, new WorkflowCodeLens()),
    vscode.window.registerCustomEditorProvider(CaseFileEditor.viewType, new CaseFileEditor(), {
      supportsMultipleEditorsPerDocument: false,
    }),
    vscode.workspace.onDidSaveTextDocument((doc) => {
      if (!isWorkflowDocument(doc)) return;
      if (!vscode.workspace.isTrusted) return;
      void describe(doc.uri).catch((err: unknown) => log.warn(`validating ${doc.uri.fsPath}: ${String(err)}`));
    }),
    vscode.workspace.onDidCloseTextDocument((doc) => diagnostics.delete(doc.uri)),
  );
  const liveChanged = (): void => void graphModule?.then(({ GraphPanel }) => GraphPanel.refreshLive());
  return { diagnostics, validate, liveChanged };
}

/** A file that imports from "casefile" and calls defineWorkflow (not the runtime's own definition of it). */
function isWorkflowDocument(doc: vscode.TextDocument): boolean {
  const text = doc.getText();
  return (
    (doc.languageId === "typescript" || doc.languageId === "typescriptreact") &&
    IMPORTS_CASEFILE.test(text) &&
    /\bdefineWorkflow\s*\(/.test(text)
  );
}

/** Run | Step | Graph above each `defineWorkflow(` call. */
class WorkflowCodeLens implements vscode.CodeLensProvider {
  provideCodeLenses(doc: vscode.TextDocument): vscode.CodeLens[] {
    if (!isWorkflowDocument(doc)) return [];
    const text = doc.getText();
    const lenses: vscode.CodeLens[] = [];
    for (const m of text.matchAll(DEFINE_WORKFLOW)) {
      // Skip the import line: only calls that build a workflow.
      const line = doc.lineAt(doc.positionAt(m.index).line);
      if (/^\s*import\b|\bfunction\s+defineWorkflow\b/.test(line.text)) continue;
      const range = new vscode.Range(line.range.start, line.range.start);
      lenses.push(
        new vscode.CodeLens(range, { title: "$(play) Run", command: "casefile.run", arguments: [doc.uri] }),
        new vscode.CodeLens(range, { title: "$(debug-step-over) Step", command: "casefile.step", arguments: [doc.uri] }),
        new vscode.CodeLens(range, { title: "$(type-hierarchy) Graph", command: "casefile.showGraph", arguments: [doc.uri] }),
      );
    }
    return lenses;
  }
}

/** Puts a workflow's problems in the Problems panel, each where it points (or at `defineWorkflow`). */
function showProblems(diagnostics: vscode.DiagnosticCollection, workflow: vscode.Uri, described: Described): void {
  diagnostics.delete(workflow);
  if (described.ok) return;
  const byFile = new Map<string, vscode.Diagnostic[]>();
  const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === workflow.toString());
  for (const p of described.problems) {
    const file = p.file ?? workflow.fsPath;
    const range = rangeOf(p, file === workflow.fsPath ? doc : undefined);
    const d = new vscode.Diagnostic(range, p.message, vscode.DiagnosticSeverity.Error);
    d.source = "casefile";
    d.code = p.code;
    byFile.set(file, [...(byFile.get(file) ?? []), d]);
  }
  for (const [file, list] of byFile) diagnostics.set(vscode.Uri.file(file), list);
}

function rangeOf(p: WorkflowProblem, doc: vscode.TextDocument | undefined): vscode.Range {
  if (p.line !== undefined) {
    const pos = new vscode.Position(Math.max(0, p.line - 1), Math.max(0, p.column ?? 0));
    return new vscode.Range(pos, pos.translate(0, 1));
  }
  if (doc) {
    const text = doc.getText();
    // A problem naming an executor points at its definition; else at defineWorkflow.
    for (const name of [p.executor, p.key]) {
      if (!name) continue;
      const m = new RegExp(`(^|[\\s{,])(["']?)${name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\2\\s*:`, "m").exec(text);
      if (m) {
        const start = doc.positionAt(m.index + m[1]!.length);
        return new vscode.Range(start, start.translate(0, name.length + m[2]!.length * 2));
      }
    }
    const call = /\bdefineWorkflow\s*\(/.exec(text.replace(/^\s*import\b.*$/gm, (s) => " ".repeat(s.length)));
    if (call) {
      const start = doc.positionAt(call.index);
      return new vscode.Range(start, start.translate(0, "defineWorkflow".length));
    }
  }
  return new vscode.Range(0, 0, 0, 1);
}

/**
 * Writes a workflow file from the template into a folder (the first workspace folder unless given)
 * and writes or merges the folder's tsconfig.json so "casefile" and "zod" resolve to the
 * declarations the extension ships (dist/types): the file type-checks with no npm install.
 */
async function newWorkflow(
  context: vscode.ExtensionContext,
  folderArg: unknown,
  nameArg: unknown,
): Promise<{ ok: true; message: string } | { ok: false; reason: string }> {
  const folder = folderArg instanceof vscode.Uri ? folderArg : vscode.workspace.workspaceFolders?.[0]?.uri;
  if (!folder) return { ok: false, reason: "Open a folder first: the workflow file is written into it." };
  const name =
    typeof nameArg === "string"
      ? nameArg
      : await vscode.window.showInputBox({ title: "New Workflow", prompt: "Workflow name", value: "my-workflow" });
  if (!name) return { ok: false, reason: "No name given." };
  const { mergeTsconfig, workflowFileName, workflowTemplate } = await import("../authoring/scaffold.js");
  const file = vscode.Uri.joinPath(folder, workflowFileName(name));
  if (await exists(file)) return { ok: false, reason: `${vscode.workspace.asRelativePath(file)} exists already.` };
  await vscode.workspace.fs.writeFile(file, new TextEncoder().encode(workflowTemplate(name)));
  const tsconfig = vscode.Uri.joinPath(folder, "tsconfig.json");
  const existing = (await exists(tsconfig)) ? new TextDecoder().decode(await vscode.workspace.fs.readFile(tsconfig)) : undefined;
  const types = path.join(context.extensionPath, "dist", "types");
  await vscode.workspace.fs.writeFile(tsconfig, new TextEncoder().encode(mergeTsconfig(existing, types)));
  await vscode.window.showTextDocument(file);
  return {
    ok: true,
    message: `${vscode.workspace.asRelativePath(file)} written; tsconfig.json maps "casefile" and "zod" to the extension's types.`,
  };
}

async function exists(uri: vscode.Uri): Promise<boolean> {
  try {
    await vscode.workspace.fs.stat(uri);
    return true;
  } catch {
    return false;
  }
}

/**
 * The read-only custom editor for `.casefile` files: opening one (double-click in the Explorer,
 * Quick Open) opens the Run Inspector for it. The editor's own tab steps aside for the inspector,
 * which is the single place a case file is shown; it never writes the file. Works in Restricted
 * Mode: reading a case file runs no workflow code.
 */
class CaseFileEditor implements vscode.CustomReadonlyEditorProvider {
  static readonly viewType = "casefile.caseFile";

  openCustomDocument(uri: vscode.Uri): vscode.CustomDocument {
    return { uri, dispose: () => undefined };
  }

  async resolveCustomEditor(document: vscode.CustomDocument, panel: vscode.WebviewPanel): Promise<void> {
    panel.webview.options = { enableScripts: false, localResourceRoots: [] };
    panel.webview.html = `<!DOCTYPE html><html><head><meta http-equiv="Content-Security-Policy" content="default-src 'none'"></head><body><p>Opening the Run Inspector for ${escapeHtml(path.basename(document.uri.fsPath))}…</p></body></html>`;
    await vscode.commands.executeCommand("casefile.openInspector", document.uri);
    panel.dispose();
  }
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
