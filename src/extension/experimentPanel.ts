import * as path from "node:path";
import * as vscode from "vscode";
import { WebviewChannel } from "./webviewChannel";
import type { ExperimentToHost, HostToExperiment } from "../protocol/experiment";
import { parseExperimentMessage, parseExperimentResults } from "../protocol/experiment";

/**
 * The Experiment panel: one webview panel per results file of `casefile experiment`
 * (`*.experiment.json`). Same boundary as the Run Inspector and the Workflow Graph, the
 * `WebviewChannel`'s: CSP default-src 'none' with a nonce, local resources from media/ only,
 * every message parsed (src/protocol/experiment.ts), nothing posted before the page says `ready`.
 *
 * The file is read and parsed with the results schema here, so the page only ever gets a file
 * that parses; one that does not is a notice naming the field. The file is watched: a new run of
 * the experiment (the CLI rewrites it) reloads the panel. Loaded on first use (its own bundle,
 * esbuild.mjs lazyModules) by the casefile.openExperiment command.
 */
export class ExperimentPanel implements vscode.Disposable {
  static readonly viewType = "casefile.experimentPanel";
  private static readonly open = new Map<string, ExperimentPanel>();

  private readonly channel: WebviewChannel<ExperimentToHost, HostToExperiment>;
  /** The last load or notice: what a page that says `ready` is sent. */
  private latest: HostToExperiment | undefined;
  /** The case to compare first, until the page has been sent it once. */
  private focus: string | undefined;
  private reloadTimer: ReturnType<typeof setTimeout> | undefined;

  /** Called by casefile.openExperiment: reveals the file's panel (opening it if need be), focused on `focusCase` when given. */
  static async show(
    extensionUri: vscode.Uri,
    log: vscode.LogOutputChannel,
    file: vscode.Uri,
    focusCase?: string,
  ): Promise<ExperimentPanel> {
    let panel = ExperimentPanel.open.get(file.toString());
    if (panel) panel.channel.panel.reveal();
    else {
      panel = new ExperimentPanel(vscode.Uri.joinPath(extensionUri, "media"), log, file);
      ExperimentPanel.open.set(file.toString(), panel);
    }
    panel.focus = focusCase;
    await panel.reload();
    return panel;
  }

  static get(file: vscode.Uri): ExperimentPanel | undefined {
    return ExperimentPanel.open.get(file.toString());
  }

  get panel(): vscode.WebviewPanel {
    return this.channel.panel;
  }

  /** Messages from the page dropped at the boundary. */
  get dropped(): number {
    return this.channel.dropped;
  }

  /** What the panel shows now (sent, or waiting for the page): read by the e2e suite. */
  get shown(): HostToExperiment | undefined {
    return this.latest;
  }

  private constructor(
    media: vscode.Uri,
    private readonly log: vscode.LogOutputChannel,
    readonly file: vscode.Uri,
  ) {
    this.channel = new WebviewChannel<ExperimentToHost, HostToExperiment>({
      viewType: ExperimentPanel.viewType,
      title: `Experiment: ${path.basename(file.fsPath, ".experiment.json")}`,
      column: vscode.ViewColumn.Active,
      media,
      page: { title: "Experiment", script: "experiment.js", stylesheet: "experiment.css", loading: "Loading the experiment…" },
      log,
      name: "Experiment",
      parse: parseExperimentMessage,
      receive: (message) => this.receive(message),
      greeting: () => (this.latest ? [this.latest] : []),
      holds: () => false,
    });
    this.channel.onDispose(() => ExperimentPanel.open.delete(file.toString()));
    const watcher = vscode.workspace.createFileSystemWatcher(
      new vscode.RelativePattern(vscode.Uri.file(path.dirname(file.fsPath)), path.basename(file.fsPath)),
    );
    this.channel.register(
      watcher,
      watcher.onDidChange(() => this.reloadSoon()),
      watcher.onDidCreate(() => this.reloadSoon()),
      { dispose: () => clearTimeout(this.reloadTimer) },
    );
  }

  /** Reads and parses the results file again and sends it; a file that does not parse is a notice, the last good one stays shown. */
  async reload(): Promise<void> {
    let text: string;
    try {
      text = new TextDecoder().decode(await vscode.workspace.fs.readFile(this.file));
    } catch (err) {
      this.notice(`Cannot read ${this.file.fsPath}: ${err instanceof Error ? err.message : String(err)}`);
      return;
    }
    const parsed = parseExperimentResults(text);
    if (!parsed.ok) {
      this.notice(`${vscode.workspace.asRelativePath(this.file)} is ${parsed.error}`);
      return;
    }
    const focus = this.focus;
    this.focus = undefined;
    this.post({
      type: "load",
      file: vscode.workspace.asRelativePath(this.file),
      results: parsed.value,
      ...(focus !== undefined ? { case: focus } : {}),
    });
  }

  private reloadSoon(): void {
    clearTimeout(this.reloadTimer);
    this.reloadTimer = setTimeout(() => void this.reload(), 300);
  }

  private notice(message: string): void {
    this.log.warn(`Experiment: ${message}`);
    const notice: HostToExperiment = { type: "notice", level: "error", message };
    // A notice replaces what a new page is greeted with only when there is nothing better to show.
    if (this.latest?.type !== "load") this.latest = notice;
    this.channel.post(notice);
  }

  private post(message: HostToExperiment): void {
    this.latest = message;
    this.channel.post(message);
  }

  /** Called for every parsed message from the page other than `ready`. */
  private async receive(message: Exclude<ExperimentToHost, { type: "ready" }>): Promise<void> {
    switch (message.type) {
      case "openCase": {
        const results = this.latest?.type === "load" ? this.latest.results : undefined;
        const c = results?.cases.find((x) => x.id === message.case);
        if (!c) return;
        // Case files are named relative to the results file's folder.
        const uri = vscode.Uri.file(path.resolve(path.dirname(this.file.fsPath), c.file));
        try {
          await vscode.window.showTextDocument(uri, { viewColumn: vscode.ViewColumn.Beside, preview: true });
        } catch (err) {
          void vscode.window.showWarningMessage(
            `Eval case ${c.id}: cannot open ${uri.fsPath}: ${err instanceof Error ? err.message : String(err)}`,
          );
        }
        return;
      }
      default: {
        const never: never = message.type;
        this.log.warn(`Experiment: unhandled message ${String(never)}`);
      }
    }
  }

  dispose(): void {
    this.channel.dispose();
  }
}
