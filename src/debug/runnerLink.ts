import path from "node:path";
import type { ExceptionFilter, InspectorEvent } from "../protocol/debug";
import type { OtelConfig, ProviderConfig, RunCommand, RunnerToHost } from "../protocol/runner";
import { startRunner, type RunnerHandle, type RunnerOutcome } from "../runner/client";
import { CdpClient } from "./cdpClient";
import { narrate } from "./narration";

/**
 * The debug session's link to one runner child process (src/runner/client.ts, always in step
 * mode): what it is doing (the boundary it waits at, the exception filters that fired since the
 * last one), its inspector when it runs with --inspect (debugExecutorCode), and the wait for a
 * JavaScript debugger to attach before any superstep starts. The session (session.ts) makes one
 * per command it runs and decides, at each boundary, whether to stop or `release` it.
 */

export interface RunnerLinkOptions {
  runnerPath: string;
  env: NodeJS.ProcessEnv;
  command: RunCommand;
  workflowFile: string;
  provider?: ProviderConfig;
  tokenBudget?: number;
  /** Send the run as an OpenTelemetry trace when it ends (the launch configuration's `otel`). */
  otel?: OtelConfig;
  /** Start with --inspect on loopback (debugExecutorCode). */
  inspect: boolean;
  /** With inspect: executor functions can be stepped into (Step Into). */
  stepInto: boolean;
  /** Hold every superstep until `debuggerAttached`, or this many ms (undefined: do not wait). */
  waitForDebuggerMs?: number;
  /** The first boundary of a runner started from a stop is where the user already was. */
  skipFirst: boolean;
}

export interface RunnerLinkHost {
  console(line: string, category?: "console" | "stderr"): void;
  /** The runner's inspector listens (debugExecutorCode): the client may attach js-debug. */
  inspector(body: InspectorEvent): void;
  /** An event of run `runId` was written to the case file (narrated already). */
  event(link: RunnerLink, runId: string): void;
  /** The runner waits at a superstep boundary (`paused` is set). */
  boundary(link: RunnerLink): void;
  /** A model request of a `vscode-lm` run: the answer goes back to the runner. */
  answerModel(request: ModelRequestMessage["request"]): Promise<{ ok: true; text: string; model?: string } | { ok: false; error: string }>;
  ended(link: RunnerLink, outcome: RunnerOutcome): void;
}

type ModelRequestMessage = Extract<RunnerToHost, { type: "modelRequest" }>;

export class RunnerLink {
  readonly handle: RunnerHandle;
  runId?: string;
  /** Set while the runner waits at a boundary. */
  paused?: { checkpoint: string; superstep: number; executors: string[] };
  boundaries = 0;
  readonly skipFirst: boolean;
  /** Stopped on purpose to go on elsewhere (a branch, a restart, terminate): its end is not the session's. */
  handedOff = false;
  /** Exception filters that fired since the last boundary. */
  exceptions: { filter: ExceptionFilter; description: string }[] = [];
  /** Commit or agent steps completed since the last boundary (for the proposal filter). */
  judged = false;
  /** The boundary the runner was last released from (it runs the superstep after it); set by the session. */
  leftFrom?: string;
  /** The runner's inspector (debugExecutorCode): where its pause in executor code can be resumed from. */
  private inspectorUrl?: string;
  /** A JavaScript debugger said it is attached to this runner (`casefile/executorDebuggerAttached`). */
  debuggerAttachedYet = false;
  /** Set when supersteps wait for a JavaScript debugger to attach: resolves once it has, or on timeout. */
  private readonly ready?: Promise<void>;
  private attached?: () => void;
  private waiting = false;

  constructor(opts: RunnerLinkOptions, host: RunnerLinkHost) {
    this.skipFirst = opts.skipFirst;
    this.handle = startRunner({
      runnerPath: opts.runnerPath,
      command: opts.command,
      stepMode: true,
      ...(opts.provider ? { provider: opts.provider } : {}),
      ...(opts.tokenBudget ? { defaultBudget: { hard: opts.tokenBudget } } : {}),
      ...(opts.otel ? { otel: opts.otel } : {}),
      env: opts.env,
      cwd: path.dirname(opts.workflowFile),
      ...(opts.inspect ? { execArgv: ["--inspect=127.0.0.1:0"], stepInto: opts.stepInto } : {}),
      onStderr: (t) => this.onStderr(t, host),
      onMessage: (m) => this.onMessage(m, host),
      onInvalid: (problem) => host.console(`runner: ${problem}`, "stderr"),
    });
    const ms = opts.waitForDebuggerMs;
    if (opts.inspect && ms !== undefined) {
      this.waiting = true;
      this.ready = new Promise<void>((r) => (this.attached = r)).then(() => {
        this.waiting = false;
      });
      const timer = setTimeout(() => {
        host.console(
          `executor code: no debugger attached to the runner within ${ms / 1000} s: breakpoints in executor code may not bind`,
          "stderr",
        );
        this.attached?.();
      }, ms);
      void this.ready.then(() => clearTimeout(timer));
      void this.handle.finished.then(() => this.attached?.());
    }
    void this.handle.finished.then((outcome) => host.ended(this, outcome));
  }

  /**
   * Lets the runner run its next superstep (at once, or once a JavaScript debugger is attached to
   * it); `into`: Step Into, pausing on the first line of the executor code it calls.
   */
  release(into = false): void {
    // Into only with a debugger attached (not one that failed to attach or never came): none would show where it stopped.
    const go = (): void => (into && this.debuggerAttachedYet ? this.handle.send({ type: "stepInto" }) : this.handle.control("step"));
    if (!this.ready) return go();
    void this.ready.then(() => {
      if (!this.handedOff) go();
    });
  }

  /** Supersteps of this runner still wait for a JavaScript debugger to attach (the editor attaches js-debug itself). */
  get waitsForDebugger(): boolean {
    return this.waiting;
  }

  /**
   * The client's JavaScript debugger is attached to the process with this pid (`ok`), or could not
   * be: either way its supersteps wait no longer. True when it is this runner.
   */
  debuggerAttached(pid: number, ok = true): boolean {
    if (this.handle.pid !== pid) return false;
    if (ok) this.debuggerAttachedYet = true;
    this.attached?.();
    return true;
  }

  /**
   * The runner is between boundaries and may be paused in executor code by the JavaScript
   * debugger (a breakpoint in run(), Step Into): resumes it through its inspector, as the
   * debugger's own Continue would, so the debugger's toolbar shows it running too. Called when
   * Continue or Next reaches the Casefile session then, and before a stop (a paused runner reads
   * no message). True when it was paused there.
   */
  async resumeExecutorCode(): Promise<boolean> {
    if (!this.inspectorUrl || this.paused) return false;
    let cdp: CdpClient | undefined;
    try {
      cdp = await CdpClient.connect(this.inspectorUrl);
      await cdp.send("Debugger.enable");
      await cdp.send("Debugger.resume");
      return true;
    } catch {
      // Not paused ("can only perform operation while paused"), or the runner is gone: nothing to resume.
      return false;
    } finally {
      cdp?.close();
    }
  }

  /** Stops the runner: it finishes the superstep it is in, commits, marks the run stopped (resumable) and exits. */
  async stop(): Promise<RunnerOutcome> {
    this.handedOff = true;
    await this.resumeExecutorCode();
    this.handle.control("stop");
    const killer = setTimeout(() => this.handle.kill("SIGKILL"), 30_000);
    const outcome = await this.handle.finished;
    clearTimeout(killer);
    return outcome;
  }

  private onMessage(m: RunnerToHost, host: RunnerLinkHost): void {
    switch (m.type) {
      case "ready":
      case "done":
        return;
      case "log":
        return host.console(m.message, m.level === "info" ? "console" : "stderr");
      case "error":
        return host.console(`${m.error.code}: ${m.error.message}`, "stderr");
      case "modelRequest":
        void host
          .answerModel(m.request)
          .catch((e: Error) => ({ ok: false as const, error: e.message }))
          .then((a) =>
            this.handle.send(
              a.ok
                ? { type: "modelResult", id: m.id, ok: true, text: a.text, ...(a.model ? { model: a.model } : {}) }
                : { type: "modelResult", id: m.id, ok: false, error: a.error },
            ),
          );
        return;
      case "event": {
        this.runId = m.event.runId;
        const said = narrate(m.event);
        for (const line of said.lines) host.console(line.text, line.category);
        this.exceptions.push(...said.exceptions);
        if (said.judged) this.judged = true;
        return host.event(this, m.event.runId);
      }
      case "paused":
        this.paused = {
          checkpoint: m.checkpoint?.id ?? `${m.runId}:${m.superstep - 1}`,
          superstep: m.checkpoint?.superstep ?? m.superstep - 1,
          executors: m.executors ?? [],
        };
        this.runId = m.runId;
        return host.boundary(this);
      default: {
        const never: never = m;
        host.console(`runner: unhandled message ${JSON.stringify(never)}`, "stderr");
      }
    }
  }

  private onStderr(textIn: string, host: RunnerLinkHost): void {
    for (const line of textIn.split("\n")) {
      const m = /Debugger listening on (ws:\/\/([\d.]+):(\d+)\/\S+)/.exec(line);
      if (m) {
        const pid = this.handle.pid;
        this.inspectorUrl = m[1]!;
        host.inspector({ url: m[1]!, host: m[2]!, port: Number(m[3]), ...(pid ? { pid } : {}) });
        host.console(`executor code: the runner's inspector listens on ${m[2]}:${m[3]}`);
      } else if (line.trim() && !/^(For help, see|Debugger attached|Waiting for the debugger)/.test(line.trim())) {
        host.console(line, "stderr");
      }
    }
  }
}
