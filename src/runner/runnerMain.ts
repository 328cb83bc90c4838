/**
 * The runner child process. The extension host forks it (dist/runner.js) for each run, resume
 * or answer; it runs the workflow with the engine, owns the case file while it runs, streams
 * typed events to the host, and obeys pause / step / continue / stop at superstep boundaries.
 * Every message from the host is parsed with the shared schema; anything else is logged and
 * dropped.
 */
import { randomUUID } from "node:crypto";
import { baselineWasmOnly, loadSqlJs } from "../casefile/sqlite";
import { RunControl } from "../engine/control";
import { CasefileError, describeError, errorMessage, isCasefileError, zodIssue } from "../engine/errors";
import type { ModelProvider, ModelRequest, ModelResponse } from "../engine/model";
import { otelSettings, type OtelSettings } from "../otel/config";
import { HostToRunnerSchema, type HostToRunner, type OtelConfig, type RunnerToHost } from "../protocol/runner";
import { debugHelperMain } from "./debugHelper";
import { runSession } from "./session";
import { StepInto } from "./stepInto";

function post(message: RunnerToHost): void {
  process.send?.(message);
}

/** The VS Code Language Model API, reached through the host: the runner never imports vscode. */
class HostModelProvider implements ModelProvider {
  readonly name = "vscode-lm";
  private readonly waiting = new Map<string, { resolve: (r: ModelResponse) => void; reject: (e: Error) => void }>();

  complete(request: ModelRequest): Promise<ModelResponse> {
    const id = randomUUID();
    post({ type: "modelRequest", id, request: { step: request.step, messages: request.messages, model: request.model } });
    return new Promise((resolve, reject) => this.waiting.set(id, { resolve, reject }));
  }

  settle(message: Extract<HostToRunner, { type: "modelResult" }>): void {
    const pending = this.waiting.get(message.id);
    if (!pending) return;
    this.waiting.delete(message.id);
    if (message.ok && message.text !== undefined)
      pending.resolve({ text: message.text, ...(message.model !== undefined ? { meta: { model: message.model } } : {}) });
    else pending.reject(new CasefileError("MODEL_CALL_FAILED", message.error ?? "the editor's language model call failed"));
  }
}

function main(): void {
  baselineWasmOnly();
  if (!process.send) {
    process.stderr.write("runner: must be started by the Casefile extension (no IPC channel)\n");
    process.exit(2);
  }
  let control: RunControl | undefined;
  const host = new HostModelProvider();
  let started = false;
  // Asked for by the debugger, with an inspector (--inspect): Step Into can pause in executor code.
  let stepInto: StepInto | undefined;

  process.on("message", (raw: unknown) => {
    const parsed = HostToRunnerSchema.safeParse(raw);
    if (!parsed.success) {
      post({ type: "log", level: "warn", message: `dropped a malformed message from the host: ${zodIssue(parsed.error).message}` });
      return;
    }
    const message = parsed.data;
    switch (message.type) {
      case "start":
        if (started) {
          post({ type: "log", level: "warn", message: "dropped a second start: one runner runs one command" });
          return;
        }
        started = true;
        control = new RunControl(message.stepMode);
        if (message.stepInto && StepInto.available()) stepInto = new StepInto();
        void start(message, control, host, stepInto);
        return;
      case "control":
        if (!control) return;
        control[message.action]();
        return;
      case "stepInto":
        if (!control) return;
        if (stepInto) stepInto.arm();
        else
          post({ type: "log", level: "warn", message: "step into: the runner has no inspector (debugExecutorCode is off): stepping over" });
        control.step();
        return;
      case "modelResult":
        host.settle(message);
        return;
      default: {
        const never: never = message;
        post({ type: "log", level: "warn", message: `unhandled message ${JSON.stringify(never)}` });
      }
    }
  });
  // The host going away is a stop: finish the current superstep's commit and exit.
  process.on("disconnect", () => control?.stop());
  post({ type: "ready" });
  // Every command opens a case file: SQLite's wasm compiles while the start message arrives and
  // the workflow is bundled (a runner the editor starts ahead of a Run waits with it ready). A
  // failure is not kept: the open that needs it reports it.
  loadSqlJs().catch(() => {});
}

async function start(
  message: Extract<HostToRunner, { type: "start" }>,
  control: RunControl,
  host: HostModelProvider,
  stepInto: StepInto | undefined,
): Promise<void> {
  try {
    const result = await runSession(message.command, {
      control,
      ...(stepInto ? { stepInto } : {}),
      provider: message.provider,
      defaultBudget: message.defaultBudget,
      ...otelOf(message.otel),
      providerInstance: message.provider?.kind === "vscode-lm" ? host : undefined,
      onEvent: (event) => {
        post({ type: "event", event });
        if (event.type === "run_paused") {
          stepInto?.disarm();
          // The event is stamped with the checkpoint's superstep; the run waits before the next one.
          const data = event.data as { checkpoint?: string; next?: string[] };
          post({
            type: "paused",
            runId: event.runId,
            superstep: event.superstep + 1,
            ...(typeof data.checkpoint === "string" ? { checkpoint: { id: data.checkpoint, superstep: event.superstep } } : {}),
            ...(Array.isArray(data.next) ? { executors: data.next } : {}),
          });
        }
      },
      log: (m) => post({ type: "log", level: m.startsWith("warning") ? "warn" : "info", message: m }),
    });
    post({
      type: "done",
      runId: result.runId,
      status: result.status,
      caseFile: result.caseFile,
      ...(result.error ? { error: { code: result.error.code, message: result.error.message } } : {}),
    });
  } catch (e) {
    const err = isCasefileError(e) ? e.toJSON() : describeError(e);
    post({ type: "error", error: { code: err.code, message: err.message } });
  } finally {
    // Let the last messages flush before exiting.
    process.disconnect?.();
  }
}

/**
 * The start message's tracing settings, resolved against the runner's environment. Only the
 * editor's setting turns tracing on here (an OTEL_* variable the editor happened to be started
 * with does not); a setting that names no usable URL is a warning, and the run goes untraced.
 */
function otelOf(config: OtelConfig | undefined): { otel?: OtelSettings } {
  if (!config) return {};
  try {
    const otel = otelSettings(process.env, {
      enabled: true,
      endpoint: config.endpoint || undefined,
      endpointFrom: "casefile.otel.endpoint",
      includeContent: config.includeContent,
    });
    return otel ? { otel } : {};
  } catch (e) {
    post({ type: "log", level: "warn", message: `the run is not traced: ${errorMessage(e)}` });
    return {};
  }
}

// `--debug-helper`: the debug session's state-edit checker and expression evaluator (debugHelper.ts), not a run.
if (process.argv.includes("--debug-helper")) debugHelperMain();
else main();
