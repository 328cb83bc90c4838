import * as path from "node:path";
import * as vscode from "vscode";
import { CASE_FILE_GLOB } from "./caseFiles";
import { IntentsTree, RequestsTree, RulesTree, RunsTree } from "./caseViews";

/**
 * The tree views of the Casefile activity-bar container: Workflows here, the views of case files
 * in caseViews.ts. An empty view shows its `viewsWelcome` text from package.json.
 */

export const VIEW_IDS = {
  workflows: "casefile.workflows",
  runs: "casefile.runs",
  intents: "casefile.intents",
  requests: "casefile.requests",
  rules: "casefile.rules",
} as const;

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

export class CasefileViews implements vscode.Disposable {
  private readonly runs: RunsTree;
  private readonly workflows = new WorkflowsProvider();
  private readonly requests = new RequestsTree();
  private readonly intents = new IntentsTree();
  private readonly rules = new RulesTree();
  private readonly disposables: vscode.Disposable[] = [];

  constructor(extension: vscode.ExtensionContext) {
    this.runs = new RunsTree(extension);
    this.disposables.push(
      this.runs,
      this.workflows,
      this.requests,
      this.intents,
      this.rules,
      vscode.window.registerTreeDataProvider(VIEW_IDS.runs, this.runs),
      vscode.window.registerTreeDataProvider(VIEW_IDS.workflows, this.workflows),
      vscode.window.registerTreeDataProvider(VIEW_IDS.intents, this.intents),
      vscode.window.registerTreeDataProvider(VIEW_IDS.requests, this.requests),
      vscode.window.registerTreeDataProvider(VIEW_IDS.rules, this.rules),
    );
    this.disposables.push(
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration("casefile.stores")) this.refreshRemote();
      }),
    );
    const watcher = vscode.workspace.createFileSystemWatcher(CASE_FILE_GLOB);
    this.disposables.push(
      watcher,
      watcher.onDidCreate(() => this.refresh()),
      watcher.onDidDelete(() => this.refresh()),
      watcher.onDidChange(() => this.refreshSoon()),
    );
  }

  /** The case files the Runs view lists, in its order. */
  async listCaseFiles(): Promise<vscode.Uri[]> {
    return (await this.runs.getChildren()).flatMap((n) => (n.kind === "caseFile" ? [n.caseFile] : []));
  }

  /** The view's tree data providers: read by the e2e suite, as the views draw them. */
  get trees(): { runs: RunsTree; requests: RequestsTree; intents: IntentsTree; rules: RulesTree } {
    return { runs: this.runs, requests: this.requests, intents: this.intents, rules: this.rules };
  }

  /** Called by the refreshViews command and when case files appear or go. */
  refresh(): void {
    for (const tree of [this.runs, this.workflows, this.requests, this.intents, this.rules]) tree.refresh();
  }

  /** Called by the refreshViews command and when casefile.stores changes: the remote cases are read again too. */
  refreshRemote(): void {
    this.runs.forgetRemote();
    this.refresh();
  }

  /** The workflow files the Workflows view lists, in its order. */
  listWorkflows(): Promise<vscode.Uri[]> {
    return this.workflows.getChildren();
  }

  private refreshTimer: ReturnType<typeof setTimeout> | undefined;

  /** Called when a case file changes (a run commits, a rule is confirmed): one refresh per burst. */
  private refreshSoon(): void {
    clearTimeout(this.refreshTimer);
    this.refreshTimer = setTimeout(() => this.refresh(), 500);
  }

  dispose(): void {
    clearTimeout(this.refreshTimer);
    for (const d of this.disposables.splice(0)) d.dispose();
  }
}
