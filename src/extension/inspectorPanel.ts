import * as path from "node:path";
import * as vscode from "vscode";
import { WebviewChannel } from "./webviewChannel";
import type { ContextView, HostToInspector, InspectorToHost, InspectorViewModel, SuperstepDetailView } from "../protocol/webview";
import { parseInspectorMessage } from "../protocol/webview";
import type { Json } from "../engine/records";
import { MANAGE_TRUST_COMMAND } from "./trust";

/**
 * The Run Inspector: one webview panel per case file. Its page's lifetime and message boundary
 * (ready gating, the locked-down page, parsing, disposal) are the `WebviewChannel`'s; this class
 * answers the page's requests and keeps the view model fresh as the case file changes. What an
 * action does is decided by the `InspectorActions` it is given.
 *
 * Protocol (src/protocol/webview.ts): once the page says `ready` it gets `load` with the view
 * model; the page asks for each superstep's details and for contexts to diff with requests whose
 * answers carry their requestId. A page loaded again (after being hidden) gets the latest view
 * model and keeps the person's selection with setState.
 */

export interface InspectorActions {
  /** Builds the view model for a run of the case file (the latest run when runId is absent). */
  load(caseFile: vscode.Uri, runId: string | undefined): Promise<InspectorViewModel>;
  /**
   * The view model a run opens with, read without reading the whole run (its last supersteps,
   * marked `partial`), or undefined when only the whole one will do. Asked for before `load`
   * whenever the panel shows another run.
   */
  loadOpening(caseFile: vscode.Uri, runId: string | undefined): Promise<InspectorViewModel | undefined>;
  /** A superstep's details (steps' context, decision, intents; the state), when it is selected. */
  loadSuperstep(caseFile: vscode.Uri, runId: string, superstep: number): Promise<SuperstepDetailView>;
  /** One agent step's context (another step's, for the Context tab's diff). */
  loadContext(caseFile: vscode.Uri, runId: string, superstep: number, agentCallId: string): Promise<ContextView | { absent: string }>;
  /** Called once the panel is closed: what was kept open to answer its reads can go. */
  release(caseFile: vscode.Uri): void;
  /** Carries out an action the person asked for; the returned sentence is shown in the panel. */
  perform(caseFile: vscode.Uri, action: InspectorAction): Promise<string>;
  /**
   * A person's answer to a waiting request, from the request's buttons: the run goes on with it,
   * or the refusal (the answer schema's, Restricted Mode's) is returned to show beside the request.
   */
  answer(caseFile: vscode.Uri, requestId: string, answer: Json): Promise<{ ok: true; message: string } | { ok: false; reason: string }>;
  /** Continue, Step or Stop for the running workflow; false when none runs. */
  control(action: "continue" | "step" | "stop"): boolean;
}

/** The webview's requests that act on runs (as opposed to reading the case file). */
export type InspectorAction = Exclude<
  InspectorToHost,
  { type: "ready" | "selectRun" | "loadSuperstep" | "loadContext" | "control" | "answerRequest" | "manageTrust" | "showGraph" | "painted" }
>;

type RunState = Extract<HostToInspector, { type: "runState" }>;

export class InspectorPanel implements vscode.Disposable {
  static readonly viewType = "casefile.runInspector";
  private static readonly open = new Map<string, InspectorPanel>();

  private readonly channel: WebviewChannel<InspectorToHost, HostToInspector>;
  /** The last view model sent or waiting for the page: a page that loads again (after being hidden) gets it. */
  private latest: Extract<HostToInspector, { type: "load" }> | undefined;
  private runId: string | undefined;
  private reloadTimer: ReturnType<typeof setTimeout> | undefined;
  /**
   * When the panel was made and when its first view model was asked for and built (epoch ms,
   * fractional): read by the e2e suite, which times a cold open from the click to the painted page.
   */
  readonly marks: { createdAt: number; firstLoad?: { startedAt: number; builtAt: number } } = { createdAt: epochMs() };
  /** When the panel was asked for (performance.now()), until its first paint is logged. */
  private openedAt: number | undefined;
  /** The last run the page said it painted, and when (performance.now()): read by the e2e suite for timings. */
  painted: { runId: string; at: number } | undefined;

  /** Opens (or reveals) the inspector for a case file. Called by the openInspector command. */
  static async show(
    extensionUri: vscode.Uri,
    log: vscode.LogOutputChannel,
    actions: InspectorActions,
    caseFile: vscode.Uri,
    runId?: string,
    step?: { superstep: number; executor: string },
  ): Promise<InspectorPanel> {
    const existing = InspectorPanel.open.get(caseFile.toString());
    const inspector = existing ?? new InspectorPanel(vscode.Uri.joinPath(extensionUri, "media"), log, actions, caseFile);
    if (!existing) inspector.openedAt = performance.now();
    if (existing) {
      existing.panel.reveal();
      if (runId !== undefined && runId !== existing.runId) await existing.reload(runId);
    } else {
      InspectorPanel.open.set(caseFile.toString(), inspector);
      await inspector.reload(runId);
    }
    // After the view model: the page selects the step once it shows that run (held until the page is ready).
    if (step && inspector.runId !== undefined) inspector.post({ type: "reveal", runId: inspector.runId, ...step });
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

  get panel(): vscode.WebviewPanel {
    return this.channel.panel;
  }

  /** Messages from the page dropped at the boundary: read by the e2e suite. */
  get dropped(): number {
    return this.channel.dropped;
  }

  private constructor(
    media: vscode.Uri,
    private readonly log: vscode.LogOutputChannel,
    private readonly actions: InspectorActions,
    readonly caseFile: vscode.Uri,
  ) {
    this.channel = new WebviewChannel<InspectorToHost, HostToInspector>({
      viewType: InspectorPanel.viewType,
      title: `Run Inspector: ${path.basename(caseFile.fsPath)}`,
      column: vscode.ViewColumn.Active,
      media,
      page: { title: "Run Inspector", script: "inspector.js", stylesheet: "inspector.css", loading: "Loading the case file…" },
      log,
      name: "Run Inspector",
      parse: parseInspectorMessage,
      receive: (message) => this.receive(message),
      // Each new page gets the latest view model and, while a workflow runs, where it is.
      greeting: () => [
        ...(this.latest ? [this.latest] : []),
        ...(InspectorPanel.runState.state !== "idle" ? [InspectorPanel.runState] : []),
      ],
      // Notices and answers wait for the page; the greeting covers view models and the run state.
      holds: (message) => message.type !== "load" && message.type !== "runState",
    });
    this.channel.onDispose(() => {
      InspectorPanel.open.delete(caseFile.toString());
      this.actions.release(caseFile); // the case file's kept store is closed with its inspector
    });
    // A running workflow appends to the case file's journal; compaction rewrites the file. Either
    // way the panel shows the new state shortly after, keeping the person's selection.
    const watcher = vscode.workspace.createFileSystemWatcher(
      new vscode.RelativePattern(vscode.Uri.joinPath(caseFile, ".."), `${path.basename(caseFile.fsPath)}*`),
    );
    this.channel.register(
      // Trust granted: the view model's canRun changes, so the Restricted Mode banner and the disabled actions go.
      vscode.workspace.onDidGrantWorkspaceTrust(() => void this.reload(this.runId)),
      watcher,
      watcher.onDidChange(() => this.reloadSoon()),
      watcher.onDidCreate(() => this.reloadSoon()),
      { dispose: () => clearTimeout(this.reloadTimer) },
    );
  }

  /** Called for every change to the case file or its journal: one reload per burst of writes. */
  private reloadSoon(): void {
    clearTimeout(this.reloadTimer);
    this.reloadTimer = setTimeout(() => void this.reload(this.runId), 300);
  }

  /**
   * Rebuilds the view model from the case file and sends it (after `ready`). When the panel is to
   * show another run than it shows (its first load, the branch picker, a run just started), the
   * run's opening part goes first, so the page paints what it opens on before the whole run is
   * read; the whole view model follows unless that part was the whole run.
   */
  async reload(runId?: string): Promise<void> {
    try {
      const startedAt = epochMs();
      const another = this.runId === undefined || (runId !== undefined && runId !== this.runId);
      const opening = another ? await this.actions.loadOpening(this.caseFile, runId) : undefined;
      if (opening) this.show(opening, startedAt);
      if (opening && !opening.partial) return;
      // One turn of the event loop first, so the opening part leaves for the page before the whole
      // run is read (which holds the extension host's thread for as long as it takes).
      if (opening) await new Promise<void>((resolve) => setTimeout(resolve, 0));
      // The run the opening part showed, so that a run made meanwhile does not replace it halfway.
      this.show(await this.actions.load(this.caseFile, opening?.run.id ?? runId), startedAt);
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      this.log.error(`Run Inspector: cannot load ${this.caseFile.fsPath}: ${message}`);
      this.post({ type: "notice", level: "error", message: `Cannot show this case file: ${message}` });
    }
  }

  private show(model: InspectorViewModel, startedAt: number): void {
    this.marks.firstLoad ??= { startedAt, builtAt: epochMs() };
    this.runId = model.run.id;
    this.post({ type: "load", model });
  }

  /**
   * Called when a run of this case file ends that was started, resumed or forked from the editor
   * (runCommands.ts): the panel switches to that run and says so, instead of staying on the old one.
   */
  async follow(runId: string, status: string): Promise<void> {
    const before = this.runId;
    await this.reload(runId);
    if (before !== undefined && before !== runId)
      this.post({
        type: "notice",
        level: "info",
        message: `Now showing run ${runId} (${status}), the run just started; it was ${before}.`,
      });
  }

  /** The run the panel shows: read by the e2e suite. */
  get shownRunId(): string | undefined {
    return this.runId;
  }

  private post(message: HostToInspector): void {
    if (message.type === "load") this.latest = message;
    this.channel.post(message);
  }

  /** Called by the channel for every parsed message from the page but `ready`. */
  private async receive(message: Exclude<InspectorToHost, { type: "ready" }>): Promise<void> {
    switch (message.type) {
      case "selectRun":
        await this.reload(message.runId);
        return;
      case "loadSuperstep": {
        const { requestId, runId, superstep } = message;
        try {
          const detail = await this.actions.loadSuperstep(this.caseFile, runId, superstep);
          this.post({ type: "superstep", requestId, detail });
        } catch (err) {
          const text = err instanceof Error ? err.message : String(err);
          this.log.error(`Run Inspector: cannot read superstep ${superstep} of ${runId}: ${text}`);
          const absent = { absent: `This superstep could not be read from the case file: ${text}` };
          this.post({ type: "superstep", requestId, detail: { runId, superstep, steps: [], state: absent, requests: [] } });
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
      case "painted":
        this.painted = { runId: message.runId, at: performance.now() };
        if (this.openedAt !== undefined) {
          this.log.info(
            `Run Inspector: ${message.runId} painted ${(this.painted.at - this.openedAt).toFixed(0)} ms after it was asked for`,
          );
          this.openedAt = undefined;
        }
        return;
      case "manageTrust":
        await vscode.commands.executeCommand(MANAGE_TRUST_COMMAND);
        return;
      case "showGraph": {
        const recorded = this.latest?.model.run.workflow.path;
        if (!recorded) return;
        const workflow = vscode.Uri.file(path.resolve(path.dirname(this.caseFile.fsPath), recorded));
        const r = (await vscode.commands.executeCommand("casefile.showGraph", workflow)) as { ok: boolean; reason?: string } | undefined;
        if (r && !r.ok && r.reason) this.post({ type: "notice", level: "warning", message: r.reason });
        return;
      }
      case "answerRequest": {
        const { requestId, request, answer } = message;
        let outcome: Extract<HostToInspector, { type: "answered" }>["outcome"];
        try {
          outcome = await this.actions.answer(this.caseFile, request, answer);
        } catch (err) {
          outcome = { ok: false, reason: err instanceof Error ? err.message : String(err) };
        }
        this.post({ type: "answered", requestId, outcome });
        return;
      }
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

  /** Another agent step's context, for the Context tab's diff. */
  private async otherContext(runId: string, superstep: number, agentCallId: string): Promise<ContextView | { absent: string }> {
    try {
      return await this.actions.loadContext(this.caseFile, runId, superstep, agentCallId);
    } catch (err) {
      const text = err instanceof Error ? err.message : String(err);
      this.log.error(`Run Inspector: cannot read the context of ${agentCallId} in ${runId}: ${text}`);
      return { absent: `That context could not be read from the case file: ${text}` };
    }
  }

  dispose(): void {
    this.channel.dispose();
  }
}

function assertNever(value: never): never {
  throw new Error(`unhandled message ${JSON.stringify(value)}`);
}

function epochMs(): number {
  return performance.timeOrigin + performance.now();
}
