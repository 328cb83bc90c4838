import * as path from "node:path";
import * as vscode from "vscode";
import type { GraphLive } from "../protocol/graph";
import type { ControlAction, OtelConfig, ProviderConfig, RunCommand, RunnerToHost, TokenBudget } from "../protocol/runner";
import type { PrestartedRunner, RunnerHandle } from "../runner/client";
import { liveFromEvent } from "./graphLive";
import { API_KEY_SECRETS, pickLanguageModel, providerFromSettingValues } from "./modelSettings";

/**
 * Runs the runner child process for the editor: one run at a time. Called by the run, step,
 * resume, fork, replay and respond commands (commands.ts, runCommands.ts) and by the inspector's
 * actions. The runner's log goes to the "Casefile" output channel; a progress notification shows
 * while it goes; in step mode a status bar item and the stepControl command offer Continue, Step
 * and Stop. Every runner event refreshes the views (throttled), so they update live, and moves
 * the Workflow Graph's highlight of the run's workflow (graphLive.ts, `liveFor`).
 */

export type RunResult =
  | { ok: true; runId: string; status: string; caseFile: string; message: string }
  | { ok: false; reason: string; code?: string; details?: Record<string, unknown> };

/** Names of the environment variables the runner reads keys from; the values come from SecretStorage. */
export { API_KEY_SECRETS };

export class RunSessions implements vscode.Disposable {
  private active:
    | {
        handle: RunnerHandle;
        command: RunCommand;
        stepMode: boolean;
        runId?: string;
        superstep?: number;
        paused?: boolean;
        live?: GraphLive;
      }
    | undefined;
  private readonly status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 50);
  /** A runner started after the last run ended, waiting for the next one (runner/client.ts). */
  private spare: PrestartedRunner | undefined;
  private disposed = false;
  private refreshTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly extension: vscode.ExtensionContext,
    private readonly log: vscode.LogOutputChannel,
    private readonly refreshViews: () => void,
    /** Told as a run starts, pauses, goes on and ends: the inspector panels show it. */
    private readonly onState: (state: { state: "idle" | "running" | "paused"; runId?: string; superstep?: number }) => void = () => {},
    /** Told when what the run's Workflow Graph highlights changes (`liveFor`), and when the run ends. */
    private readonly onLive: () => void = () => {},
  ) {
    this.status.name = "Casefile run";
  }

  get running(): boolean {
    return this.active !== undefined;
  }

  /** Where a step-mode run waits for Continue, Step or Stop; undefined when none waits. */
  get pausedAt(): { runId: string; superstep: number } | undefined {
    const a = this.active;
    return a?.paused && a.runId !== undefined ? { runId: a.runId, superstep: a.superstep ?? 0 } : undefined;
  }

  /**
   * What the Workflow Graph of a workflow highlights while a run of it goes, from the runner's
   * events: the run's workflow file or case file is the one given. Undefined when no run of it
   * goes (or it has not started a superstep yet): the graph then reads the case file.
   */
  liveFor(workflowPath: string, caseFile: string): GraphLive | undefined {
    const a = this.active;
    if (!a?.live) return undefined;
    const same = (x: string | undefined, y: string): boolean => x !== undefined && path.resolve(x) === path.resolve(y);
    const workflow = "workflowPath" in a.command ? a.command.workflowPath : undefined;
    return same(a.command.caseFile, caseFile) || same(workflow, workflowPath) ? a.live : undefined;
  }

  /** Sends Continue, Step, Stop or Pause to the running workflow. Called by the stepControl command. */
  control(action: ControlAction): boolean {
    if (!this.active) return false;
    this.log.info(`run control: ${action}`);
    this.active.handle.control(action);
    if (action !== "pause") {
      this.active.paused = false;
      this.showStatus("running");
    }
    return true;
  }

  /** Starts the runner with one command and settles when it exits. */
  async start(command: RunCommand, opts: { stepMode: boolean; title: string; env?: Record<string, string> }): Promise<RunResult> {
    if (this.active) return { ok: false, reason: "A workflow is already running in this window: stop it first (Casefile: Stop)." };
    const provider = providerFromSettings();
    const defaultBudget = budgetFromSettings(this.log);
    const otel = otelFromSettings();
    // opts.env: what the workflow's launch configuration adds (the ERP stand-in's address, launchTask.ts).
    const env = { ...(await this.environment(provider)), ...opts.env };
    const { startRunner, PrestartedRunner } = await import("../runner/client.js");
    this.log.info(`${opts.title}: ${JSON.stringify(command)}${opts.stepMode ? " (step mode)" : ""}`);
    const runnerPath = vscode.Uri.joinPath(this.extension.extensionUri, "dist", "runner.js").fsPath;
    const cwd =
      command.kind === "run"
        ? path.dirname(command.workflowPath)
        : "workflowPath" in command && command.workflowPath
          ? path.dirname(command.workflowPath)
          : path.dirname(command.caseFile);
    // The runner kept ready after the last run, if it fits (same env and folder); else a new one.
    const prestarted = this.spare;
    this.spare = undefined;
    const handle = startRunner({
      runnerPath,
      command,
      stepMode: opts.stepMode,
      ...(provider ? { provider } : {}),
      ...(defaultBudget ? { defaultBudget } : {}),
      ...(otel ? { otel } : {}),
      env,
      cwd,
      prestarted,
      onMessage: (m) => this.onMessage(m, handle),
      onInvalid: (problem) => this.log.warn(`runner: ${problem}`),
    });
    this.active = { handle, command, stepMode: opts.stepMode };
    void vscode.commands.executeCommand("setContext", "casefile.running", true);
    this.showStatus("running");
    const finished = vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `Casefile: ${opts.title}`, cancellable: true },
      async (progress, token) => {
        token.onCancellationRequested(() => handle.control("stop"));
        this.progress = progress;
        return handle.finished;
      },
    );
    try {
      const outcome = await finished;
      if (outcome.done) {
        const { runId, status, caseFile, error } = outcome.done;
        const why = error ? `: ${error.code}: ${error.message}` : "";
        const message = `Run ${runId} ${status}${why} (${vscode.workspace.asRelativePath(caseFile)})`;
        if (error) this.log.error(message);
        else this.log.info(message);
        return { ok: true, runId, status, caseFile, message };
      }
      const error = outcome.error ?? { code: "RUNNER_CRASHED", message: `runner exited with code ${outcome.exitCode}` };
      this.log.error(`${opts.title} failed: ${error.code}: ${error.message}`);
      return {
        ok: false,
        reason: `${error.code}: ${error.message}`,
        code: error.code,
        ...(error.details ? { details: error.details } : {}),
      };
    } finally {
      this.active = undefined;
      this.progress = undefined;
      this.status.hide();
      this.onState({ state: "idle" });
      this.onLive();
      void vscode.commands.executeCommand("setContext", "casefile.running", false);
      void vscode.commands.executeCommand("setContext", "casefile.paused", false);
      this.refreshViews();
      // The next Run (most often of the same workflow) starts in a runner already up, with
      // SQLite compiled; its workflow bundle comes from the bundle cache (src/runner/bundleCache.ts).
      if (!this.disposed) this.spare = PrestartedRunner.start({ runnerPath, env, cwd });
    }
  }

  private progress: vscode.Progress<{ message?: string }> | undefined;

  private onMessage(message: RunnerToHost, handle: RunnerHandle): void {
    switch (message.type) {
      case "ready":
      case "done":
        return;
      case "log":
        this.log[message.level](message.message);
        return;
      case "error":
        this.log.error(`${message.error.code}: ${message.error.message}`);
        return;
      case "event": {
        const e = message.event;
        if (this.active) {
          Object.assign(this.active, { runId: e.runId, superstep: e.superstep });
          const live = liveFromEvent(this.active.live, e);
          if (live !== this.active.live) {
            this.active.live = live;
            this.onLive();
          }
        }
        this.log.trace(`event ${e.runId} #${e.superstep} ${e.type}`);
        this.progress?.report({ message: `${e.runId} superstep ${e.superstep}: ${e.type}` });
        this.refreshSoon();
        return;
      }
      case "paused":
        this.log.info(`paused before superstep ${message.superstep} of ${message.runId}`);
        if (this.active) Object.assign(this.active, { runId: message.runId, superstep: message.superstep, paused: true });
        this.progress?.report({ message: `paused before superstep ${message.superstep}` });
        this.showStatus("paused");
        this.refreshSoon();
        return;
      case "modelRequest":
        void answerWithLanguageModel(message, handle, this.log);
        return;
      default: {
        const never: never = message;
        this.log.warn(`runner: unhandled message ${JSON.stringify(never)}`);
      }
    }
  }

  private showStatus(state: "running" | "paused"): void {
    const a = this.active;
    if (!a) return;
    this.onState({
      state,
      ...(a.runId !== undefined ? { runId: a.runId } : {}),
      ...(a.superstep !== undefined ? { superstep: a.superstep } : {}),
    });
    void vscode.commands.executeCommand("setContext", "casefile.paused", state === "paused");
    const where = a.runId ? ` ${a.runId} #${a.superstep ?? 0}` : "";
    this.status.text = state === "paused" ? `$(debug-pause) Casefile${where}: paused` : `$(sync~spin) Casefile${where}`;
    this.status.tooltip = state === "paused" ? "Paused at a superstep boundary: Continue, Step or Stop" : "A workflow is running";
    this.status.command = { command: "casefile.stepControl", title: "Continue, Step or Stop" };
    this.status.show();
  }

  private refreshSoon(): void {
    if (this.refreshTimer) return;
    this.refreshTimer = setTimeout(() => {
      this.refreshTimer = undefined;
      this.refreshViews();
    }, 500);
  }

  /** The runner's environment: the editor's, plus the API key from SecretStorage (never logged). Also the Testing view's eval runs (evalTests.ts). */
  async environment(provider: ProviderConfig | undefined): Promise<NodeJS.ProcessEnv> {
    const env: NodeJS.ProcessEnv = { ...process.env };
    if (provider?.kind === "openai" || provider?.kind === "azure") {
      const name = API_KEY_SECRETS[provider.kind];
      const key = await this.extension.secrets.get(`casefile.${name}`);
      if (key) env[name] = key;
    }
    return env;
  }

  dispose(): void {
    this.disposed = true;
    this.spare?.dispose();
    this.spare = undefined;
    clearTimeout(this.refreshTimer);
    this.active?.handle.control("stop");
    this.status.dispose();
  }
}

/** The provider from the casefile.* settings; undefined means the runner's default (scripted). */
export function providerFromSettings(): ProviderConfig | undefined {
  const config = vscode.workspace.getConfiguration("casefile");
  return providerFromSettingValues({
    provider: config.get<string>("provider", "scripted"),
    baseUrl: config.get<string>("baseUrl", ""),
    model: config.get<string>("model", ""),
    azureApiVersion: config.get<string>("azureApiVersion", "2024-10-21"),
  });
}

/**
 * The casefile.tokenBudget setting as the run's default budget: the hard budget of agent steps
 * that declare none (a step's own budget wins; src/runner/budget.ts). 0 or not a whole number of
 * tokens: none (the latter logged).
 */
export function budgetFromSettings(log?: vscode.LogOutputChannel): TokenBudget | undefined {
  const value = vscode.workspace.getConfiguration("casefile").get<unknown>("tokenBudget", 0);
  if (typeof value !== "number" || !Number.isInteger(value) || value <= 0) {
    if (value !== 0) log?.warn(`casefile.tokenBudget is ${JSON.stringify(value)}: not a whole number of tokens, ignored`);
    return undefined;
  }
  return { hard: value };
}

/**
 * The casefile.otel.* settings: trace each run the editor starts (Run, Step, Resume, Answer) to
 * an OTLP/HTTP receiver. Undefined when casefile.otel.enabled is off (the default).
 */
export function otelFromSettings(): OtelConfig | undefined {
  const config = vscode.workspace.getConfiguration("casefile.otel");
  if (config.get<boolean>("enabled", false) !== true) return undefined;
  const endpoint = config.get<string>("endpoint", "").trim();
  return { ...(endpoint ? { endpoint } : {}), includeContent: config.get<boolean>("includeContent", false) === true };
}

/** Answers the runner's model request through VS Code's Language Model API (provider vscode-lm). */
async function answerWithLanguageModel(
  message: Extract<RunnerToHost, { type: "modelRequest" }>,
  handle: RunnerHandle,
  log: vscode.LogOutputChannel,
): Promise<void> {
  try {
    // The request names the model already: casefile.model (the run's model) or the step's own.
    const model = pickLanguageModel(message.request.model, await vscode.lm.selectChatModels());
    // The LM API has no system role: system messages go first as user messages.
    const messages = message.request.messages.map((m) =>
      m.role === "assistant" ? vscode.LanguageModelChatMessage.Assistant(m.content) : vscode.LanguageModelChatMessage.User(m.content),
    );
    const response = await model.sendRequest(messages, {});
    let text = "";
    for await (const part of response.text) text += part;
    handle.send({ type: "modelResult", id: message.id, ok: true, text, model: model.id });
  } catch (e) {
    const error = e instanceof Error ? e.message : String(e);
    log.error(`model request for ${message.request.step} failed: ${error}`);
    handle.send({ type: "modelResult", id: message.id, ok: false, error });
  }
}
