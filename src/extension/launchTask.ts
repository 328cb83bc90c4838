import { existsSync, readFileSync } from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import { parseEnvFile } from "./workflowInputs";

/**
 * Run and Step through the workflow's launch configuration, without debugging. A workflow that a
 * `casefile` launch configuration runs (examples/.vscode/launch.json) is started the way F5 starts
 * it, with `vscode.debug.startDebugging(..., { noDebug: true })`: VS Code itself runs its
 * `preLaunchTask` (the "ERP stand-in" background task, waiting for its problem matcher to say it
 * listens) and substitutes its variables; then the session's adapter, `RunWithoutDebugging`
 * below, starts the same runner Run starts without a configuration (RunSessions.start), with the
 * configuration's `envFile` (ERP_URL=...) in its environment. One mechanism for F5 and Run; the
 * input is the form's (Run's), not the configuration's, and the case is named from it.
 */

/** The configuration's mark on a session started by Run or Step: which pending run it carries out. */
export const RUN_MARK = "casefileRun";

/** The first casefile launch configuration of the workflow's folder that runs this workflow file, as written. */
export function launchConfigOf(workflow: vscode.Uri): { folder: vscode.WorkspaceFolder; config: vscode.DebugConfiguration } | undefined {
  const folder = vscode.workspace.getWorkspaceFolder(workflow);
  if (!folder) return undefined;
  const configs = vscode.workspace.getConfiguration("launch", folder).get<vscode.DebugConfiguration[]>("configurations", []);
  const config = configs.find(
    (c) => c.type === "casefile" && c.request === "launch" && pathInFolder(folder, c.workflow) === path.resolve(workflow.fsPath),
  );
  return config ? { folder, config } : undefined;
}

/** A path a configuration names as written (`${workspaceFolder}/…` or relative), resolved: VS Code substitutes only as a session starts. */
function pathInFolder(folder: vscode.WorkspaceFolder, v: unknown): string | undefined {
  return typeof v === "string" ? path.resolve(folder.uri.fsPath, v.replace(/\$\{workspaceFolder\}/g, folder.uri.fsPath)) : undefined;
}

type Start = (env: Record<string, string>) => Promise<unknown>;
interface PendingRun {
  start: Start;
  /** Stop on the debug toolbar: stops the run. */
  stop: () => void;
}
const pending = new Map<string, PendingRun>();
let counter = 0;

/**
 * Starts `config` without debugging and, once its preLaunchTask is ready, calls `start` with the
 * configuration's envFile variables; resolves with what `start` resolved with. Undefined when the
 * session did not start (the task failed and the person chose not to go on, or it was cancelled).
 */
export async function launchWithoutDebugging<T>(
  folder: vscode.WorkspaceFolder,
  config: vscode.DebugConfiguration,
  start: (env: Record<string, string>) => Promise<T>,
  stop: () => void,
): Promise<T | undefined> {
  const token = `run-${process.pid}-${++counter}`;
  let result: Promise<T> | undefined;
  pending.set(token, { start: (env) => (result = start(env)), stop });
  try {
    await startBackgroundTask(config.preLaunchTask, pathInFolder(folder, config.envFile));
    // Written as the configuration says, less what is a debugger's: this run does not pause.
    const { caseFile: _caseFile, stopOnEntry: _stop, input: _input, inputFile: _file, ...rest } = config;
    const started = await vscode.debug.startDebugging(folder, { ...rest, [RUN_MARK]: token }, { noDebug: true });
    if (!started) return undefined;
    // startDebugging settles once the session is up; the adapter calls `start` as it launches.
    const t0 = Date.now();
    while (!result && Date.now() - t0 < 30_000) await new Promise((r) => setTimeout(r, 20));
    return result ? await result : undefined;
  } finally {
    pending.delete(token);
  }
}

/**
 * Starts the preLaunchTask before the session asks for it, unless it runs already. VS Code gives a
 * background preLaunchTask it starts itself 5 s to report ready ("has not exited and doesn't have
 * a 'problemMatcher' defined"), which a cold ERP stand-in on a busy machine exceeds; a task that
 * is already running and busy it waits for, for as long as it takes, by its problem matcher.
 */
async function startBackgroundTask(name: unknown, envFile: string | undefined): Promise<void> {
  if (typeof name !== "string" || vscode.tasks.taskExecutions.some((e) => e.task.name === name)) return;
  const task = (await vscode.tasks.fetchTasks()).find((t) => t.name === name && t.isBackground);
  // Not found, or not a background task: VS Code runs it (or says it cannot) as for F5.
  if (!task) return;
  const execution = await vscode.tasks.executeTask(task);
  // executeTask settles as the task's process starts, before its problem matcher has seen the
  // begin pattern: VS Code then finds the task running but not busy and starts the session at
  // once, before the task wrote the envFile it is configured to read (seen in code-server: "no ERP
  // address"). A missing envFile the task writes is its ready signal: wait for it, while it runs.
  if (envFile === undefined || existsSync(envFile)) return;
  let ended = false;
  const done = vscode.tasks.onDidEndTask((e) => (ended ||= e.execution === execution));
  try {
    const t0 = Date.now();
    while (!ended && !existsSync(envFile) && Date.now() - t0 < 120_000) await new Promise((r) => setTimeout(r, 50));
  } finally {
    done.dispose();
  }
}

/** The run a Run-or-Step session carries out, taken once by its adapter. */
export function takePendingRun(configuration: vscode.DebugConfiguration): PendingRun | undefined {
  const token = configuration[RUN_MARK];
  if (typeof token !== "string" || !configuration.noDebug) return undefined;
  const run = pending.get(token);
  pending.delete(token);
  return run;
}

/** True for the sessions Run and Step start (they run without debugging: no stops to follow). */
export function isRunSession(session: vscode.DebugSession): boolean {
  return typeof session.configuration[RUN_MARK] === "string";
}

/** The variables of a launch configuration's `envFile` (KEY=VALUE lines); none when it names none or the file is missing. */
export function envFileOf(file: unknown): Record<string, string> {
  if (typeof file !== "string" || !existsSync(file)) return {};
  return parseEnvFile(readFileSync(file, "utf8"));
}

interface DapMessage {
  seq: number;
  type: string;
  command?: string;
}

/**
 * The adapter of a session started by Run or Step: it answers the few requests VS Code sends a
 * session without debugging, starts the run on `launch`, and ends the session when the run ends.
 * Stop on the debug toolbar (disconnect) stops the run through the notification's own Cancel path.
 */
export class RunWithoutDebugging implements vscode.DebugAdapter {
  private readonly emitter = new vscode.EventEmitter<vscode.DebugProtocolMessage>();
  readonly onDidSendMessage = this.emitter.event;
  private seq = 1;
  private ended = false;

  constructor(
    private readonly run: PendingRun,
    private readonly env: Record<string, string>,
  ) {}

  handleMessage(message: vscode.DebugProtocolMessage): void {
    const m = message as DapMessage;
    if (m.type !== "request") return;
    switch (m.command) {
      case "initialize":
        this.reply(m, {});
        this.send({ type: "event", event: "initialized" });
        return;
      case "launch":
        this.reply(m);
        void this.run.start(this.env).finally(() => this.end());
        return;
      case "disconnect":
      case "terminate":
        if (!this.ended) this.run.stop();
        this.reply(m);
        return;
      case "threads":
        this.reply(m, { threads: [] });
        return;
      default:
        this.reply(m);
    }
  }

  private end(): void {
    if (this.ended) return;
    this.ended = true;
    this.send({ type: "event", event: "terminated" });
  }

  private reply(request: DapMessage, body?: unknown): void {
    this.send({ type: "response", request_seq: request.seq, success: true, command: request.command, ...(body ? { body } : {}) });
  }

  private send(message: Record<string, unknown>): void {
    this.emitter.fire({ seq: this.seq++, ...message } as vscode.DebugProtocolMessage);
  }

  dispose(): void {
    this.emitter.dispose();
  }
}
