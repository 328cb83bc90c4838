import { StoppedEvent, Event as DapEvent } from "@vscode/debugadapter";
import type { DebugProtocol } from "@vscode/debugprotocol";
import { INSPECTOR_EVENT, type ExceptionFilter } from "../protocol/debug";
import type { ProviderConfig, RunCommand } from "../protocol/runner";
import type { RunnerOutcome } from "../runner/client";
import { breakpointsAt, decideBoundary, pausedLabel, type BoundaryContext, type Intent } from "./boundary";
import type { BoundBreakpoint, Breakpoints, Evaluator } from "./breakpoints";
import type { CaseReader } from "./caseReader";
import { firstCommand, type Launch } from "./launch";
import type { PausedView } from "./pausedView";
import { RunnerLink } from "./runnerLink";

/**
 * The run under the debugger going forwards and back: the live runner (one RunnerLink per
 * command: a new run, a resume, a branch), what the user asked going forwards (the intent each
 * boundary is decided with, boundary.ts), and history: Step Back and Reverse Continue move the
 * shown checkpoint; going forwards from one that is not the live boundary (or with edits, or
 * Restart Frame) hands the live runner off and starts a branch run. The session (session.ts)
 * calls it from its requests; it tells the client through the host.
 */

export interface CasefileDebugSessionOptions {
  /** The bundled runner: dist/runner.js of the extension or of the CLI. */
  runnerPath: string;
  /** The runner's environment (the editor's with API keys from SecretStorage; the CLI's own). Default process.env. */
  env?: NodeJS.ProcessEnv;
  /** Launch attributes a configuration leaves out: the editor's casefile.* settings. */
  defaults?: { provider?: ProviderConfig; tokenBudget?: number };
  /**
   * Answers a model request of a run whose provider is `vscode-lm` (the extension asks vscode.lm).
   * Without it such a request fails with a clear error.
   */
  answerModelRequest?: (request: {
    step: string;
    messages: { role: string; content: string }[];
    model: string;
  }) => Promise<{ ok: true; text: string; model?: string } | { ok: false; error: string }>;
  /**
   * With `debugExecutorCode`, no superstep of a runner starts until the client says a JavaScript
   * debugger is attached to it (custom request `casefile/executorDebuggerAttached`), or
   * `executorDebuggerTimeoutMs` (default 30 s) has passed. The extension sets it: it attaches
   * js-debug itself. A plain DAP client (`casefile dap`) does not wait.
   */
  waitForExecutorDebugger?: boolean;
  executorDebuggerTimeoutMs?: number;
  /**
   * Step Into at a boundary pauses in the executor code it calls (default true, with
   * debugExecutorCode and a JavaScript debugger attached); false: it is Next.
   */
  stepIntoExecutorCode?: boolean;
  /** Each JavaScript expression's time limit (conditions, logpoints, evaluate); default 1 s. */
  evaluateTimeoutMs?: number;
}

export interface SteppingHost {
  readonly options: CasefileDebugSessionOptions;
  launch(): Launch | undefined;
  kindOf(executor: string): string | undefined;
  console(line: string, category?: "console" | "stderr"): void;
  sendEvent(event: DapEvent): void;
  /** Evaluates breakpoint conditions and logpoint parts (the debug helper). */
  evaluate: Evaluator;
  /** The session is over: TerminatedEvent, once. */
  finish(): void;
  ended(): boolean;
}

export class Stepping {
  live?: RunnerLink;
  intent: Intent = "continue";
  /** The exception filter the last stop was for (exceptionInfo). */
  lastException?: { filter: ExceptionFilter; description: string };
  private saidStepIntoIsNext = false;

  constructor(
    private readonly host: SteppingHost,
    private readonly reader: CaseReader,
    private readonly paused: PausedView,
    private readonly breakpoints: Breakpoints,
    private readonly filters: ReadonlySet<ExceptionFilter>,
  ) {}

  /** Starts the runner for one command, in step mode: every boundary comes back to onPaused. */
  start(command: RunCommand, opts: { skipFirst: boolean }): void {
    const a = this.host.launch()!.args;
    const provider = a.provider ?? this.host.options.defaults?.provider;
    const tokenBudget = a.tokenBudget ?? this.host.options.defaults?.tokenBudget;
    this.reader.stale();
    const live = new RunnerLink(
      {
        runnerPath: this.host.options.runnerPath,
        env: this.host.options.env ?? process.env,
        command,
        workflowFile: this.host.launch()!.workflowFile,
        ...(provider ? { provider } : {}),
        ...(tokenBudget ? { tokenBudget } : {}),
        ...(a.otel ? { otel: a.otel } : {}),
        inspect: a.debugExecutorCode === true,
        stepInto: this.host.options.stepIntoExecutorCode !== false,
        ...(this.host.options.waitForExecutorDebugger ? { waitForDebuggerMs: this.host.options.executorDebuggerTimeoutMs ?? 30_000 } : {}),
        skipFirst: opts.skipFirst,
      },
      {
        console: (line, category) => this.host.console(line, category),
        inspector: (body) => this.host.sendEvent(new DapEvent(INSPECTOR_EVENT, body)),
        event: (_link, runId) => {
          this.reader.stale();
          this.paused.threadOf(runId);
        },
        boundary: (link) => void this.onBoundary(link).catch((e: Error) => this.host.console(`debugger: ${e.message}`, "stderr")),
        answerModel: (request) =>
          this.host.options.answerModelRequest?.(request) ??
          Promise.resolve({
            ok: false as const,
            error: "the vscode-lm provider needs the editor: this debug adapter has no language model (set `provider`)",
          }),
        ended: (link, outcome) => void this.onRunnerEnded(link, outcome),
      },
    );
    this.live = live;
    if (live.handle.pid !== undefined) {
      this.host.sendEvent(
        new DapEvent("process", {
          name: this.host.launch()!.workflowFile,
          systemProcessId: live.handle.pid,
          isLocalProcess: true,
          startMethod: "launch",
        }),
      );
    }
  }

  /** A boundary: stop here (and say why), or let the runner run the next superstep. */
  private async onBoundary(live: RunnerLink): Promise<void> {
    if (this.live !== live || !live.paused) return;
    const at = live.paused;
    const facts = {
      intent: this.intent,
      first: live.boundaries++ === 0,
      skipFirst: live.skipFirst,
      runId: live.runId!,
      at,
      exceptions: live.exceptions.splice(0),
      judged: live.judged,
    };
    live.judged = false;
    const { stop, logs, problems } = await decideBoundary(facts, this.boundaryContext());
    for (const line of logs) this.host.console(line);
    for (const p of problems) this.host.console(p, "stderr");
    if (!stop) return live.release();
    this.intent = "continue";
    this.paused.show(live.runId!, at.checkpoint);
    this.lastException = stop.exception ? { filter: stop.exception, description: stop.description ?? "" } : undefined;
    this.stopped(stop.reason, live.runId!, stop.description ?? pausedLabel(at), {
      ...(stop.description ? { text: stop.description } : {}),
      ...(stop.hitBreakpointIds ? { hitBreakpointIds: stop.hitBreakpointIds } : {}),
    });
  }

  /** Tells the client the run stopped (all threads): the Call Stack and Variables are asked for again. */
  private stopped(reason: string, runId: string, description: string, more: { text?: string; hitBreakpointIds?: number[] } = {}): void {
    const ev = new StoppedEvent(reason, this.paused.threadOf(runId)) as DebugProtocol.StoppedEvent;
    ev.body.description = description;
    ev.body.text = more.text;
    ev.body.allThreadsStopped = true;
    if (more.hitBreakpointIds) ev.body.hitBreakpointIds = more.hitBreakpointIds;
    this.host.sendEvent(ev);
  }

  private boundaryContext(): BoundaryContext {
    return {
      filters: this.filters,
      breakpoints: this.breakpoints,
      reader: this.reader,
      evaluate: this.host.evaluate,
      kindOf: (x) => this.host.kindOf(x),
    };
  }

  /** The runner exited: the run ended (completed, waiting, failed, stopped) or was handed off. */
  private async onRunnerEnded(live: RunnerLink, outcome: RunnerOutcome): Promise<void> {
    this.reader.stale();
    if (this.live === live) this.live = undefined;
    if (live.handedOff || this.host.ended()) return;
    const done = outcome.done;
    if (!done) {
      const err = outcome.error ?? { code: "RUNNER_CRASHED", message: `runner exited with code ${outcome.exitCode}` };
      this.host.console(`${err.code}: ${err.message}`, "stderr");
    }
    // A run that ends failed, waiting or needing replanning stops (when its filter is on) at its last checkpoint.
    const exceptions = live.exceptions.filter((x) => this.filters.has(x.filter));
    if (done && exceptions.length && live.runId) {
      const store = await this.reader.snapshot();
      const latest = store.latestCheckpoint(live.runId);
      if (latest) {
        this.paused.show(live.runId, latest.id);
        this.lastException = { filter: exceptions[0]!.filter, description: exceptions.map((x) => x.description).join("; ") };
        const why = this.lastException.description;
        return this.stopped("exception", live.runId, `run ${live.runId} ${done.status}: ${why}`, { text: why });
      }
    }
    this.host.finish();
  }

  /** Next, Continue, restartFrame: from the live boundary, or from a checkpoint in history (a branch). */
  async forward(intent: Intent, opts: { branch?: boolean; from?: string; into?: boolean } = {}): Promise<string | undefined> {
    const from = opts.from ?? this.paused.shown?.checkpoint;
    const live = this.live;
    const edited = this.paused.edited;
    const atLive = live?.paused !== undefined && from === live.paused.checkpoint;
    this.intent = intent;
    this.paused.forget();
    const into = opts.into === true && this.canStepInto(atLive && !edited);
    if (live && atLive && !edited && !opts.branch) {
      live.leftFrom = live.paused!.checkpoint;
      live.paused = undefined;
      live.release(into);
      return undefined;
    }
    // The live run is between boundaries (in a superstep, or paused in executor code by js-debug
    // after Step Into or at a breakpoint in run()): Continue and Next go on with it, and its next
    // boundary is decided with this intent. A pause in executor code is resumed, saying so.
    if (live && !live.paused && !live.handedOff && !edited && !opts.branch && (from === undefined || from === live.leftFrom)) {
      if (await live.resumeExecutorCode())
        this.host.console(
          `executor code: resumed the JavaScript debugger's pause; the run goes on${intent === "step" ? " and stops at the next boundary" : ""}`,
        );
      return undefined;
    }
    if (!from) return "there is no checkpoint to go on from";
    const store = await this.reader.snapshot();
    const cp = store.getCheckpoint(from);
    if (!cp) return `checkpoint ${from} is not in the case file`;
    if (cp.pending.length === 0 && !edited && !opts.branch) {
      this.host.console(`run ${cp.runId} ended at ${cp.id}: nothing runs after it`);
      this.host.finish();
      return undefined;
    }
    if (live) await this.handOff(live);
    const patch = this.paused.takePatch();
    const latest = store.latestCheckpoint(cp.runId);
    if (patch) this.host.console(`going on from ${cp.id} with edited ${Object.keys(patch).join(", ")}: a branch run`);
    else if (opts.branch) this.host.console(`re-running superstep ${cp.superstep + 1} from ${cp.id}: a branch run`);
    else if (latest && latest.id !== cp.id)
      this.host.console(`going on from ${cp.id}, earlier than the run's latest (${latest.id}): a branch run`);
    this.start(
      {
        kind: "resume",
        caseFile: this.host.launch()!.caseFile,
        checkpointId: cp.id,
        workflowPath: this.host.launch()!.workflowFile,
        ...(patch ? { patch } : {}),
        ...(opts.branch ? { branch: true } : {}),
      },
      { skipFirst: true },
    );
    return undefined;
  }

  /**
   * Step Into goes into executor code when the runner has an inspector with a JavaScript debugger
   * attached (debugExecutorCode, js-debug in VS Code) and the user is at its live boundary; else it
   * is Next, said once per session.
   */
  private canStepInto(atLiveBoundary: boolean): boolean {
    const why = !this.host.launch()?.args.debugExecutorCode
      ? "debugExecutorCode is off"
      : this.host.options.stepIntoExecutorCode === false
        ? "stepping into executor code is off in this editor; set a breakpoint in run() instead"
        : !this.live?.debuggerAttachedYet && !this.live?.waitsForDebugger
          ? "no JavaScript debugger (js-debug) is attached to the runner"
          : !atLiveBoundary
            ? "going on from history (or with edits) starts a new runner"
            : undefined;
    if (why && !this.saidStepIntoIsNext) {
      this.saidStepIntoIsNext = true;
      this.host.console(`Step Into acts as Next here (${why}): it runs the superstep and pauses at the next boundary`);
    }
    return why === undefined;
  }

  /** Restart: a new run with the same configuration, hit counts counted again. */
  async restart(): Promise<void> {
    if (this.live) await this.handOff(this.live);
    this.paused.patch = {};
    this.breakpoints.resetHits();
    this.intent = this.host.launch()?.args.stopOnEntry ? "entry" : "continue";
    this.host.console("restart: a new run with the same configuration");
    this.start(firstCommand(this.host.launch()!), { skipFirst: false });
  }

  /** Stops the live runner to go on elsewhere; the run it ran ends `stopped` at its checkpoint (resumable). */
  private async handOff(live: RunnerLink): Promise<RunnerOutcome> {
    const outcome = await live.stop();
    if (this.live === live) this.live = undefined;
    this.reader.stale();
    return outcome;
  }

  /** Terminate: the runner finishes the superstep it is in, commits, marks the run stopped and closes the case file. */
  async stopRunner(): Promise<void> {
    if (!this.live) return;
    const outcome = await this.handOff(this.live);
    if (outcome.done)
      this.host.console(`run ${outcome.done.runId} ${outcome.done.status}: resumable from its last checkpoint in ${outcome.done.caseFile}`);
  }

  /** Step Back: shows the previous checkpoint (its Variables), after the client has its response. */
  async stepBack(respond: () => void): Promise<void> {
    const store = await this.reader.snapshot();
    const prev = this.paused.shown && this.reader.previous(store, this.paused.shown.checkpoint);
    respond();
    if (!prev) return this.stoppedAtView("step", "already at the run's first checkpoint");
    this.paused.show(prev.runId, prev.id);
    this.stoppedAtView("step");
  }

  /** Reverse Continue: back to the previous checkpoint where a breakpoint would have hit (hits not counted). */
  async reverseContinue(respond: () => void): Promise<void> {
    const store = await this.reader.snapshot();
    respond();
    let at = this.paused.shown && this.reader.previous(store, this.paused.shown.checkpoint);
    let first = at;
    while (at) {
      const hit = await breakpointsAt(this.boundaryContext(), at.id, [...new Set(at.pending.map((m) => m.to))], false);
      for (const p of hit.problems) this.host.console(p, "stderr");
      if (hit.stop.length) {
        this.paused.show(at.runId, at.id);
        return this.stoppedAtView("breakpoint", undefined, hit.stop);
      }
      first = at;
      at = this.reader.previous(store, at.id);
    }
    if (first) this.paused.show(first.runId, first.id);
    this.stoppedAtView("entry", "no breakpoint before: the run's first checkpoint");
  }

  private stoppedAtView(reason: string, description?: string, hit?: BoundBreakpoint[]): void {
    const view = this.paused.shown;
    if (!view) return;
    const live = this.live?.paused?.checkpoint === view.checkpoint;
    const said = description ?? `${view.checkpoint}${live ? "" : " (history: going on from here makes a branch)"}`;
    this.stopped(reason, view.runId, said, hit ? { hitBreakpointIds: hit.map((b) => b.id) } : {});
  }
}
