import * as path from "node:path";
import * as vscode from "vscode";
import { CASE_FILE_GLOB } from "./caseFiles";

/**
 * The tree views of the Casefile activity-bar container. Views whose feature is not built yet
 * stay empty and show their `viewsWelcome` text from package.json, which says so plainly.
 */

export const VIEW_IDS = {
  workflows: "casefile.workflows",
  runs: "casefile.runs",
  intents: "casefile.intents",
  requests: "casefile.requests",
  rules: "casefile.rules",
} as const;

/** Runs view, first level: the case files in the workspace; selecting one opens the inspector. */
class CaseFilesProvider implements vscode.TreeDataProvider<vscode.Uri> {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeTreeData = this.changed.event;

  refresh(): void {
    this.changed.fire();
  }

  async getChildren(element?: vscode.Uri): Promise<vscode.Uri[]> {
    if (element) return [];
    const files = await vscode.workspace.findFiles(CASE_FILE_GLOB, "**/node_modules/**");
    return files.sort((a, b) => a.fsPath.localeCompare(b.fsPath));
  }

  getTreeItem(uri: vscode.Uri): vscode.TreeItem {
    const item = new vscode.TreeItem(path.basename(uri.fsPath), vscode.TreeItemCollapsibleState.None);
    item.resourceUri = uri;
    // The folder, when the file is not at the workspace root.
    const folder = path.dirname(vscode.workspace.asRelativePath(uri, false));
    if (folder !== ".") item.description = folder;
    item.tooltip = uri.fsPath;
    item.iconPath = new vscode.ThemeIcon("database");
    item.contextValue = "casefile.caseFile";
    item.command = { command: "casefile.openInspector", title: "Open Run Inspector", arguments: [uri] };
    return item;
  }

  dispose(): void {
    this.changed.dispose();
  }
}

/** Workflows view: workspace .ts files calling defineWorkflow, with Run and Step inline actions. */
class WorkflowsProvider implements vscode.TreeDataProvider<vscode.Uri> {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeTreeData = this.changed.event;

  refresh(): void {
    this.changed.fire();
  }

  async getChildren(element?: vscode.Uri): Promise<vscode.Uri[]> {
    if (element) return [];
    const { findWorkflowFiles } = await import("./runCommands.js");
    return findWorkflowFiles();
  }

  getTreeItem(uri: vscode.Uri): vscode.TreeItem {
    const item = new vscode.TreeItem(path.basename(uri.fsPath), vscode.TreeItemCollapsibleState.None);
    item.resourceUri = uri;
    const folder = path.dirname(vscode.workspace.asRelativePath(uri, false));
    if (folder !== ".") item.description = folder;
    item.iconPath = new vscode.ThemeIcon("symbol-class");
    item.contextValue = "casefile.workflow";
    item.command = { command: "vscode.open", title: "Open Workflow", arguments: [uri] };
    return item;
  }

  dispose(): void {
    this.changed.dispose();
  }
}

/** A view with no provider of its own yet: empty, so VS Code shows its welcome text. */
class NotBuiltYetProvider implements vscode.TreeDataProvider<never> {
  getChildren(): never[] {
    return [];
  }
  getTreeItem(element: never): vscode.TreeItem {
    return element;
  }
}

export class CasefileViews implements vscode.Disposable {
  private readonly caseFiles = new CaseFilesProvider();
  private readonly workflows = new WorkflowsProvider();
  private readonly disposables: vscode.Disposable[] = [];

  constructor() {
    const empty = new NotBuiltYetProvider();
    this.disposables.push(
      this.caseFiles,
      this.workflows,
      vscode.window.registerTreeDataProvider(VIEW_IDS.runs, this.caseFiles),
      vscode.window.registerTreeDataProvider(VIEW_IDS.workflows, this.workflows),
      vscode.window.registerTreeDataProvider(VIEW_IDS.intents, empty),
      vscode.window.registerTreeDataProvider(VIEW_IDS.requests, empty),
      vscode.window.registerTreeDataProvider(VIEW_IDS.rules, empty),
    );
    const watcher = vscode.workspace.createFileSystemWatcher(CASE_FILE_GLOB);
    this.disposables.push(
      watcher,
      watcher.onDidCreate(() => this.refresh()),
      watcher.onDidDelete(() => this.refresh()),
    );
  }

  /** The case files the Runs view lists, in its order. */
  listCaseFiles(): Promise<vscode.Uri[]> {
    return this.caseFiles.getChildren();
  }

  /** Called by the refreshViews command and when case files appear or go. */
  refresh(): void {
    this.caseFiles.refresh();
    this.workflows.refresh();
  }

  /** The workflow files the Workflows view lists, in its order. */
  listWorkflows(): Promise<vscode.Uri[]> {
    return this.workflows.getChildren();
  }

  dispose(): void {
    for (const d of this.disposables.splice(0)) d.dispose();
  }
}
