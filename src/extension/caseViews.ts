import * as path from "node:path";
import * as vscode from "vscode";
import type { CaseStore } from "../engine/store";
import { CASE_FILE_GLOB, readCaseFile } from "./caseFiles";
import { REMOTE_STATUSES, fetchPage, readStores, type RemoteNode } from "./remoteCases";

/**
 * The Runs, Requests, Intents and Rules views: what the workspace's case files hold, read-only
 * (each read opens a case file without a lock and closes it, or reads the store an open inspector keeps). views.ts registers them and
 * refreshes them when case files change and while a run goes.
 */

/** A node of the views. Items that commands act on carry `caseFile` and `id` (see commands.ts caseFileAndId). */
export type CaseNode =
  | { kind: "caseFile"; caseFile: vscode.Uri }
  | { kind: "run"; caseFile: vscode.Uri; id: string; status: string; workflow: string; parentCheckpointId?: string }
  | { kind: "checkpoint"; caseFile: vscode.Uri; id: string; runId: string; superstep: number }
  | { kind: "step"; caseFile: vscode.Uri; id: string; executor: string; stepKind: string; status: string; agent: boolean }
  | { kind: "request"; caseFile: vscode.Uri; id: string; runId: string; title: string; detail?: string }
  | { kind: "intent"; caseFile: vscode.Uri; id: string; runId: string; status: string; executor: string; error?: string }
  | { kind: "rule"; caseFile: vscode.Uri; id: string; statement: string; confirmed: boolean };

async function listCaseFiles(): Promise<vscode.Uri[]> {
  const files = await vscode.workspace.findFiles(CASE_FILE_GLOB, "**/node_modules/**");
  return files.sort((a, b) => a.fsPath.localeCompare(b.fsPath));
}

/** Reads through the store an open inspector keeps for the case file, if any (caseFiles.ts), else opens one for the read. */
async function withStore<T>(caseFile: vscode.Uri, read: (store: CaseStore) => T): Promise<T | undefined> {
  try {
    return await readCaseFile(caseFile, read);
  } catch {
    // A case file being compacted or not a case file: skipped this time, shown on the next refresh.
    return undefined;
  }
}

/** A node of the Runs view: a case file's, or a remote one (remoteCases.ts), which carries its store instead. */
export type RunsNode = CaseNode | RemoteNode;

abstract class CaseTree<N extends RunsNode = CaseNode> implements vscode.TreeDataProvider<N>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeTreeData = this.changed.event;
  refresh(): void {
    this.changed.fire();
  }
  abstract getChildren(element?: N): Promise<N[]>;
  getTreeItem(node: N): vscode.TreeItem {
    return treeItem(node);
  }
  dispose(): void {
    this.changed.dispose();
  }
  /** The flat views (requests, intents, rules): `pick`'s nodes from every case file in the workspace. */
  protected async acrossCaseFiles(pick: (store: CaseStore, caseFile: vscode.Uri) => CaseNode[]): Promise<CaseNode[]> {
    const all: CaseNode[] = [];
    for (const caseFile of await listCaseFiles()) all.push(...((await withStore(caseFile, (store) => pick(store, caseFile))) ?? []));
    return all;
  }
}

/**
 * Runs: case files, then runs drawn as a tree of branches (a fork under the run it came from), then
 * checkpoints, then steps; and when `casefile.stores` names stores, "Remote cases": each store,
 * its statuses, a page of cases at a time (remoteCases.ts).
 */
export class RunsTree extends CaseTree<RunsNode> {
  /** The remote cases listed so far under each store's status, kept across refreshes ("More" appends a page). */
  private readonly remotePages = new Map<string, RemoteNode[]>();

  constructor(private readonly extension: vscode.ExtensionContext) {
    super();
  }

  async getChildren(element?: RunsNode): Promise<RunsNode[]> {
    if (!element) {
      const files: RunsNode[] = (await listCaseFiles()).map((caseFile) => ({ kind: "caseFile", caseFile }));
      const { stores, problems } = readStores();
      return stores.length + problems.length > 0 ? [...files, { kind: "remoteRoot" }] : files;
    }
    if (!("caseFile" in element)) return this.remoteChildren(element);
    const caseFile = element.caseFile;
    switch (element.kind) {
      case "caseFile":
      case "run":
        return (
          (await withStore(caseFile, (store) => {
            const runs = store.listRuns();
            const ids = new Set(runs.map((r) => r.id));
            const parent = element.kind === "run" ? element.id : undefined;
            const branches: CaseNode[] = runs
              .filter((r) => (parent ? r.parentRunId === parent : !r.parentRunId || !ids.has(r.parentRunId)))
              .map((r) => ({
                kind: "run",
                caseFile,
                id: r.id,
                status: r.status,
                workflow: r.workflow.name,
                ...(r.parentCheckpointId ? { parentCheckpointId: r.parentCheckpointId } : {}),
              }));
            if (!parent) return branches;
            const checkpoints: CaseNode[] = store
              .listCheckpoints(parent)
              .map((c) => ({ kind: "checkpoint", caseFile, id: c.id, runId: parent, superstep: c.superstep }));
            return [...branches, ...checkpoints];
          })) ?? []
        );
      case "checkpoint":
        return (
          (await withStore(caseFile, (store) => {
            const agentCalls = new Set(store.listAgentCalls(element.runId).map((c) => c.id));
            return store.listSteps(element.runId, element.superstep).map((s): CaseNode => ({
              kind: "step",
              caseFile,
              id: s.id,
              executor: s.executor,
              stepKind: s.kind,
              status: s.status,
              agent: agentCalls.has(s.id),
            }));
          })) ?? []
        );
      default:
        return [];
    }
  }

  private async remoteChildren(element: RemoteNode): Promise<RunsNode[]> {
    switch (element.kind) {
      case "remoteRoot": {
        const { stores, problems } = readStores();
        return [
          ...problems.map((message): RemoteNode => ({ kind: "remoteProblem", message })),
          ...stores.map((s): RemoteNode => ({ kind: "remoteStore", store: s.name })),
        ];
      }
      case "remoteStore":
        return REMOTE_STATUSES.map((status): RemoteNode => ({ kind: "remoteStatus", store: element.store, status }));
      case "remoteStatus": {
        const key = `${element.store}\0${element.status}`;
        let page = this.remotePages.get(key);
        if (!page) {
          page = await fetchPage(this.extension, element.store, element.status);
          // A refusal (store unreachable) is not kept: the next expand asks again.
          if (!page.some((n) => n.kind === "remoteProblem")) this.remotePages.set(key, page);
        }
        return page;
      }
      default:
        return [];
    }
  }

  /**
   * The "More" node's action (casefile.moreRemoteCases): the next page of that status takes its
   * place. Returns how many cases the status lists now.
   */
  async more(node: RemoteNode): Promise<number> {
    if (node.kind !== "remoteMore") return 0;
    const key = `${node.store}\0${node.status}`;
    const listed = (this.remotePages.get(key) ?? []).filter((n) => n.kind === "remoteCase");
    const next = await fetchPage(this.extension, node.store, node.status, node.after);
    const page = [...listed, ...next];
    this.remotePages.set(key, page);
    this.refresh();
    return page.filter((n) => n.kind === "remoteCase").length;
  }

  /** Forgets the remote pages listed (the refresh command, a change of casefile.stores): the next expand reads the store again. */
  forgetRemote(): void {
    this.remotePages.clear();
  }
}

/** Requests: runs waiting for a person, across case files; selecting one answers it. */
export class RequestsTree extends CaseTree {
  async getChildren(element?: CaseNode): Promise<CaseNode[]> {
    if (element) return [];
    return this.acrossCaseFiles((store, caseFile) =>
      store
        .listRuns()
        .filter((r) => r.status === "waiting")
        .flatMap((r) => store.latestCheckpoint(r.id)?.waiting ?? [])
        .map((w): CaseNode => ({
          kind: "request",
          caseFile,
          id: w.id,
          runId: w.runId,
          title: w.prompt.title,
          ...(w.prompt.detail ? { detail: w.prompt.detail } : {}),
        })),
    );
  }
}

/** Intents: open and failed intents across case files. */
export class IntentsTree extends CaseTree {
  async getChildren(element?: CaseNode): Promise<CaseNode[]> {
    if (element) return [];
    return this.acrossCaseFiles((store, caseFile) =>
      store
        .listIntents()
        .filter((i) => i.status === "open" || i.status === "failed" || i.status === "needs_replanning")
        .map((i): CaseNode => ({
          kind: "intent",
          caseFile,
          id: i.id,
          runId: i.runId,
          status: i.status,
          executor: i.executor,
          ...(i.error ? { error: `${i.error.code}: ${i.error.message}` } : {}),
        })),
    );
  }
}

/** Rules: the business rules in the workspace's case files (rule books), with confirm, edit, delete. */
export class RulesTree extends CaseTree {
  async getChildren(element?: CaseNode): Promise<CaseNode[]> {
    if (element) return [];
    return this.acrossCaseFiles((store, caseFile) =>
      store
        .listRules()
        .map((r): CaseNode => ({ kind: "rule", caseFile, id: r.id, statement: r.statement, confirmed: r.confirmedAt !== undefined })),
    );
  }
}

/** Each run status's word and icon in the Runs tree: a distinct icon per status, coloured like the Testing view's. */
const RUN_STATUS: Record<string, { label: string; icon: string; color?: string }> = {
  completed: { label: "completed", icon: "pass", color: "testing.iconPassed" },
  failed: { label: "failed", icon: "error", color: "testing.iconFailed" },
  waiting: { label: "waiting", icon: "person", color: "editorWarning.foreground" },
  running: { label: "running", icon: "sync~spin" },
  paused: { label: "paused", icon: "debug-pause" },
  stopped: { label: "stopped", icon: "debug-stop" },
  needs_replanning: { label: "needs replanning", icon: "warning", color: "editorWarning.foreground" },
  superseded: { label: "superseded", icon: "history" },
};

function treeItem(node: RunsNode): vscode.TreeItem {
  const { Collapsed, None } = vscode.TreeItemCollapsibleState;
  if (!("caseFile" in node)) return remoteTreeItem(node);
  const file = path.basename(node.caseFile.fsPath);
  let item: vscode.TreeItem;
  switch (node.kind) {
    case "caseFile": {
      item = new vscode.TreeItem(file, Collapsed);
      item.resourceUri = node.caseFile;
      const folder = path.dirname(vscode.workspace.asRelativePath(node.caseFile, false));
      if (folder !== ".") item.description = folder;
      item.tooltip = node.caseFile.fsPath;
      item.iconPath = new vscode.ThemeIcon("database");
      item.contextValue = "casefile.caseFile";
      item.command = { command: "casefile.openInspector", title: "Open Run Inspector", arguments: [node.caseFile] };
      return item;
    }
    case "run": {
      // Status first: the default sidebar cuts the end of a label, and the status is what a person scans for.
      const status = RUN_STATUS[node.status] ?? { label: node.status, icon: "circle-outline" };
      item = new vscode.TreeItem(`${status.label} · ${node.id}`, Collapsed);
      item.description = `${node.workflow}${node.parentCheckpointId ? ` · branch from ${node.parentCheckpointId}` : ""}`;
      item.tooltip = `${node.id}: ${node.workflow}, ${status.label}${node.parentCheckpointId ? `, a branch from checkpoint ${node.parentCheckpointId}` : ""}`;
      item.iconPath = new vscode.ThemeIcon(status.icon, status.color ? new vscode.ThemeColor(status.color) : undefined);
      item.contextValue = "casefile.run";
      item.command = { command: "casefile.openInspector", title: "Open Run Inspector", arguments: [node.caseFile, node.id] };
      return item;
    }
    case "checkpoint":
      // "#3", not "#3 run-f6538af9:3": the run is the parent row; the id is on hover.
      item = new vscode.TreeItem(`#${node.superstep}`, Collapsed);
      item.tooltip = `checkpoint ${node.id}`;
      item.iconPath = new vscode.ThemeIcon("debug-breakpoint-log");
      item.contextValue = "casefile.checkpoint";
      return item;
    case "step":
      item = new vscode.TreeItem(node.executor, None);
      item.description = `${node.stepKind} · ${node.status}`;
      item.tooltip = node.id;
      item.iconPath = new vscode.ThemeIcon(node.status === "failed" ? "error" : node.status === "waiting" ? "watch" : "pass");
      item.contextValue = node.agent ? "casefile.agentStep" : "casefile.step";
      return item;
    case "request":
      item = new vscode.TreeItem(node.title, None);
      item.description = `${node.runId} · ${file}`;
      item.tooltip = node.detail ?? node.title;
      item.iconPath = new vscode.ThemeIcon("person");
      item.contextValue = "casefile.request";
      item.command = { command: "casefile.answerRequest", title: "Answer Request", arguments: [node] };
      return item;
    case "intent":
      item = new vscode.TreeItem(node.id, None);
      item.description = `${node.status} · ${node.executor} · ${file}`;
      item.tooltip = node.error ?? node.id;
      item.iconPath = new vscode.ThemeIcon(node.status === "open" ? "circle-large-outline" : "error");
      item.contextValue = "casefile.intent";
      item.command = { command: "casefile.openInspector", title: "Open Run Inspector", arguments: [node.caseFile, node.runId] };
      return item;
    case "rule":
      item = new vscode.TreeItem(node.statement, None);
      item.description = `${node.confirmed ? "confirmed" : "unconfirmed"} · ${file}`;
      item.tooltip = node.id;
      item.iconPath = new vscode.ThemeIcon(node.confirmed ? "verified" : "unverified");
      item.contextValue = node.confirmed ? "casefile.rule" : "casefile.rule.unconfirmed";
      return item;
    default: {
      const never: never = node;
      throw new Error(`unhandled node ${JSON.stringify(never)}`);
    }
  }
}

function remoteTreeItem(node: RemoteNode): vscode.TreeItem {
  const { Collapsed, None } = vscode.TreeItemCollapsibleState;
  let item: vscode.TreeItem;
  switch (node.kind) {
    case "remoteRoot":
      item = new vscode.TreeItem("Remote cases", Collapsed);
      item.iconPath = new vscode.ThemeIcon("cloud");
      item.tooltip = "The stores named in the casefile.stores setting";
      item.contextValue = "casefile.remoteRoot";
      return item;
    case "remoteStore":
      item = new vscode.TreeItem(node.store, Collapsed);
      item.iconPath = new vscode.ThemeIcon("server");
      item.contextValue = "casefile.remoteStore";
      return item;
    case "remoteStatus": {
      const status = RUN_STATUS[node.status] ?? { label: node.status, icon: "circle-outline" };
      item = new vscode.TreeItem(status.label, Collapsed);
      item.iconPath = new vscode.ThemeIcon(status.icon, status.color ? new vscode.ThemeColor(status.color) : undefined);
      item.contextValue = "casefile.remoteStatus";
      return item;
    }
    case "remoteCase":
      item = new vscode.TreeItem(node.caseId, None);
      item.description = node.createdAt;
      item.tooltip = `${node.caseId} in ${node.store}: ${node.status}. Open it read-only, or pull it into the workspace to fork and replay.`;
      item.iconPath = new vscode.ThemeIcon("file");
      item.contextValue = "casefile.remoteCase";
      item.command = { command: "casefile.openRemoteCase", title: "Open Read-Only", arguments: [node] };
      return item;
    case "remoteMore":
      item = new vscode.TreeItem("More…", None);
      item.iconPath = new vscode.ThemeIcon("ellipsis");
      item.contextValue = "casefile.remoteMore";
      item.command = { command: "casefile.moreRemoteCases", title: "More", arguments: [node] };
      return item;
    case "remoteProblem":
      item = new vscode.TreeItem(node.message, None);
      item.iconPath = new vscode.ThemeIcon("warning");
      item.tooltip = node.message;
      item.contextValue = "casefile.remoteProblem";
      return item;
    default: {
      const never: never = node;
      throw new Error(`unhandled node ${JSON.stringify(never)}`);
    }
  }
}
