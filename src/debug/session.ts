import path from "node:path";
import {
  Breakpoint,
  InitializedEvent,
  LoggingDebugSession,
  OutputEvent,
  Source,
  StoppedEvent,
  TerminatedEvent,
  Event as DapEvent,
} from "@vscode/debugadapter";
import type { DebugProtocol } from "@vscode/debugprotocol";
import {
  EXCEPTION_FILTERS,
  EXECUTOR_DEBUGGER_ATTACHED,
  ExecutorDebuggerAttachedSchema,
  INSPECTOR_EVENT,
  type ExceptionFilter,
} from "../protocol/debug";
import type { ProviderConfig, RunCommand } from "../protocol/runner";
import type { RunnerOutcome } from "../runner/client";
import { PatchChecker, RunnerLink } from "./runnerLink";
import { Breakpoints, samePath, type BoundBreakpoint } from "./breakpoints";
import { CaseReader } from "./caseReader";
import { breakpointsAt, decideBoundary, pausedLabel, type BoundaryContext, type Intent } from "./boundary";
import { PausedView, Refusal } from "./pausedView";
import { firstCommand, prepareLaunch, type Launch } from "./launch";
import type { ExecutorSource } from "./executorSources";

/**
 * The Casefile debug adapter: a DAP session over a workflow run. It drives the runner child
 * process (src/runner/client.ts, always in step mode: every superstep boundary comes back here,
 * and the session decides whether to stop or let it go on) and reads the case file through a
 * read-only store for the Variables, the Call Stack and history. Superstep boundaries are its
 * stopping points; checkpoints are its history, so Step Back reads an earlier checkpoint, and
 * going forwards from one (or from an edited state) starts a branch run: history is never
 * rewritten. No `vscode` import: the extension runs it inline (DebugAdapterInlineImplementation),
 * `casefile dap` serves it on stdio (debugAdapter.ts).
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
}

export class CasefileDebugSession extends LoggingDebugSession {
  private launch?: Launch;
  private caseFile = "";
  private workflowFile = "";
  private sources: ExecutorSource[] = [];
  private readonly breakpoints = new Breakpoints(undefined, []);
  private readonly filters = new Set<ExceptionFilter>(EXCEPTION_FILTERS.filter((f) => f.default).map((f) => f.filter));
  private configured!: () => void;
  private readonly configurationDone = new Promise<void>((r) => (this.configured = r));

  private live?: RunnerLink;
  private intent: Intent = "continue";
  private lastException?: { filter: ExceptionFilter; description: string };

  private readonly reader = new CaseReader(() => this.caseFile);
  /** What the debugger shows: a checkpoint, live (the runner waits there) or from history. */
  private readonly paused = new PausedView(this.reader, {
    console: (line) => this.console(line),
    sendEvent: (e) => this.sendEvent(e),
    workflow: () => ({ file: this.workflowFile, sources: this.sources }),
    toClient: {
      path: (p) => this.convertDebuggerPathToClient(p),
      line: (l) => this.convertDebuggerLineToClient(l),
      column: (c) => this.convertDebuggerColumnToClient(c),
    },
  });
  private readonly checker: PatchChecker;
  private ended = false;

  constructor(private readonly opts: CasefileDebugSessionOptions) {
    super();
    this.checker = new PatchChecker({ runnerPath: opts.runnerPath, env: opts.env ?? process.env });
    this.setDebuggerLinesStartAt1(true);
    this.setDebuggerColumnsStartAt1(true);
  }

  // ---------------------------------------------------------------- setup

  protected override initializeRequest(response: DebugProtocol.InitializeResponse): void {
    response.body = {
      ...response.body,
      supportsConfigurationDoneRequest: true,
      supportsFunctionBreakpoints: true,
      supportsConditionalBreakpoints: true,
      supportsHitConditionalBreakpoints: true,
      supportsLogPoints: true,
      supportsEvaluateForHovers: true,
      supportsSetVariable: true,
      supportsStepBack: true,
      supportsRestartFrame: true,
      supportsRestartRequest: true,
      supportsTerminateRequest: true,
      supportsExceptionInfoRequest: true,
      exceptionBreakpointFilters: EXCEPTION_FILTERS.map((f) => ({ filter: f.filter, label: f.label, default: f.default })),
    };
    this.sendResponse(response);
  }

  protected override configurationDoneRequest(response: DebugProtocol.ConfigurationDoneResponse): void {
    this.configured();
    this.sendResponse(response);
  }

  /** Called by the client once, with the configuration: parses it, then starts the runner when configuration is done. */
  protected override async launchRequest(response: DebugProtocol.LaunchResponse, raw: DebugProtocol.LaunchRequestArguments): Promise<void> {
    let launch: Launch;
    try {
      launch = await prepareLaunch(raw, this.reader, (file) => (this.caseFile = file));
    } catch (e) {
      return this.refuse(response, (e as { code?: string }).code ?? "INVALID_LAUNCH", (e as Error).message);
    }
    this.launch = launch;
    this.workflowFile = launch.workflowFile;
    this.sources = launch.sources;
    this.breakpoints.setWorkflow(this.workflowFile, this.sources);
    // Breakpoints come after this: they bind to the workflow file the launch names.
    this.sendEvent(new InitializedEvent());
    await this.configurationDone;
    this.intent = launch.args.stopOnEntry ? "entry" : "continue";
    try {
      this.startRunner(firstCommand(launch), { skipFirst: false });
    } catch (e) {
      return this.refuse(response, "RUNNER_FAILED", (e as Error).message);
    }
    this.sendResponse(response);
  }

  // ---------------------------------------------------------------- the runner

  /** Starts the runner for one command, in step mode: every boundary comes back to onPaused. */
  private startRunner(command: RunCommand, opts: { skipFirst: boolean }): void {
    const a = this.launch!.args;
    const provider = a.provider ?? this.opts.defaults?.provider;
    const tokenBudget = a.tokenBudget ?? this.opts.defaults?.tokenBudget;
    this.reader.stale();
    const live = new RunnerLink(
      {
        runnerPath: this.opts.runnerPath,
        env: this.opts.env ?? process.env,
        command,
        workflowFile: this.workflowFile,
        ...(provider ? { provider } : {}),
        ...(tokenBudget ? { tokenBudget } : {}),
        inspect: a.debugExecutorCode === true,
        ...(this.opts.waitForExecutorDebugger ? { waitForDebuggerMs: this.opts.executorDebuggerTimeoutMs ?? 30_000 } : {}),
        skipFirst: opts.skipFirst,
      },
      {
        console: (line, category) => this.console(line, category),
        inspector: (body) => this.sendEvent(new DapEvent(INSPECTOR_EVENT, body)),
        event: (_link, runId) => {
          this.reader.stale();
          this.paused.threadOf(runId);
        },
        boundary: (link) => void this.onBoundary(link).catch((e: Error) => this.console(`debugger: ${e.message}`, "stderr")),
        answerModel: (request) =>
          this.opts.answerModelRequest?.(request) ??
          Promise.resolve({
            ok: false as const,
            error: "the vscode-lm provider needs the editor: this debug adapter has no language model (set `provider`)",
          }),
        ended: (link, outcome) => void this.onRunnerEnded(link, outcome),
      },
    );
    this.live = live;
    if (live.handle.pid !== undefined) {
      this.sendEvent(
        new DapEvent("process", { name: this.workflowFile, systemProcessId: live.handle.pid, isLocalProcess: true, startMethod: "launch" }),
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
    for (const line of logs) this.console(line);
    for (const p of problems) this.console(p, "stderr");
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
    this.sendEvent(ev);
  }

  private boundaryContext(): BoundaryContext {
    return { filters: this.filters, breakpoints: this.breakpoints, reader: this.reader, kindOf: (x) => this.kindOf(x) };
  }

  /** The runner exited: the run ended (completed, waiting, failed, stopped) or was handed off. */
  private async onRunnerEnded(live: RunnerLink, outcome: RunnerOutcome): Promise<void> {
    this.reader.stale();
    if (this.live === live) this.live = undefined;
    if (live.handedOff || this.ended) return;
    const done = outcome.done;
    if (!done) {
      const err = outcome.error ?? { code: "RUNNER_CRASHED", message: `runner exited with code ${outcome.exitCode}` };
      this.console(`${err.code}: ${err.message}`, "stderr");
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
    this.finish();
  }

  private finish(): void {
    if (this.ended) return;
    this.ended = true;
    this.sendEvent(new TerminatedEvent());
  }

  // ---------------------------------------------------------------- going forwards

  /** Next, Continue, restartFrame: from the live boundary, or from a checkpoint in history (a branch). */
  private async forward(intent: Intent, opts: { branch?: boolean; from?: string } = {}): Promise<string | undefined> {
    const from = opts.from ?? this.paused.shown?.checkpoint;
    const live = this.live;
    const edited = this.paused.edited;
    const atLive = live?.paused !== undefined && from === live.paused.checkpoint;
    this.intent = intent;
    this.paused.forget();
    if (live && atLive && !edited && !opts.branch) {
      live.paused = undefined;
      live.release();
      return undefined;
    }
    if (!from) return "there is no checkpoint to go on from";
    const store = await this.reader.snapshot();
    const cp = store.getCheckpoint(from);
    if (!cp) return `checkpoint ${from} is not in the case file`;
    if (cp.pending.length === 0 && !edited && !opts.branch) {
      this.console(`run ${cp.runId} ended at ${cp.id}: nothing runs after it`);
      this.finish();
      return undefined;
    }
    if (live) await this.handOff(live);
    const patch = this.paused.takePatch();
    const latest = store.latestCheckpoint(cp.runId);
    if (patch) this.console(`going on from ${cp.id} with edited ${Object.keys(patch).join(", ")}: a branch run`);
    else if (opts.branch) this.console(`re-running superstep ${cp.superstep + 1} from ${cp.id}: a branch run`);
    else if (latest && latest.id !== cp.id)
      this.console(`going on from ${cp.id}, earlier than the run's latest (${latest.id}): a branch run`);
    this.startRunner(
      {
        kind: "resume",
        caseFile: this.caseFile,
        checkpointId: cp.id,
        workflowPath: this.workflowFile,
        ...(patch ? { patch } : {}),
        ...(opts.branch ? { branch: true } : {}),
      },
      { skipFirst: true },
    );
    return undefined;
  }

  /** `casefile/executorDebuggerAttached`: the client's JavaScript debugger is attached to the runner with this pid. */
  protected override customRequest(command: string, response: DebugProtocol.Response, args: unknown): void {
    if (command !== EXECUTOR_DEBUGGER_ATTACHED) return super.customRequest(command, response, args);
    const parsed = ExecutorDebuggerAttachedSchema.safeParse(args);
    if (!parsed.success)
      return this.refuse(response, "INVALID_REQUEST", `${command} needs the runner's pid: ${parsed.error.issues[0]!.message}`);
    const live = this.live;
    if (live?.debuggerAttached(parsed.data.pid))
      this.console(`executor code: a debugger is attached to the runner (pid ${parsed.data.pid})`);
    this.sendResponse(response);
  }

  /** Stops the live runner to go on elsewhere; the run it ran ends `stopped` at its checkpoint (resumable). */
  private async handOff(live: RunnerLink): Promise<RunnerOutcome> {
    const outcome = await live.stop();
    if (this.live === live) this.live = undefined;
    this.reader.stale();
    return outcome;
  }

  protected override continueRequest(response: DebugProtocol.ContinueResponse): Promise<void> {
    return this.goOn(response, "continue", "CANNOT_CONTINUE", { allThreadsContinued: true });
  }

  protected override nextRequest(response: DebugProtocol.NextResponse): Promise<void> {
    return this.goOn(response, "step", "CANNOT_STEP");
  }

  /** Step In at a boundary is Next: the executor code's own stepping is js-debug's (debugExecutorCode). */
  protected override stepInRequest(response: DebugProtocol.StepInResponse): Promise<void> {
    return this.goOn(response, "step", "CANNOT_STEP");
  }

  protected override stepOutRequest(response: DebugProtocol.StepOutResponse): Promise<void> {
    return this.goOn(response, "step", "CANNOT_STEP");
  }

  /** Continue, Next, Step In/Out, Restart Frame: go forwards, or refuse saying why not. */
  private async goOn<R extends DebugProtocol.Response>(
    response: R,
    intent: Intent,
    code: string,
    body?: R["body"],
    opts: { branch?: boolean; from?: string } = {},
  ): Promise<void> {
    const problem = await this.forward(intent, opts);
    if (problem) return this.refuse(response, code, problem);
    if (body) response.body = body;
    this.sendResponse(response);
  }

  protected override pauseRequest(response: DebugProtocol.PauseResponse): void {
    this.intent = "pause";
    this.sendResponse(response);
  }

  protected override async restartFrameRequest(
    response: DebugProtocol.RestartFrameResponse,
    args: DebugProtocol.RestartFrameArguments,
  ): Promise<void> {
    let frame;
    try {
      frame = this.paused.frame(args.frameId);
    } catch (e) {
      return this.refuse(response, (e as Refusal).code, (e as Refusal).message);
    }
    return this.goOn(response, "restart", "CANNOT_RESTART", undefined, { branch: true, from: frame.checkpoint });
  }

  protected override async restartRequest(response: DebugProtocol.RestartResponse): Promise<void> {
    if (this.live) await this.handOff(this.live);
    this.paused.patch = {};
    this.breakpoints.resetHits();
    this.intent = this.launch?.args.stopOnEntry ? "entry" : "continue";
    this.console("restart: a new run with the same configuration");
    this.startRunner(firstCommand(this.launch!), { skipFirst: false });
    this.sendResponse(response);
  }

  protected override async terminateRequest(response: DebugProtocol.TerminateResponse): Promise<void> {
    await this.stopRunner();
    this.sendResponse(response);
    this.finish();
  }

  protected override async disconnectRequest(response: DebugProtocol.DisconnectResponse): Promise<void> {
    await this.stopRunner();
    this.checker.close();
    this.reader.close();
    this.ended = true;
    this.sendResponse(response);
  }

  /** Terminate: the runner finishes the superstep it is in, commits, marks the run stopped and closes the case file. */
  private async stopRunner(): Promise<void> {
    if (!this.live) return;
    const outcome = await this.handOff(this.live);
    if (outcome.done)
      this.console(`run ${outcome.done.runId} ${outcome.done.status}: resumable from its last checkpoint in ${outcome.done.caseFile}`);
  }

  // ---------------------------------------------------------------- going back

  protected override async stepBackRequest(response: DebugProtocol.StepBackResponse): Promise<void> {
    const store = await this.reader.snapshot();
    const prev = this.paused.shown && this.reader.previous(store, this.paused.shown.checkpoint);
    this.sendResponse(response);
    if (!prev) return this.stoppedAtView("step", "already at the run's first checkpoint");
    this.paused.show(prev.runId, prev.id);
    this.stoppedAtView("step");
  }

  protected override async reverseContinueRequest(response: DebugProtocol.ReverseContinueResponse): Promise<void> {
    const store = await this.reader.snapshot();
    this.sendResponse(response);
    let at = this.paused.shown && this.reader.previous(store, this.paused.shown.checkpoint);
    let first = at;
    while (at) {
      const hit = await breakpointsAt(this.boundaryContext(), at.id, [...new Set(at.pending.map((m) => m.to))], false);
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

  // ---------------------------------------------------------------- what it shows (pausedView.ts)

  protected override threadsRequest(response: DebugProtocol.ThreadsResponse): void {
    response.body = { threads: this.paused.threadList() };
    this.sendResponse(response);
  }

  protected override stackTraceRequest(response: DebugProtocol.StackTraceResponse, args: DebugProtocol.StackTraceArguments): Promise<void> {
    return this.answer(response, () => this.paused.stackTrace(args));
  }

  protected override scopesRequest(response: DebugProtocol.ScopesResponse, args: DebugProtocol.ScopesArguments): Promise<void> {
    return this.answer(response, () => this.paused.scopes(args.frameId));
  }

  protected override variablesRequest(response: DebugProtocol.VariablesResponse, args: DebugProtocol.VariablesArguments): Promise<void> {
    return this.answer(response, async () => this.paused.children(args));
  }

  /** Edit-then-fork: checked with the key's schema by the patch checker; Continue runs a branch with it. */
  protected override setVariableRequest(
    response: DebugProtocol.SetVariableResponse,
    args: DebugProtocol.SetVariableArguments,
  ): Promise<void> {
    return this.answer(response, () => this.paused.setVariable(args, (patch) => this.checker.check(this.workflowFile, patch)));
  }

  protected override evaluateRequest(response: DebugProtocol.EvaluateResponse, args: DebugProtocol.EvaluateArguments): Promise<void> {
    return this.answer(response, () => this.paused.evaluate(args));
  }

  protected override exceptionInfoRequest(response: DebugProtocol.ExceptionInfoResponse): void {
    const x = this.lastException;
    response.body = {
      exceptionId: x?.filter ?? "none",
      description: x?.description ?? "no exception",
      breakMode: "always",
    };
    this.sendResponse(response);
  }

  // ---------------------------------------------------------------- breakpoints

  protected override setBreakPointsRequest(
    response: DebugProtocol.SetBreakpointsResponse,
    args: DebugProtocol.SetBreakpointsArguments,
  ): void {
    const file = args.source.path ? this.convertClientPathToDebugger(args.source.path) : "";
    const bound = this.breakpoints.setLineBreakpoints(
      file,
      (args.breakpoints ?? []).map((b) => ({ ...b, line: this.convertClientLineToDebugger(b.line) })),
    );
    const inWorkflow = samePath(file, this.workflowFile || "/");
    response.body = {
      breakpoints: bound.map((b) => this.toDap(b, inWorkflow ? args.source : undefined)),
    };
    this.sendResponse(response);
  }

  protected override setFunctionBreakPointsRequest(
    response: DebugProtocol.SetFunctionBreakpointsResponse,
    args: DebugProtocol.SetFunctionBreakpointsArguments,
  ): void {
    const bound = this.breakpoints.setFunctionBreakpoints(
      args.breakpoints,
      this.sources.map((s) => s.name),
    );
    const source = new Source(path.basename(this.workflowFile), this.convertDebuggerPathToClient(this.workflowFile));
    response.body = { breakpoints: bound.map((b) => this.toDap(b, source)) };
    this.sendResponse(response);
  }

  protected override setExceptionBreakPointsRequest(
    response: DebugProtocol.SetExceptionBreakpointsResponse,
    args: DebugProtocol.SetExceptionBreakpointsArguments,
  ): void {
    const known = new Set<string>(EXCEPTION_FILTERS.map((f) => f.filter));
    this.filters.clear();
    const wanted = [...args.filters, ...(args.filterOptions ?? []).map((o) => o.filterId)];
    for (const f of wanted) if (known.has(f)) this.filters.add(f as ExceptionFilter);
    response.body = {
      breakpoints: wanted.map((f) => ({ verified: known.has(f), ...(known.has(f) ? {} : { message: `no exception filter "${f}"` }) })),
    };
    this.sendResponse(response);
  }

  private toDap(b: BoundBreakpoint, source: DebugProtocol.Source | undefined): DebugProtocol.Breakpoint {
    const out = new Breakpoint(
      b.verified,
      b.line !== undefined ? this.convertDebuggerLineToClient(b.line) : undefined,
    ) as DebugProtocol.Breakpoint;
    out.id = b.id;
    if (source) out.source = source;
    if (b.message) out.message = b.message;
    return out;
  }

  // ---------------------------------------------------------------- helpers

  private kindOf(executor: string): string | undefined {
    return this.sources.find((s) => s.name === executor)?.kind;
  }

  private console(line: string, category: "console" | "stderr" | "stdout" = "console"): void {
    this.sendEvent(new OutputEvent(line + "\n", category));
  }

  /** Sends the body `build` makes, or its Refusal as an error response. */
  private async answer<R extends DebugProtocol.Response>(response: R, build: () => Promise<R["body"]>): Promise<void> {
    try {
      response.body = await build();
    } catch (e) {
      if (e instanceof Refusal) return this.refuse(response, e.code, e.message);
      return this.refuse(response, "INTERNAL", (e as Error).stack ?? String(e));
    }
    this.sendResponse(response);
  }

  private refuse(response: DebugProtocol.Response, code: string, message: string): void {
    this.sendErrorResponse(response, {
      id: 1,
      format: `${code}: ${message.replace(/[{}]/g, (c) => (c === "{" ? "(" : ")"))}`,
      showUser: true,
    });
  }
}
