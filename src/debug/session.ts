import path from "node:path";
import {
  Breakpoint,
  ContinuedEvent,
  InitializedEvent,
  LoggingDebugSession,
  OutputEvent,
  Response,
  Source,
  TerminatedEvent,
} from "@vscode/debugadapter";
import type { DebugProtocol } from "@vscode/debugprotocol";
import { EXCEPTION_FILTERS, EXECUTOR_DEBUGGER_ATTACHED, ExecutorDebuggerAttachedSchema, type ExceptionFilter } from "../protocol/debug";
import { dapRequestProblem } from "../protocol/dapRequests";
import { DebugHelper, helperCwd } from "./debugHelper";
import { Breakpoints, samePath, type BoundBreakpoint } from "./breakpoints";
import { CaseReader } from "./caseReader";
import type { Intent } from "./boundary";
import { PausedView, Refusal } from "./pausedView";
import { firstCommand, prepareLaunch, type Launch } from "./launch";
import type { ExecutorSource } from "./executorSources";
import { Stepping, type CasefileDebugSessionOptions } from "./stepping";

export type { CasefileDebugSessionOptions } from "./stepping";

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

export class CasefileDebugSession extends LoggingDebugSession {
  private launch?: Launch;
  private caseFile = "";
  private workflowFile = "";
  private sources: ExecutorSource[] = [];
  private readonly breakpoints = new Breakpoints(undefined, []);
  private readonly filters = new Set<ExceptionFilter>(EXCEPTION_FILTERS.filter((f) => f.default).map((f) => f.filter));
  private configured!: () => void;
  private readonly configurationDone = new Promise<void>((r) => (this.configured = r));

  private readonly reader = new CaseReader(() => this.caseFile);
  /** What the debugger shows: a checkpoint, live (the runner waits there) or from history. */
  private readonly paused = new PausedView(this.reader, {
    console: (line) => this.console(line),
    sendEvent: (e) => this.sendEvent(e),
    workflow: () => ({ file: this.workflowFile, sources: this.sources }),
    evaluate: (expressions, scope) => this.helper.evaluate(expressions, scope),
    toClient: {
      path: (p) => this.convertDebuggerPathToClient(p),
      line: (l) => this.convertDebuggerLineToClient(l),
      column: (c) => this.convertDebuggerColumnToClient(c),
    },
  });
  private readonly stepping: Stepping;
  private readonly helper: DebugHelper;
  private ended = false;

  constructor(private readonly opts: CasefileDebugSessionOptions) {
    super();
    this.helper = new DebugHelper({
      runnerPath: opts.runnerPath,
      env: opts.env ?? process.env,
      cwd: () => helperCwd(this.workflowFile),
      ...(opts.evaluateTimeoutMs ? { timeoutMs: opts.evaluateTimeoutMs } : {}),
    });
    this.stepping = new Stepping(
      {
        options: this.opts,
        launch: () => this.launch,
        kindOf: (x) => this.kindOf(x),
        console: (line, category) => this.console(line, category),
        sendEvent: (e) => this.sendEvent(e),
        evaluate: (expressions, scope) => this.helper.evaluate(expressions, scope),
        finish: () => this.finish(),
        ended: () => this.ended,
      },
      this.reader,
      this.paused,
      this.breakpoints,
      this.filters,
    );
    // DebugSession shuts the process down on any "error" event, and the protocol server emits one
    // for a message it cannot parse: one malformed message would end `casefile dap` (exit 0, no
    // word). A message that cannot be handled is dropped, said in the Debug Console; a broken
    // stream still ends the session.
    this.removeAllListeners("error");
    this.on("error", (e: DebugProtocol.Event) => {
      const problem = String(e.body);
      if (problem.startsWith("Error handling data")) return this.console(`debug adapter: dropped a message: ${problem}`, "stderr");
      this.shutdown();
    });
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
    this.stepping.intent = launch.args.stopOnEntry ? "entry" : "continue";
    try {
      this.stepping.start(firstCommand(launch), { skipFirst: false });
    } catch (e) {
      return this.refuse(response, "RUNNER_FAILED", (e as Error).message);
    }
    this.sendResponse(response);
  }

  private finish(): void {
    if (this.ended) return;
    this.ended = true;
    this.sendEvent(new TerminatedEvent());
  }

  // ---------------------------------------------------------------- going forwards

  /** The adapter starts the runs it debugs: there is nothing to attach to. */
  protected override attachRequest(response: DebugProtocol.AttachResponse): void {
    this.refuse(
      response,
      "UNSUPPORTED",
      'the Casefile debugger launches runs: use request "launch" (with `resumeFrom` to go on from a checkpoint)',
    );
  }

  /** Every request from the client: its arguments are parsed first (dapRequests.ts); a bad one is refused naming the argument. */
  protected override dispatchRequest(request: DebugProtocol.Request): void {
    const problem = dapRequestProblem(request);
    if (problem) return this.refuse(new Response(request), "INVALID_REQUEST", problem);
    super.dispatchRequest(request);
  }

  /** `casefile/executorDebuggerAttached`: the client's JavaScript debugger is attached to the runner with this pid (or, `failed`, could not be). */
  protected override customRequest(command: string, response: DebugProtocol.Response, args: unknown): void {
    if (command !== EXECUTOR_DEBUGGER_ATTACHED)
      return this.refuse(response, "UNKNOWN_REQUEST", `the Casefile debug adapter has no request "${command}"`);
    const parsed = ExecutorDebuggerAttachedSchema.safeParse(args);
    if (!parsed.success)
      return this.refuse(response, "INVALID_REQUEST", `${command} needs the runner's pid: ${parsed.error.issues[0]!.message}`);
    const { pid, failed } = parsed.data;
    if (this.stepping.live?.debuggerAttached(pid, failed === undefined))
      this.console(
        failed === undefined
          ? `executor code: a debugger is attached to the runner (pid ${pid})`
          : `executor code: no debugger could attach to the runner (pid ${pid}): ${failed}; breakpoints in executor code will not bind`,
        failed === undefined ? "console" : "stderr",
      );
    this.sendResponse(response);
  }

  protected override continueRequest(response: DebugProtocol.ContinueResponse, args: DebugProtocol.ContinueArguments): Promise<void> {
    return this.goOn(response, "continue", "CANNOT_CONTINUE", { allThreadsContinued: true }, { threadId: args.threadId });
  }

  protected override nextRequest(response: DebugProtocol.NextResponse, args: DebugProtocol.NextArguments): Promise<void> {
    return this.goOn(response, "step", "CANNOT_STEP", undefined, { threadId: args.threadId });
  }

  /**
   * Step Into at a boundary: with debugExecutorCode and js-debug attached, the runner pauses on the
   * first line of the executor code the superstep calls (js-debug shows it); otherwise it is Next.
   */
  protected override stepInRequest(response: DebugProtocol.StepInResponse, args: DebugProtocol.StepInArguments): Promise<void> {
    return this.goOn(response, "step", "CANNOT_STEP", undefined, { into: true, threadId: args.threadId });
  }

  protected override stepOutRequest(response: DebugProtocol.StepOutResponse, args: DebugProtocol.StepOutArguments): Promise<void> {
    return this.goOn(response, "step", "CANNOT_STEP", undefined, { threadId: args.threadId });
  }

  /**
   * Continue, Next, Step In/Out, Restart Frame: go forwards, or refuse saying why not. Says
   * `continued` too: the editor's status bar and Run Inspector send these requests to the session
   * directly (src/extension/debugSessions.ts), and VS Code's toolbar and Call Stack then follow.
   */
  private async goOn<R extends DebugProtocol.Response>(
    response: R,
    intent: Intent,
    code: string,
    body?: R["body"],
    opts: { branch?: boolean; from?: string; into?: boolean; threadId?: number } = {},
  ): Promise<void> {
    const problem = await this.stepping.forward(intent, opts);
    if (problem) return this.refuse(response, code, problem);
    if (body) response.body = body;
    this.sendResponse(response);
    if (!this.ended) this.sendEvent(new ContinuedEvent(opts.threadId ?? 1, true));
  }

  protected override pauseRequest(response: DebugProtocol.PauseResponse): void {
    this.stepping.intent = "pause";
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
    await this.stepping.restart();
    this.sendResponse(response);
  }

  protected override async terminateRequest(response: DebugProtocol.TerminateResponse): Promise<void> {
    await this.stepping.stopRunner();
    this.sendResponse(response);
    this.finish();
  }

  protected override async disconnectRequest(response: DebugProtocol.DisconnectResponse): Promise<void> {
    await this.stepping.stopRunner();
    this.helper.close();
    this.reader.close();
    this.ended = true;
    this.sendResponse(response);
  }

  // ---------------------------------------------------------------- going back (stepping.ts)

  protected override stepBackRequest(response: DebugProtocol.StepBackResponse): Promise<void> {
    return this.stepping.stepBack(() => this.sendResponse(response));
  }

  protected override reverseContinueRequest(response: DebugProtocol.ReverseContinueResponse): Promise<void> {
    return this.stepping.reverseContinue(() => this.sendResponse(response));
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
    return this.answer(response, () => this.paused.setVariable(args, (patch) => this.helper.check(this.workflowFile, patch)));
  }

  protected override evaluateRequest(response: DebugProtocol.EvaluateResponse, args: DebugProtocol.EvaluateArguments): Promise<void> {
    return this.answer(response, () => this.paused.evaluate(args));
  }

  protected override exceptionInfoRequest(response: DebugProtocol.ExceptionInfoResponse): void {
    const x = this.stepping.lastException;
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
    // Conditions and logpoints are evaluated by the debug helper: start it now, not at the first boundary that needs it.
    if (bound.some((b) => b.verified && (b.condition || b.logMessage))) this.helper.warm();
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
