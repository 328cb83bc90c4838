import { fork, type ChildProcess } from "node:child_process";
import {
  RunnerToHostSchema,
  type ControlAction,
  type HostToRunner,
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
  provider?: ProviderConfig;
  /** Token budget for agent steps that declare none (the casefile.tokenBudget setting). */
  defaultBudget?: TokenBudget;
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
  const child: ChildProcess = fork(opts.runnerPath, [], {
    execArgv: opts.execArgv ?? [],
    env: opts.env ?? process.env,
    cwd: opts.cwd,
    stdio: ["ignore", "pipe", "pipe", "ipc"],
    serialization: "json",
  });
  const outcome: RunnerOutcome = { exitCode: null, signal: null };
  const send = (message: HostToRunner): void => {
    if (child.connected) child.send(message);
  };

  child.on("message", (raw: unknown) => {
    const parsed = RunnerToHostSchema.safeParse(raw);
    if (!parsed.success) {
      opts.onInvalid?.(`dropped a malformed message from the runner: ${parsed.error.issues[0]?.message}`);
      return;
    }
    const message = parsed.data;
    if (message.type === "ready") {
      send({
        type: "start",
        command: opts.command,
        stepMode: opts.stepMode ?? false,
        provider: opts.provider,
        ...(opts.defaultBudget ? { defaultBudget: opts.defaultBudget } : {}),
      });
    }
    if (message.type === "done") outcome.done = message;
    if (message.type === "error") outcome.error = message.error;
    opts.onMessage?.(message);
  });
  const stderr: string[] = [];
  child.stderr?.on("data", (d: Buffer) => {
    const text = d.toString("utf8");
    stderr.push(text);
    opts.onStderr?.(text);
  });
  child.stdout?.on("data", (d: Buffer) => opts.onMessage?.({ type: "log", level: "info", message: d.toString("utf8").trimEnd() }));

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
