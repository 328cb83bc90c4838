import { fork, type ChildProcess } from "node:child_process";
import { statSync } from "node:fs";
import { zodIssue } from "../engine/errors";
import {
  RunnerToHostSchema,
  type ControlAction,
  type HostToRunner,
  type OtelConfig,
  type ProviderConfig,
  type RunCommand,
  type RunnerToHost,
  type TokenBudget,
} from "../protocol/runner";

export interface RunnerOptions {
  /** Path of the bundled runner (dist/runner.js inside the extension). */
  runnerPath: string;
  command: RunCommand;
  stepMode?: boolean;
  /** The debugger's Step Into into executor code (needs execArgv --inspect): see HostToRunner `start`. */
  stepInto?: boolean;
  provider?: ProviderConfig;
  /** Token budget for agent steps that declare none (the casefile.tokenBudget setting). */
  defaultBudget?: TokenBudget;
  /** Trace the run (OpenTelemetry): the editor's casefile.otel.* settings. */
  otel?: OtelConfig;
  /** Environment for the child: the CLI's env, or the editor's with a key from SecretStorage. */
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Node options for the child, e.g. `--inspect=127.0.0.1:0` for the debugger's executor-code breakpoints. */
  execArgv?: string[];
  /** The child's stderr as it comes (the inspector prints its address there). */
  onStderr?: (text: string) => void;
  /** Every well-formed message from the runner, in order. */
  onMessage?: (message: RunnerToHost) => void;
  /** Messages that failed the schema: dropped, but worth a line in the log. */
  onInvalid?: (problem: string) => void;
  /**
   * A runner forked ahead of time (PrestartedRunner.start): used, and handed the command at once,
   * if it was started with the same runnerPath, env and cwd and is still alive; else it is
   * stopped and a runner forked as usual. Taken either way: do not pass it twice.
   */
  prestarted?: PrestartedRunner;
}

export interface RunnerOutcome {
  /** Set when the runner finished its command. */
  done?: Extract<RunnerToHost, { type: "done" }>;
  /** Set when the runner refused or failed the command. */
  error?: Extract<RunnerToHost, { type: "error" }>["error"];
  exitCode: number | null;
  signal: NodeJS.Signals | null;
}

export interface RunnerHandle {
  readonly pid: number | undefined;
  control(action: ControlAction): void;
  /** Answers a model request the runner made through the host (the vscode.lm provider). */
  send(message: HostToRunner): void;
  kill(signal?: NodeJS.Signals): void;
  /** Settles when the child process exits. */
  readonly finished: Promise<RunnerOutcome>;
}

/**
 * Forks the runner and hands it one command. Used by the extension host and by the tests that
 * kill runners mid-run. Messages from the child are parsed with the shared schema.
 */
export function startRunner(opts: RunnerOptions): RunnerHandle {
  // A runner with its own Node flags (--inspect for the debugger) is always forked for it.
  const taken = opts.execArgv?.length ? undefined : opts.prestarted?.take(opts);
  const child: ChildProcess = taken?.child ?? forkRunner(opts);
  const outcome: RunnerOutcome = { exitCode: null, signal: null };
  const send = (message: HostToRunner): void => {
    if (child.connected) child.send(message);
  };

  child.on("message", (raw: unknown) => {
    const parsed = RunnerToHostSchema.safeParse(raw);
    if (!parsed.success) {
      opts.onInvalid?.(`dropped a malformed message from the runner: ${zodIssue(parsed.error).message}`);
      return;
    }
    const message = parsed.data;
    if (message.type === "ready") sendStart();
    if (message.type === "done") outcome.done = message;
    if (message.type === "error") outcome.error = message.error;
    opts.onMessage?.(message);
  });
  const sendStart = (): void =>
    send({
      type: "start",
      command: opts.command,
      stepMode: opts.stepMode ?? false,
      ...(opts.stepInto ? { stepInto: true } : {}),
      provider: opts.provider,
      ...(opts.defaultBudget ? { defaultBudget: opts.defaultBudget } : {}),
      ...(opts.otel ? { otel: opts.otel } : {}),
    });
  const stderr: string[] = taken?.stderr ?? [];
  child.stderr?.on("data", (d: Buffer) => {
    const text = d.toString("utf8");
    stderr.push(text);
    opts.onStderr?.(text);
  });
  const stdout = (d: Buffer | string): void => opts.onMessage?.({ type: "log", level: "info", message: d.toString().trimEnd() });
  child.stdout?.on("data", stdout);
  // A prestarted runner said it was ready before this command was known: the same messages, in
  // the same order, as from a runner forked now — and, like those, after startRunner has
  // returned (a caller's listener may use the handle it returns).
  if (taken) {
    const early = { stderr: [...stderr], stdout: taken.stdout, ready: taken.ready };
    queueMicrotask(() => {
      for (const text of early.stderr) opts.onStderr?.(text);
      for (const d of early.stdout) stdout(d);
      if (early.ready) {
        opts.onMessage?.({ type: "ready" });
        sendStart();
      }
    });
  }

  const finished = new Promise<RunnerOutcome>((resolve) => {
    child.on("exit", (code, signal) => {
      outcome.exitCode = code;
      outcome.signal = signal;
      if (!outcome.done && !outcome.error && code !== 0) {
        outcome.error = {
          code: signal ? "RUNNER_KILLED" : "RUNNER_CRASHED",
          message: `runner exited ${signal ? `on ${signal}` : `with code ${code}`}${stderr.length ? `: ${stderr.join("").trim().slice(-2000)}` : ""}`,
        };
      }
      resolve(outcome);
    });
  });

  return {
    pid: child.pid,
    control: (action) => send({ type: "control", action }),
    send,
    kill: (signal = "SIGTERM") => child.kill(signal),
    finished,
  };
}

function forkRunner(opts: Pick<RunnerOptions, "runnerPath" | "env" | "cwd" | "execArgv">): ChildProcess {
  return fork(opts.runnerPath, [], {
    execArgv: opts.execArgv ?? [],
    env: opts.env ?? process.env,
    cwd: opts.cwd,
    stdio: ["ignore", "pipe", "pipe", "ipc"],
    serialization: "json",
  });
}

/**
 * A runner forked before its command is known, so that the next Run does not wait for a Node
 * process to start, load the runner and compile SQLite's wasm (the runner does that as soon as
 * it is up, src/runner/runnerMain.ts): the editor keeps one ready after each run
 * (src/extension/runSessions.ts). It waits with its "ready" sent and is handed its command by
 * startRunner({ prestarted }); the runner's protocol is the same as for one forked then. It is
 * used only for the runnerPath (unchanged on disk since), env and cwd it was started with.
 * While it waits it does not keep this process alive, and it exits after `idleMs` unused.
 */
export class PrestartedRunner {
  #child: ChildProcess | undefined;
  #ready = false;
  readonly #stderr: string[] = [];
  readonly #stdout: string[] = [];
  readonly #runnerMtimeMs: number;
  readonly #idle: ReturnType<typeof setTimeout>;
  readonly #onMessage = (raw: unknown): void => {
    if (RunnerToHostSchema.safeParse(raw).data?.type === "ready") this.#ready = true;
  };
  readonly #onStderr = (d: Buffer): void => void this.#stderr.push(d.toString("utf8"));
  readonly #onStdout = (d: Buffer): void => void this.#stdout.push(d.toString("utf8"));

  private constructor(
    private readonly opts: { runnerPath: string; env?: NodeJS.ProcessEnv; cwd?: string },
    idleMs: number,
  ) {
    this.#runnerMtimeMs = mtimeOf(opts.runnerPath);
    const child = forkRunner(opts);
    this.#child = child;
    child.on("message", this.#onMessage);
    child.stderr?.on("data", this.#onStderr);
    child.stdout?.on("data", this.#onStdout);
    child.on("exit", () => {
      if (this.#child === child) this.#child = undefined;
    });
    setRef(child, false);
    this.#idle = setTimeout(() => this.dispose(), idleMs);
    this.#idle.unref();
  }

  /** Forks a runner that waits for a command. `idleMs` (default 5 minutes) unused, it is stopped. */
  static start(opts: { runnerPath: string; env?: NodeJS.ProcessEnv; cwd?: string; idleMs?: number }): PrestartedRunner {
    return new PrestartedRunner({ runnerPath: opts.runnerPath, env: opts.env, cwd: opts.cwd }, opts.idleMs ?? 5 * 60_000);
  }

  /** Its runner's process id while it waits (undefined once taken or stopped). */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /** Whether its runner is up and has said it is ready. */
  get ready(): boolean {
    return this.#ready && this.#child !== undefined;
  }

  /**
   * Its child, if alive and started for these options; it is this object's no longer either way
   * (one that does not fit is stopped).
   */
  take(
    opts: Pick<RunnerOptions, "runnerPath" | "env" | "cwd">,
  ): { child: ChildProcess; ready: boolean; stderr: string[]; stdout: string[] } | undefined {
    const child = this.#child;
    this.#child = undefined;
    clearTimeout(this.#idle);
    if (!child) return undefined;
    child.off("message", this.#onMessage);
    child.stderr?.off("data", this.#onStderr);
    child.stdout?.off("data", this.#onStdout);
    const fits =
      child.exitCode === null &&
      child.signalCode === null &&
      child.connected &&
      opts.runnerPath === this.opts.runnerPath &&
      (opts.cwd ?? undefined) === (this.opts.cwd ?? undefined) &&
      sameEnv(opts.env ?? process.env, this.opts.env ?? process.env) &&
      mtimeOf(opts.runnerPath) === this.#runnerMtimeMs;
    if (!fits) {
      child.kill();
      return undefined;
    }
    setRef(child, true);
    return { child, ready: this.#ready, stderr: this.#stderr, stdout: this.#stdout };
  }

  /** Stops its runner if it is still waiting. */
  dispose(): void {
    clearTimeout(this.#idle);
    const child = this.#child;
    this.#child = undefined;
    child?.kill();
  }
}

/** Whether the child (its process, IPC channel and pipes) keeps this process alive. */
function setRef(child: ChildProcess, ref: boolean): void {
  const handles = [child, child.channel, child.stdout, child.stderr] as ({ ref?: () => void; unref?: () => void } | null | undefined)[];
  for (const h of handles) (ref ? h?.ref : h?.unref)?.call(h);
}

function sameEnv(a: NodeJS.ProcessEnv, b: NodeJS.ProcessEnv): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => a[k] === b[k]);
}

function mtimeOf(file: string): number {
  try {
    return statSync(file).mtimeMs;
  } catch {
    return -1;
  }
}
