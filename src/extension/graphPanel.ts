import * as path from "node:path";
import * as vscode from "vscode";
import { WebviewChannel } from "./webviewChannel";
import type { Described } from "../protocol/describe";
import type { GraphLive, GraphToHost, HostToGraph } from "../protocol/graph";
import { graphViewModel, parseGraphMessage } from "../protocol/graph";

/**
 * The Workflow Graph: one webview panel per workflow file. Same boundary as the Run Inspector, the
 * `WebviewChannel`'s: CSP default-src 'none' with a nonce, local resources from media/ only, every
 * message parsed (src/protocol/graph.ts), nothing posted before the page says `ready`.
 *
 * The graph comes from the describe child process (loading a workflow runs its code: only in a
 * trusted workspace). What is running comes from the runner while a run of the workflow goes in
 * this window: the superstep it is executing, or where step mode waits (RunSessions.liveFor, from
 * the runner's events; `refreshLive` is called as they arrive). Otherwise it is read from the
 * workflow's case file: the executors pending at the latest checkpoint of its newest run (what
 * runs next on resume); the case file is watched, so a run in another process (the CLI) moves it too.
 */

export interface GraphSources {
  describe(workflow: vscode.Uri): Promise<Described>;
  /** The case file the workflow's runs are written to. */
  caseFileFor(workflow: vscode.Uri): string;
  /** What a run of the workflow going now highlights, from the runner's events; undefined when none goes. */
  runnerLive?(workflow: vscode.Uri, caseFile: string): GraphLive | undefined;
}

export class GraphPanel implements vscode.Disposable {
  static readonly viewType = "casefile.workflowGraph";
  private static readonly open = new Map<string, GraphPanel>();

  private readonly channel: WebviewChannel<GraphToHost, HostToGraph>;
  /** The last graph (with what runs now) or notice: what a page that says `ready` is sent. */
  private latest: HostToGraph | undefined;
  private reloadTimer: ReturnType<typeof setTimeout> | undefined;

  static async show(
    extensionUri: vscode.Uri,
    log: vscode.LogOutputChannel,
    sources: GraphSources,
    workflow: vscode.Uri,
  ): Promise<GraphPanel> {
    const existing = GraphPanel.open.get(workflow.toString());
    if (existing) {
      existing.panel.reveal();
      await existing.reload();
      return existing;
    }
    const graph = new GraphPanel(vscode.Uri.joinPath(extensionUri, "media"), log, sources, workflow);
    GraphPanel.open.set(workflow.toString(), graph);
    await graph.reload();
    return graph;
  }

  static get(workflow: vscode.Uri): GraphPanel | undefined {
    return GraphPanel.open.get(workflow.toString());
  }

  /** Called as a run's events arrive and when it ends: every open graph shows what runs now. */
  static refreshLive(): void {
    for (const graph of GraphPanel.open.values()) void graph.setLive();
  }

  /** What the panel highlights now (sent, or waiting for the page): read by the e2e suite. */
  get live(): GraphLive | null | undefined {
    return this.latest?.type === "load" ? this.latest.model.live : undefined;
  }

  get panel(): vscode.WebviewPanel {
    return this.channel.panel;
  }

  /** Messages from the page dropped at the boundary. */
  get dropped(): number {
    return this.channel.dropped;
  }

  private constructor(
    media: vscode.Uri,
    private readonly log: vscode.LogOutputChannel,
    private readonly sources: GraphSources,
    readonly workflow: vscode.Uri,
  ) {
    this.channel = new WebviewChannel<GraphToHost, HostToGraph>({
      viewType: GraphPanel.viewType,
      title: `Graph: ${path.basename(workflow.fsPath)}`,
      column: vscode.ViewColumn.Beside,
      media,
      page: { title: "Workflow Graph", script: "graph.js", stylesheet: "graph.css", loading: "Loading the workflow…" },
      log,
      name: "Workflow Graph",
      parse: parseGraphMessage,
      receive: async (message) => void (await revealExecutor(workflow, message.executor)),
      // A page gets the latest graph, its highlight up to date; nothing posted before waits for it.
      greeting: () => (this.latest ? [this.latest] : []),
      holds: () => false,
    });
    this.channel.onDispose(() => GraphPanel.open.delete(workflow.toString()));
    const caseFile = sources.caseFileFor(workflow);
    const caseWatcher = vscode.workspace.createFileSystemWatcher(
      new vscode.RelativePattern(vscode.Uri.file(path.dirname(caseFile)), `${path.basename(caseFile)}*`),
    );
    this.channel.register(
      caseWatcher,
      caseWatcher.onDidChange(() => this.liveSoon()),
      caseWatcher.onDidCreate(() => this.liveSoon()),
      vscode.workspace.onDidSaveTextDocument((doc) => {
        if (doc.uri.toString() === workflow.toString()) void this.reload();
      }),
      { dispose: () => clearTimeout(this.reloadTimer) },
    );
  }

  /** Describes the workflow again and sends the graph with what is running. */
  async reload(): Promise<void> {
    const described = await this.sources.describe(this.workflow);
    if (!described.ok) {
      const text = described.problems.map((p) => p.message).join("\n");
      this.log.warn(`Workflow Graph: ${this.workflow.fsPath} does not build: ${text}`);
      this.post({ type: "notice", level: "error", message: `This workflow does not build (see the Problems panel): ${text}` });
      return;
    }
    const file = vscode.workspace.asRelativePath(this.workflow);
    const live = await this.readLive();
    this.post({ type: "load", model: graphViewModel({ name: described.name, version: described.version, file }, described.graph, live) });
  }

  /** Moves the highlight: to `live` when given, else to what runs now (the runner's events, else the case file). */
  async setLive(live?: GraphLive | null): Promise<void> {
    this.post({ type: "live", live: live === undefined ? await this.readLive() : live });
  }

  private liveSoon(): void {
    clearTimeout(this.reloadTimer);
    this.reloadTimer = setTimeout(() => void this.setLive(), 300);
  }

  /**
   * What runs now: the runner's superstep while a run of this workflow goes, else the executors
   * pending at the latest checkpoint of the newest run in the workflow's case file.
   */
  private async readLive(): Promise<GraphLive | null> {
    const caseFile = this.sources.caseFileFor(this.workflow);
    const running = this.sources.runnerLive?.(this.workflow, caseFile);
    if (running) return running;
    try {
      await vscode.workspace.fs.stat(vscode.Uri.file(caseFile));
    } catch {
      return null;
    }
    try {
      const { openCaseFile } = await import("../casefile/index.js");
      const store = await openCaseFile(caseFile, { readOnly: true });
      try {
        const runs = store.listRuns().sort((a, b) => a.updatedAt.localeCompare(b.updatedAt));
        const run = runs[runs.length - 1];
        const cp = run ? store.latestCheckpoint(run.id) : undefined;
        if (!run || !cp) return null;
        return { source: "checkpoint", runId: run.id, superstep: cp.superstep, executors: [...new Set(cp.pending.map((m) => m.to))] };
      } finally {
        store.close();
      }
    } catch (err) {
      this.log.warn(`Workflow Graph: cannot read ${caseFile}: ${err instanceof Error ? err.message : String(err)}`);
      return null;
    }
  }

  private post(message: HostToGraph): void {
    if (message.type !== "live") this.latest = message;
    else if (this.latest?.type === "load") this.latest = { type: "load", model: { ...this.latest.model, live: message.live } };
    this.channel.post(message);
  }

  dispose(): void {
    this.channel.dispose();
  }
}

/**
 * Opens the workflow file with the executor's definition selected: the first `name:` (or quoted
 * `"name":`) property after `executors`, else the first mention of the name.
 */
export async function revealExecutor(workflow: vscode.Uri, executor: string): Promise<boolean> {
  const doc = await vscode.workspace.openTextDocument(workflow);
  const offset = findExecutorOffset(doc.getText(), executor);
  const editor = await vscode.window.showTextDocument(doc, { viewColumn: vscode.ViewColumn.One, preserveFocus: false });
  if (offset === undefined) return false;
  const start = doc.positionAt(offset);
  const range = new vscode.Range(start, start.translate(0, executor.length));
  editor.selection = new vscode.Selection(range.start, range.end);
  editor.revealRange(range, vscode.TextEditorRevealType.InCenterIfOutsideViewport);
  return true;
}

export function findExecutorOffset(text: string, executor: string): number | undefined {
  const name = executor.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const from = Math.max(0, text.search(/\bexecutors\s*:/));
  const prop = new RegExp(`(^|[\\s{,])(["']?)(${name})\\2\\s*:`, "m").exec(text.slice(from));
  if (prop) return from + prop.index + prop[1]!.length + prop[2]!.length;
  const any = new RegExp(`\\b${name}\\b`).exec(text);
  return any?.index;
}
