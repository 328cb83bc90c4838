import { monotonicMs } from "./clock";
import { CasefileError, describeError, describeReturned } from "./errors";
import type { AnyState, ExecutorSpec, LoaderContext, RequestPrompt, StepContext } from "./executors";
import type { Json, Provenance } from "./records";
import { runAgent } from "./agentStep";
import { runCommit } from "./commitStep";
import { runEffect } from "./effectStep";
import { stepId, type TaskInput, type TaskOutcome } from "./task";
import { ApprovalAnswer } from "./workflow";

// Re-exported for src/cli/evalCommands.ts, which names the task types through this module.
export type { TaskInput, TaskOutcome } from "./task";

/** Runs one executor for one message. Never throws: a failure is recorded in the outcome. */
export async function runTask(input: TaskInput): Promise<TaskOutcome> {
  const startedAt = input.now();
  const t0 = monotonicMs();
  const { spec } = input;
  const id = stepId(input.runId, input.superstep, input.executor, input.index);
  const out: TaskOutcome = {
    step: {
      id,
      runId: input.runId,
      superstep: input.superstep,
      executor: input.executor,
      kind: spec.kind,
      status: "ok",
      startedAt,
      endedAt: startedAt,
      durationMs: 0,
      writes: [],
      sent: 0,
    },
    writes: [],
    facts: [],
    sends: [],
    outputs: [],
    warnings: [],
  };
  const visible = visibleState(input);
  const ctx = makeContext(input, visible, out);
  try {
    let result: Json | void = undefined;
    switch (spec.kind) {
      case "code":
      case "loader":
        result = await spec.run(ctx);
        break;
      case "agent":
        result = await runAgent(spec, input, visible, out);
        break;
      case "commit":
        result = await runCommit(spec, input, visible, ctx, out);
        break;
      case "effect":
        result = await runEffect(spec, input, visible, ctx, out);
        break;
      case "request":
        result = await runRequest(spec, input, visible, ctx, out);
        break;
      default: {
        const never: never = spec;
        throw new CasefileError("INVALID_WORKFLOW", `unknown executor kind ${(never as { kind: string }).kind}`);
      }
    }
    if (result !== undefined) out.sends.push(result);
  } catch (e) {
    const err = describeError(e);
    out.error = { code: err.code, message: `executor "${input.executor}" failed: ${err.message}` };
    out.step.status = "failed";
    out.step.error = out.error;
  }
  out.step.endedAt = input.now();
  out.step.durationMs = Math.round((monotonicMs() - t0) * 1000) / 1000;
  out.step.writes = out.writes.map((w) => w.key);
  out.step.sent = out.sends.length;
  return out;
}

/** The executor sees only the keys it reads or owns. */
function visibleState(input: TaskInput): Readonly<AnyState> {
  const keys = new Set([...(input.spec.reads ?? []), ...(input.spec.owns ?? [])]);
  const view: AnyState = {};
  for (const k of keys) if (k in input.state) view[k] = input.state[k];
  return Object.freeze(view);
}

function makeContext(input: TaskInput, state: Readonly<AnyState>, out: TaskOutcome): LoaderContext {
  const ctx: LoaderContext = {
    runId: input.runId,
    superstep: input.superstep,
    executor: input.executor,
    state,
    message: input.message.payload,
    from: input.message.from,
    local: input.local,
    signal: input.signal,
    write(key, value) {
      out.writes.push({ executor: input.executor, key, value });
    },
    send(payload) {
      out.sends.push(payload);
    },
    yield(output) {
      out.outputs.push(output);
    },
    setLocal(value) {
      out.local = { value };
    },
    log(message) {
      input.log(`[${input.executor}] ${message}`);
    },
    fact(key, value, from) {
      if (input.spec.kind !== "loader") {
        throw new CasefileError(
          "FACT_WRITER_NOT_LOADER",
          `executor "${input.executor}" (${input.spec.kind}) tried to write fact "${key}": only loaders may write facts`,
          {
            executor: input.executor,
            key,
          },
        );
      }
      if (!from?.source || typeof from.sourceVersion !== "string") {
        throw new CasefileError(
          "INVALID_STATE_VALUE",
          `loader "${input.executor}" wrote fact "${key}" without a source and source version`,
          {
            executor: input.executor,
            key,
          },
        );
      }
      const provenance: Provenance = { source: from.source, sourceVersion: from.sourceVersion, readAt: input.now() };
      out.writes.push({ executor: input.executor, key, value: { value, provenance } });
      out.facts.push({ key, provenance });
    },
  };
  return ctx;
}

async function runRequest(
  spec: Extract<ExecutorSpec, { kind: "request" }>,
  input: TaskInput,
  state: Readonly<AnyState>,
  ctx: StepContext,
  out: TaskOutcome,
): Promise<Json | void> {
  if (input.message.kind === "answer") {
    const { answer } = input.message.payload as { answer: Json; message: Json };
    const parsed = (spec.answer ?? ApprovalAnswer).parse(answer);
    return spec.onAnswer(parsed, { ...ctx, message: (input.message.payload as { message: Json }).message });
  }
  const prompt = checkPrompt(input.executor, spec.prompt(state, input.message.payload));
  out.waiting = {
    id: stepId(input.runId, input.superstep, input.executor, input.index),
    executor: input.executor,
    runId: input.runId,
    superstep: input.superstep,
    createdAt: input.now(),
    prompt: { title: prompt.title, detail: prompt.detail, options: prompt.options },
    message: input.message.payload,
  };
  out.step.status = "waiting";
}

/** A request's prompt as RequestPrompt declares it; anything else is a bug in `prompt`, named with the step. */
function checkPrompt(executor: string, p: unknown): RequestPrompt {
  const o = (typeof p === "object" && p !== null ? p : {}) as Record<string, unknown>;
  const problem =
    typeof p !== "object" || p === null || Array.isArray(p)
      ? `returned ${describeReturned(p)}`
      : typeof o.title !== "string"
        ? `returned a title that is ${describeReturned(o.title)}`
        : o.detail !== undefined && typeof o.detail !== "string"
          ? `returned a detail that is ${describeReturned(o.detail)}`
          : o.options !== undefined && !(Array.isArray(o.options) && o.options.every((x) => typeof x === "string"))
            ? `returned options that are ${describeReturned(o.options)}`
            : undefined;
  if (problem) {
    throw new CasefileError(
      "INVALID_WORKFLOW",
      `request step "${executor}": prompt ${problem}, not { title: string, detail?: string, options?: string[] }`,
      { executor },
    );
  }
  return p as RequestPrompt;
}
