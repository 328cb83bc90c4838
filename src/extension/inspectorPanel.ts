import * as path from "node:path";
import * as vscode from "vscode";
import { webviewHtml } from "./webviewHtml";
import type { ContextView, HostToInspector, InspectorToHost, InspectorViewModel, SuperstepDetailView } from "../protocol/webview";
import { parseInspectorMessage } from "../protocol/webview";

/**
 * The Run Inspector: one webview panel per case file. The panel owns the webview's lifetime and
 * its message boundary; what an action does is decided by the `InspectorActions` it is given.
 *
 * Protocol (src/protocol/webview.ts): the webview says `ready` once its script runs; the host
 * posts nothing before that (a message posted earlier would be lost), then sends `load` with the
 * view model. A hidden panel's page is discarded (retainContextWhenHidden is off: it costs memory
 * per panel); when shown again it says `ready` again and gets the latest view model; the webview
 * keeps the person's selection with setState. Every message from the webview is parsed; a malformed one is dropped and logged and
 * the panel carries on.
 */

export interface InspectorActions {
  /** Builds the view model for a run of the case file (the latest run when runId is absent). */
  load(caseFile: vscode.Uri, runId: string | undefined): Promise<InspectorViewModel>;
  /** A superstep's details (steps' context, decision, intents; the state), when it is selected. */
  loadSuperstep(caseFile: vscode.Uri, runId: string, superstep: number): Promise<SuperstepDetailView>;
  /** Carries out an action the person asked for; the returned sentence is shown in the panel. */
  perform(caseFile: vscode.Uri, action: InspectorAction): Promise<string>;
  /** Continue, Step or Stop for the running workflow; false when none runs. */
  control(action: "continue" | "step" | "stop"): boolean;
}

/** The webview's requests that act on runs (as opposed to reading the case file). */
export type InspectorAction = Exclude<InspectorToHost, { type: "ready" | "selectRun" | "loadSuperstep" | "loadContext" | "control" }>;

type RunState = Extract<HostToInspector, { type: "runState" }>;

export class InspectorPanel implements vscode.Disposable {
  static readonly viewType = "casefile.runInspector";
  private static readonly open = new Map<string, InspectorPanel>();

  private ready = false;
  /** Messages waiting for `ready`; only the newest `load` matters, so it replaces older ones. */
  private queue: HostToInspector[] = [];
  /** The last view model sent or queued, for a page that loads again after being hidden. */
  private latest: Extract<HostToInspector, { type: "load" }> | undefined;
  private readonly disposables: vscode.Disposable[] = [];
  private runId: string | undefined;
  private disposed = false;
  /** Messages dropped at the boundary: counted for the tests and the log. */
  dropped = 0;

  /** Opens (or reveals) the inspector for a case file. Called by the openInspector command. */
  static async show(
    extensionUri: vscode.Uri,
    log: vscode.LogOutputChannel,
    actions: InspectorActions,
    caseFile: vscode.Uri,
    runId?: string,
  ): Promise<InspectorPanel> {
    const existing = InspectorPanel.open.get(caseFile.toString());
    if (existing) {
      existing.panel.reveal();
      if (runId !== undefined && runId !== existing.runId) await existing.reload(runId);
      return existing;
    }
    const media = vscode.Uri.joinPath(extensionUri, "media");
    const panel = vscode.window.createWebviewPanel(
      InspectorPanel.viewType,
      `Run Inspector: ${path.basename(caseFile.fsPath)}`,
      vscode.ViewColumn.Active,
      { enableScripts: true, localResourceRoots: [media], retainContextWhenHidden: false },
    );
    const inspector = new InspectorPanel(panel, media, log, actions, caseFile);
    InspectorPanel.open.set(caseFile.toString(), inspector);
    await inspector.reload(runId);
    if (InspectorPanel.runState.state !== "idle") inspector.post(InspectorPanel.runState);
    return inspector;
  }

  private static runState: RunState = { type: "runState", state: "idle" };

  /** Called by the run sessions as a run starts, pauses, goes on and ends: every open panel shows it. */
  static showRunState(state: RunState): void {
    InspectorPanel.runState = state;
    for (const panel of InspectorPanel.open.values()) panel.post(state);
  }

  /** The open inspector for a case file, if any: used by the e2e suite and by refresh. */
  static get(caseFile: vscode.Uri): InspectorPanel | undefined {
    return InspectorPanel.open.get(caseFile.toString());
  }

  private constructor(
    readonly panel: vscode.WebviewPanel,
    private readonly media: vscode.Uri,
    private readonly log: vscode.LogOutputChannel,
    private readonly actions: InspectorActions,
    readonly caseFile: vscode.Uri,
  ) {
    panel.iconPath = vscode.Uri.joinPath(media, "casefile.svg");
    panel.webview.html = webviewHtml(panel.webview, this.media, {
      title: "Run Inspector",
      script: "inspector.js",
      stylesheet: "inspector.css",
      loading: "Loading the case file…",
    });
    // A running workflow appends to the case file's journal; compaction rewrites the file. Either
    // way the panel shows the new state shortly after, keeping the person's selection.
    const watcher = vscode.workspace.createFileSystemWatcher(
      new vscode.RelativePattern(vscode.Uri.joinPath(caseFile, ".."), `${path.basename(caseFile.fsPath)}*`),
    );
    this.disposables.push(
      panel.webview.onDidReceiveMessage((data: unknown) => void this.receive(data)),
      panel.onDidDispose(() => this.dispose()),
      // Hidden, the page is discarded: hold messages until the next page says `ready`.
      panel.onDidChangeViewState(() => {
        if (!panel.visible) this.ready = false;
      }),
      watcher,
      watcher.onDidChange(() => this.reloadSoon()),
      watcher.onDidCreate(() => this.reloadSoon()),
      { dispose: () => clearTimeout(this.reloadTimer) },
    );
  }

  private reloadTimer: ReturnType<typeof setTimeout> | undefined;

  /** Called for every change to the case file or its journal: one reload per burst of writes. */
  private reloadSoon(): void {
    clearTimeout(this.reloadTimer);
    this.reloadTimer = setTimeout(() => void this.reload(this.runId), 300);
  }

  /** Rebuilds the view model from the case file and sends it (after `ready`). */
  async reload(runId?: string): Promise<void> {
    try {
      const model = await this.actions.load(this.caseFile, runId);
      this.runId = model.run.id;
      this.post({ type: "load", model });
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      this.log.error(`Run Inspector: cannot load ${this.caseFile.fsPath}: ${message}`);
      this.post({ type: "notice", level: "error", message: `Cannot show this case file: ${message}` });
    }
  }

  private post(message: HostToInspector): void {
    if (message.type === "load") this.latest = message;
    if (!this.ready) {
      if (message.type === "load") this.queue = this.queue.filter((m) => m.type !== "load");
      this.queue.push(message);
      return;
    }
    void this.panel.webview.postMessage(message);
  }

  /** Called by VS Code for every message the webview posts. */
  private async receive(data: unknown): Promise<void> {
    const parsed = parseInspectorMessage(data);
    if (!parsed.ok) {
      this.dropped++;
      this.log.warn(`Run Inspector: dropped a malformed message from the webview: ${parsed.error}`);
      return;
    }
    const message = parsed.message;
    switch (message.type) {
      case "ready": {
        // Said once per page load: the first time, and again each time the panel is shown after
        // being hidden (its page is not retained). Each new page gets the latest view model.
        this.ready = true;
        const queued = this.queue.filter((m) => m.type !== "load");
        this.queue = [];
        if (this.latest) void this.panel.webview.postMessage(this.latest);
        // A page loaded again (after being hidden) gets the run state too, once.
        if (!queued.some((m) => m.type === "runState") && InspectorPanel.runState.state !== "idle") queued.push(InspectorPanel.runState);
        for (const m of queued) void this.panel.webview.postMessage(m);
        return;
      }
      case "selectRun":
        await this.reload(message.runId);
        return;
      case "loadSuperstep": {
        const { runId, superstep } = message;
        try {
          const detail = await this.actions.loadSuperstep(this.caseFile, runId, superstep);
          this.post({ type: "superstep", detail });
        } catch (err) {
          const text = err instanceof Error ? err.message : String(err);
          this.log.error(`Run Inspector: cannot read superstep ${superstep} of ${runId}: ${text}`);
          const absent = { absent: `This superstep could not be read from the case file: ${text}` };
          this.post({ type: "superstep", detail: { runId, superstep, steps: [], state: absent } });
        }
        return;
      }
      case "loadContext": {
        const { requestId, runId, superstep, agentCallId } = message;
        this.post({ type: "context", requestId, context: await this.otherContext(runId, superstep, agentCallId) });
        return;
      }
      case "control":
        if (!this.actions.control(message.action)) this.post({ type: "notice", level: "warning", message: "No workflow is running." });
        return;
      case "resumeFrom":
      case "debugFromHere":
      case "forkWithEditedState":
      case "replayStep":
      case "exportStepAsEval": {
        try {
          const outcome = await this.actions.perform(this.caseFile, message);
          this.post({ type: "notice", level: "info", message: outcome });
        } catch (err) {
          const text = err instanceof Error ? err.message : String(err);
          this.post({ type: "notice", level: "warning", message: text });
        }
        return;
      }
      default:
        assertNever(message);
    }
  }

  /**
   * Another agent step's context, for the Context tab's diff: read through the superstep's
   * details, so it comes with the same per-message token counts as the step shown.
   */
  private async otherContext(runId: string, superstep: number, agentCallId: string): Promise<ContextView | { absent: string }> {
    try {
      const detail = await this.actions.loadSuperstep(this.caseFile, runId, superstep);
      for (const step of detail.steps) if (!("absent" in step.context) && step.context.agentCallId === agentCallId) return step.context;
      return { absent: `No model call ${agentCallId} was recorded in superstep ${superstep} of ${runId}.` };
    } catch (err) {
      const text = err instanceof Error ? err.message : String(err);
      this.log.error(`Run Inspector: cannot read the context of ${agentCallId} in ${runId}: ${text}`);
      return { absent: `That context could not be read from the case file: ${text}` };
    }
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    InspectorPanel.open.delete(this.caseFile.toString());
    for (const d of this.disposables.splice(0)) d.dispose();
    this.panel.dispose();
  }
}

function assertNever(value: never): never {
  throw new Error(`unhandled message ${JSON.stringify(value)}`);
}
