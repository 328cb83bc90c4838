import * as path from "node:path";
import * as vscode from "vscode";
import type { ControlAction } from "../protocol/runner";
import { CasefileConfigurationProvider, DEBUG_TYPE } from "./debugConfig";
import { canRunWorkflowCode, warnRestricted } from "./trust";
import { envFileOf, isRunSession, RunWithoutDebugging, takePendingRun } from "./launchTask";

/**
 * The editor's side of the `casefile` debugger. Registered once by activate() (extension.ts):
 * the configuration provider (debugConfig.ts), the adapter factory (the adapter itself,
 * src/debug/, loads only when a session starts: debugAdapter.ts is a bundle of its own), and a
 * tracker that follows each session's stops. It also
 * - attaches js-debug as a child session when the adapter says the runner's inspector listens
 *   (custom event `casefile/inspector`, with `debugExecutorCode`), so breakpoints in executor code bind;
 * - lets the Run Inspector's Continue/Step/Stop and the status-bar control drive the session
 *   (`control`, asked before RunSessions by commands.ts and extension.ts): one mechanism;
 * - starts sessions for "Debug from Here" (a checkpoint) and "Debug Workflow" (a workflow file).
 */

export const INSPECTOR_EVENT = "casefile/inspector";
/** The adapter's custom request (src/protocol/debug.ts, not imported: zod loads lazily): js-debug is attached to the runner. */
const EXECUTOR_DEBUGGER_ATTACHED = "casefile/executorDebuggerAttached";

type RunState = { state: "idle" | "running" | "paused"; runId?: string; superstep?: number };

interface Tracked {
  session: vscode.DebugSession;
  /** The thread of the last stop: Continue and Step from the panel act on it. */
  threadId?: number;
  paused: boolean;
  runId?: string;
  superstep?: number;
  child?: vscode.DebugSession;
}

/** A runner js-debug is attaching to: `tell` says to its casefile session, once, that it is attached (or why not). */
interface Attaching {
  casefile: vscode.DebugSession;
  tell(failed?: string): void;
}

export type DebugResult = { ok: true; message: string } | { ok: false; reason: string };

export class CasefileDebugging implements vscode.Disposable {
  private readonly sessions = new Map<string, Tracked>();
  /** Runner pid → its attach in progress (onCustomEvent starts it, trackChild follows js-debug's sessions). */
  private readonly attaching = new Map<number, Attaching>();
  private readonly status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 50);
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly extension: vscode.ExtensionContext,
    private readonly log: vscode.LogOutputChannel,
    /** Told as a session starts, stops, goes on and ends: the Run Inspectors show it (inspectorLoader.ts). */
    private readonly onState: (state: RunState) => void,
    /** Told when a session ends: the views read the case file it wrote. */
    private readonly refreshViews: () => void,
  ) {
    this.status.name = "Casefile debug session";
    const provider = new CasefileConfigurationProvider(extension, log);
    const { Initial, Dynamic } = vscode.DebugConfigurationProviderTriggerKind;
    this.disposables.push(
      this.status,
      vscode.debug.registerDebugConfigurationProvider(DEBUG_TYPE, provider, Initial),
      vscode.debug.registerDebugConfigurationProvider(
        DEBUG_TYPE,
        { provideDebugConfigurations: (f) => provider.provideDebugConfigurations(f) },
        Dynamic,
      ),
      vscode.debug.registerDebugAdapterDescriptorFactory(DEBUG_TYPE, { createDebugAdapterDescriptor: (s) => this.createAdapter(s) }),
      vscode.debug.registerDebugAdapterTrackerFactory(DEBUG_TYPE, { createDebugAdapterTracker: (s) => this.track(s) }),
      vscode.debug.registerDebugAdapterTrackerFactory("pwa-node", { createDebugAdapterTracker: (s) => this.trackChild(s) }),
      vscode.debug.onDidReceiveDebugSessionCustomEvent((e) => void this.onCustomEvent(e)),
      vscode.debug.onDidStartDebugSession((s) => this.onChildStarted(s)),
      vscode.debug.onDidTerminateDebugSession((s) => this.onTerminated(s)),
    );
  }

  /** The casefile sessions now running (the e2e suite reads them). */
  get active(): readonly vscode.DebugSession[] {
    return [...this.sessions.values()].map((t) => t.session);
  }

  /**
   * Called by VS Code as a session starts. The adapter runs in this process
   * (DebugAdapterInlineImplementation) and loads on first use. Restricted Mode was refused in
   * resolveDebugConfiguration already; this is the backstop for a configuration that skipped it.
   */
  private async createAdapter(session: vscode.DebugSession): Promise<vscode.DebugAdapterDescriptor> {
    const trust = canRunWorkflowCode();
    if (!trust.ok) throw new Error(trust.reason);
    // Run and Step through a launch configuration (launchTask.ts): the preLaunchTask has run; the run goes without a debugger.
    const run = takePendingRun(session.configuration);
    if (run) return new vscode.DebugAdapterInlineImplementation(new RunWithoutDebugging(run, envFileOf(session.configuration.envFile)));
    const { inlineAdapter } = await import("./debugAdapter.js");
    this.log.info(`debug session ${session.name}: ${JSON.stringify(session.configuration)}`);
    return inlineAdapter({
      runnerPath: vscode.Uri.joinPath(this.extension.extensionUri, "dist", "runner.js").fsPath,
      // The configuration's envFile (the ERP stand-in task's address), read now: after its preLaunchTask ran.
      env: { ...(await this.environment()), ...envFileOf(session.configuration.envFile) },
      log: this.log,
    });
  }

  /** The runner's environment: the editor's, plus the API keys kept in SecretStorage (never logged). */
  private async environment(): Promise<NodeJS.ProcessEnv> {
    const env: NodeJS.ProcessEnv = { ...process.env };
    for (const name of ["OPENAI_API_KEY", "AZURE_OPENAI_API_KEY"]) {
      const key = await this.extension.secrets.get(`casefile.${name}`);
      if (key) env[name] = key;
    }
    return env;
  }

  /** Called by VS Code for each casefile session: follows what the adapter sends, for the panel and the status bar. */
  private track(session: vscode.DebugSession): vscode.DebugAdapterTracker | undefined {
    if (isRunSession(session)) return undefined; // Run and Step: RunSessions follows the run
    const t: Tracked = { session, paused: false };
    this.sessions.set(session.id, t);
    return {
      onDidSendMessage: (m: { type?: string; event?: string; body?: Record<string, unknown> }) => {
        if (m.type !== "event") return;
        if (m.event === "stopped") {
          t.paused = true;
          if (typeof m.body?.threadId === "number") t.threadId = m.body.threadId;
          void this.whereStopped(t).then(() => this.show(t));
        } else if (m.event === "continued") {
          t.paused = false;
          this.show(t);
        }
      },
    };
  }

  /** Reads the run and superstep of a stop from the adapter's threads and stack (thread = run, a frame names its superstep). */
  private async whereStopped(t: Tracked): Promise<void> {
    try {
      const { threads } = (await t.session.customRequest("threads")) as { threads: { id: number; name: string }[] };
      const thread = threads.find((th) => th.id === t.threadId) ?? threads[0];
      if (thread) {
        t.threadId ??= thread.id;
        t.runId = /run-[\w-:]+/.exec(thread.name)?.[0] ?? thread.name;
      }
      const { stackFrames } = (await t.session.customRequest("stackTrace", { threadId: t.threadId, levels: 20 })) as {
        stackFrames: { name: string }[];
      };
      const superstep = stackFrames.map((f) => /superstep\s*#?(\d+)/i.exec(f.name)?.[1]).find((s) => s !== undefined);
      if (superstep !== undefined) t.superstep = Number(superstep);
    } catch (err) {
      this.log.trace(`debug: where the session stopped: ${String(err)}`);
    }
  }

  private show(t: Tracked): void {
    const state: RunState = {
      state: t.paused ? "paused" : "running",
      ...(t.runId ? { runId: t.runId } : {}),
      ...(t.superstep !== undefined ? { superstep: t.superstep } : {}),
    };
    this.onState(state);
    void vscode.commands.executeCommand("setContext", "casefile.paused", t.paused);
    const where = t.runId ? ` ${t.runId}${t.superstep !== undefined ? ` #${t.superstep}` : ""}` : "";
    this.status.text = t.paused ? `$(debug-pause) Casefile${where}: paused` : `$(debug-alt) Casefile${where}`;
    this.status.tooltip = "A Casefile debug session: Continue, Step or Stop (the debug toolbar does the same)";
    this.status.command = { command: "casefile.stepControl", title: "Continue, Step or Stop" };
    this.status.show();
  }

  /**
   * Continue, Step (one superstep), Stop or Pause for the casefile session, from the Run
   * Inspector's buttons or the status bar (commands.ts stepControl): the same DAP requests the
   * toolbar sends, sent to the session itself. Not the toolbar's commands: they act on VS Code's
   * focused thread, and just after a stop (VS Code still asking for the threads, or js-debug's
   * session starting beside it) there was none and the click did nothing. The adapter says
   * `continued`, so the toolbar and Call Stack follow. False when no casefile session runs:
   * RunSessions is asked next.
   */
  control(action: ControlAction): boolean {
    const focused = vscode.debug.activeDebugSession;
    const t =
      (focused && (this.sessions.get(focused.id) ?? this.sessions.get(focused.parentSession?.id ?? ""))) ??
      [...this.sessions.values()].at(-1);
    if (!t) return false;
    this.log.info(`debug control: ${action} (${t.session.name})`);
    if (action === "stop") {
      void vscode.debug.stopDebugging(t.session);
      return true;
    }
    const request = { continue: "continue", step: "next", pause: "pause" }[action];
    void t.session.customRequest(request, { threadId: t.threadId ?? 1 }).then(
      () => {
        if (action !== "pause") {
          t.paused = false;
          this.show(t);
        }
      },
      (err: unknown) => this.log.warn(`debug control ${action}: ${String(err)}`),
    );
    return true;
  }

  /**
   * The adapter's `casefile/inspector` event: the runner listens for a debugger on a loopback
   * port. js-debug (built into VS Code and code-server) attaches as a child of the casefile
   * session, with the bundle's source maps leading to the workflow file (src/runner/bundle.ts),
   * and ends with it.
   */
  private async onCustomEvent(e: vscode.DebugSessionCustomEvent): Promise<void> {
    if (e.session.type !== DEBUG_TYPE || e.event !== INSPECTOR_EVENT) return;
    const body = (e.body ?? {}) as { port?: unknown; host?: unknown; pid?: unknown };
    if (typeof body.port !== "number") {
      this.log.warn(`debug: ${INSPECTOR_EVENT} without a port: ${JSON.stringify(e.body)}`);
      return;
    }
    const workflow = typeof e.session.configuration.workflow === "string" ? e.session.configuration.workflow : undefined;
    const attach: vscode.DebugConfiguration = {
      type: "pwa-node",
      request: "attach",
      name: `Executor code (${e.session.name})`,
      address: typeof body.host === "string" ? body.host : "127.0.0.1",
      port: body.port,
      sourceMaps: true,
      // The bundle is made in memory (never on disk): its inline map is the only one to read.
      outFiles: [],
      ...(workflow ? { resolveSourceMapLocations: [`${path.dirname(workflow)}/**`, "!**/node_modules/**"] } : {}),
      // The user's code only: never the runner's, the engine's or Node's own frames.
      skipFiles: ["<node_internals>/**", `${vscode.Uri.joinPath(this.extension.extensionUri, "dist").fsPath}/**`],
      continueOnAttach: true,
      // For a failing debug e2e test: CASEFILE_JSDEBUG_TRACE=<dir> in the editor's environment writes js-debug's own CDP/DAP log there.
      ...(process.env.CASEFILE_JSDEBUG_TRACE
        ? { trace: { logFile: path.join(process.env.CASEFILE_JSDEBUG_TRACE, `${Date.now()}-${body.port}.log`) } }
        : {}),
      __casefileChild: e.session.id,
      ...(typeof body.pid === "number" ? { __casefileRunnerPid: body.pid } : {}),
    };
    this.log.info(`debug: attaching js-debug to the runner on ${String(attach.address)}:${body.port}`);
    if (typeof body.pid === "number") this.attaching.set(body.pid, this.teller(e.session, body.pid));
    // Not `compact`: VS Code would then move the focus to the child as it starts, and the toolbar's
    // Step Over and the Debug Console would go to js-debug while the casefile session is the paused one.
    const ok = await vscode.debug.startDebugging(e.session.workspaceFolder, attach, {
      parentSession: e.session,
      lifecycleManagedByParent: true,
      consoleMode: vscode.DebugConsoleMode.MergeWithParent,
    });
    if (!ok) {
      this.log.warn("debug: js-debug did not attach to the runner: breakpoints in executor code will not bind");
      if (typeof body.pid === "number") this.attaching.get(body.pid)?.tell("VS Code did not start js-debug's attach session");
    }
  }

  /**
   * What tells the casefile session, once, that js-debug is attached to its runner (its supersteps
   * may start, breakpoints set) or could not attach (they start at once, without it, instead of
   * after the adapter's 30 s wait).
   */
  private teller(casefile: vscode.DebugSession, pid: number): Attaching {
    const attaching: Attaching = {
      casefile,
      tell: (failed) => {
        if (this.attaching.get(pid) !== attaching) return;
        this.attaching.delete(pid);
        if (failed) this.log.warn(`debug: js-debug did not attach to the runner (pid ${pid}): ${failed}`);
        else this.log.info(`debug: js-debug attached to the runner (pid ${pid}), breakpoints set`);
        void casefile.customRequest(EXECUTOR_DEBUGGER_ATTACHED, { pid, ...(failed ? { failed } : {}) }).then(undefined, (err: unknown) => {
          this.log.warn(`debug: ${EXECUTOR_DEBUGGER_ATTACHED}: ${String(err)}`);
        });
      },
    };
    return attaching;
  }

  /**
   * Follows each js-debug session under a casefile session. js-debug's attach session starts a
   * session of its own for the runner process; once that one has answered `attach`, its
   * breakpoints are set, and the casefile session may let the runner's supersteps start
   * (the adapter waits for this, src/debug/session.ts). An attach that fails, or an attach
   * session that ends before its runner's session is ready, is told too.
   */
  private trackChild(s: vscode.DebugSession): vscode.DebugAdapterTracker | undefined {
    let attachSession: vscode.DebugSession | undefined = s;
    while (attachSession && attachSession.configuration.__casefileChild === undefined) attachSession = attachSession.parentSession;
    const pid = attachSession?.configuration.__casefileRunnerPid as number | undefined;
    const attaching = pid === undefined ? undefined : this.attaching.get(pid);
    if (!attaching) return undefined;
    const failedAttach = (m: { command?: string; success?: boolean; message?: string }): boolean =>
      m.command === "attach" && m.success === false ? (attaching.tell(`js-debug: ${m.message ?? "attach failed"}`), true) : false;
    if (attachSession === s)
      return {
        onDidSendMessage: (m: { type?: string; command?: string; success?: boolean; message?: string }) => {
          if (m.type === "response") failedAttach(m);
        },
        onWillStopSession: () => attaching.tell("js-debug's attach session ended before the runner's session was ready"),
        onExit: () => attaching.tell("js-debug's attach session ended before the runner's session was ready"),
      };
    // The runner goes on once the session has both answered `attach` and been told its
    // breakpoints (the client's `configurationDone`, sent after every setBreakpoints): on a cold
    // start either may come first, and a breakpoint not yet set when a superstep runs is missed.
    const seen = new Set<string>();
    return {
      onDidSendMessage: (m: { type?: string; command?: string; success?: boolean; message?: string }) => {
        if (m.type !== "response" || (m.command !== "attach" && m.command !== "configurationDone")) return;
        if (failedAttach(m)) return;
        seen.add(m.command);
        if (seen.size === 2) attaching.tell();
      },
      onWillStopSession: () => attaching.tell("js-debug's session for the runner ended before it was ready"),
      onExit: () => attaching.tell("js-debug's session for the runner ended before it was ready"),
    };
  }

  private onChildStarted(s: vscode.DebugSession): void {
    const parent = s.configuration.__casefileChild as string | undefined;
    const t = parent ? this.sessions.get(parent) : undefined;
    if (t) t.child = s;
  }

  private onTerminated(s: vscode.DebugSession): void {
    for (const [pid, a] of this.attaching) if (a.casefile.id === s.id) this.attaching.delete(pid);
    if (!this.sessions.delete(s.id)) return;
    if (this.sessions.size === 0) {
      this.status.hide();
      this.onState({ state: "idle" });
      void vscode.commands.executeCommand("setContext", "casefile.paused", false);
    }
    this.refreshViews();
  }

  /** "Debug from Here" on a checkpoint (Runs view, Run Inspector): a session resuming from it, paused there. */
  async debugFromHere(caseFile: vscode.Uri, checkpoint: string): Promise<DebugResult> {
    return this.start(vscode.workspace.getWorkspaceFolder(caseFile), {
      type: DEBUG_TYPE,
      request: "launch",
      name: `Debug from ${checkpoint}`,
      resumeFrom: { caseFile: caseFile.fsPath, checkpoint },
      stopOnEntry: true,
    });
  }

  /** "Debug Workflow" (the Workflows view): a new run of the file, paused before its first superstep; input as given or asked for. */
  async debugWorkflow(workflow: vscode.Uri, input?: unknown, caseFile?: string): Promise<DebugResult> {
    return this.start(vscode.workspace.getWorkspaceFolder(workflow), {
      type: DEBUG_TYPE,
      request: "launch",
      name: `Debug ${path.basename(workflow.fsPath)}`,
      workflow: workflow.fsPath,
      stopOnEntry: true,
      ...(input !== undefined ? { input } : {}),
      ...(caseFile ? { caseFile } : {}),
    });
  }

  private async start(folder: vscode.WorkspaceFolder | undefined, config: vscode.DebugConfiguration): Promise<DebugResult> {
    // Asked here first: VS Code's own trust prompt for debugging does not say what Casefile would run.
    const trust = canRunWorkflowCode();
    if (!trust.ok) {
      void warnRestricted(trust.reason);
      return { ok: false, reason: trust.reason };
    }
    const started = await vscode.debug.startDebugging(folder, config);
    return started ? { ok: true, message: `${config.name} started.` } : { ok: false, reason: `${config.name} did not start.` };
  }

  dispose(): void {
    for (const d of this.disposables.splice(0)) d.dispose();
  }
}
