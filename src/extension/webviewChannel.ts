import * as vscode from "vscode";
import { webviewHtml } from "./webviewHtml";

/**
 * One webview panel's lifetime and message boundary, shared by the Run Inspector and the Workflow
 * Graph (vscode-pull-request-github's `WebviewBase` is the model): the locked-down page
 * (webviewHtml.ts), every message from the page parsed (a malformed one dropped, counted and
 * logged), nothing posted before the page says `ready`, and disposal of everything registered.
 *
 * A hidden panel's page is discarded (retainContextWhenHidden is off: it costs memory per panel);
 * shown again, the new page says `ready` again. What a page gets then is the panel's to say
 * (`greeting`), and so is what happens to a message posted while no page listens (`holds`): the
 * inspector holds its notices and answers and greets with the latest view model and run state;
 * the graph holds nothing and greets with the latest graph.
 */
export interface ChannelOptions<In extends { type: string }, Out> {
  viewType: string;
  /** The panel's tab title. */
  title: string;
  column: vscode.ViewColumn;
  /** The extension's media folder: the page's only local resource root. */
  media: vscode.Uri;
  page: { title: string; script: string; stylesheet: string; loading: string };
  log: vscode.LogOutputChannel;
  /** The panel's name in the log ("Run Inspector"). */
  name: string;
  parse(data: unknown): { ok: true; message: In } | { ok: false; error: string };
  /** Called for every parsed message from the page other than `ready`. */
  receive(message: Exclude<In, { type: "ready" }>): Promise<void> | void;
  /** What a page that has just said `ready` is sent first, in order (the latest view model). */
  greeting(): Out[];
  /** Whether a message posted while no page listens waits for the next one (else the greeting covers it). */
  holds(message: Out): boolean;
}

export class WebviewChannel<In extends { type: string }, Out> implements vscode.Disposable {
  readonly panel: vscode.WebviewPanel;
  /** Messages from the page dropped at the boundary: counted for the tests and the log. */
  dropped = 0;
  private ready = false;
  private held: Out[] = [];
  private readonly disposables: vscode.Disposable[] = [];
  private disposed = false;
  private readonly disposeListeners: (() => void)[] = [];

  constructor(private readonly opts: ChannelOptions<In, Out>) {
    this.panel = vscode.window.createWebviewPanel(opts.viewType, opts.title, opts.column, {
      enableScripts: true,
      localResourceRoots: [opts.media],
      retainContextWhenHidden: false,
    });
    this.panel.iconPath = vscode.Uri.joinPath(opts.media, "casefile.svg");
    this.panel.webview.html = webviewHtml(this.panel.webview, opts.media, opts.page);
    this.disposables.push(
      this.panel.webview.onDidReceiveMessage((data: unknown) => void this.receive(data)),
      this.panel.onDidDispose(() => this.dispose()),
      // Hidden, the page is discarded: hold messages until the next page says `ready`.
      this.panel.onDidChangeViewState(() => {
        if (!this.panel.visible) this.ready = false;
      }),
    );
  }

  /** Posts to the page, or, before it is ready, holds the message or leaves it to the greeting. */
  post(message: Out): void {
    if (this.disposed) return;
    if (this.ready) void this.panel.webview.postMessage(message);
    else if (this.opts.holds(message)) this.held.push(message);
  }

  /** Disposed with the channel (watchers, timers). */
  register(...disposables: vscode.Disposable[]): void {
    this.disposables.push(...disposables);
  }

  /** Called once, when the panel closes or is disposed. */
  onDispose(listener: () => void): void {
    this.disposeListeners.push(listener);
  }

  /** Called by VS Code for every message the page posts. */
  private async receive(data: unknown): Promise<void> {
    const parsed = this.opts.parse(data);
    if (!parsed.ok) {
      this.dropped++;
      this.opts.log.warn(`${this.opts.name}: dropped a malformed message from the webview: ${parsed.error}`);
      return;
    }
    const message = parsed.message;
    if (message.type === "ready") {
      // Said once per page load: the first time, and again each time the panel is shown after
      // being hidden. Each new page gets the greeting, then what was held for it.
      this.ready = true;
      const held = this.held.splice(0);
      for (const m of [...this.opts.greeting(), ...held]) void this.panel.webview.postMessage(m);
      return;
    }
    await this.opts.receive(message as Exclude<In, { type: "ready" }>);
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    for (const listener of this.disposeListeners.splice(0)) listener();
    for (const d of this.disposables.splice(0)) d.dispose();
    this.panel.dispose();
  }
}
