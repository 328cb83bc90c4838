import { readFileSync } from "node:fs";
import path from "node:path";
import { Handles, Source, StackFrame, Thread, ThreadEvent, type Event as DapEvent } from "@vscode/debugadapter";
import type { DebugProtocol } from "@vscode/debugprotocol";
import type { SqlJsStore } from "../casefile/index";
import type { Checkpoint, Json } from "../engine/records";
import type { EvaluationScope } from "../protocol/debug";
import type { CaseReader } from "./caseReader";
import { messageFor, messagesOf, runOf, stepOfExecutor, stepOfSuperstep } from "./caseView";
import type { Evaluator } from "./breakpoints";
import type { ExecutorSource } from "./executorSources";
import { setAt, Variables } from "./variables";

/**
 * What the debugger shows while paused: one checkpoint (live, where the runner waits, or from
 * history), its threads, Call Stack, scopes and variables, the state edits made there
 * (edit-then-fork) and evaluate over it. The session (session.ts) moves it (`show`) and answers
 * the client's requests with the bodies built here; a request that cannot be answered throws a
 * Refusal, which the session sends as an error response.
 */

export class Refusal extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export interface PausedViewHost {
  console(line: string): void;
  sendEvent(event: DapEvent): void;
  /** The workflow being debugged and where its executors are defined (known once launched). */
  workflow(): { file: string; sources: readonly ExecutorSource[] };
  toClient: { path(p: string): string; line(l: number): number; column(c: number): number };
  /** Evaluates JavaScript over a checkpoint's values (the debug helper). */
  evaluate: Evaluator;
}

interface FrameRef {
  checkpoint: string;
  executor?: string;
}

const THREAD_NAME_MAX = 60;

export class PausedView {
  /** The checkpoint shown, and its run. */
  shown?: { runId: string; checkpoint: string };
  /** State edits made at the shown checkpoint: Continue or Next runs a branch with them. */
  patch: Record<string, Json> = {};
  private readonly threads = new Map<string, number>();
  private readonly variables = new Variables();
  private readonly frames = new Handles<FrameRef>();

  constructor(
    private readonly reader: CaseReader,
    private readonly host: PausedViewHost,
  ) {}

  /** Makes a checkpoint the one shown; edits made at another one are dropped, saying so. */
  show(runId: string, checkpoint: string): void {
    if (this.shown?.checkpoint !== checkpoint && this.edited) {
      this.host.console(`edits at ${this.shown?.checkpoint} dropped: ${Object.keys(this.patch).join(", ")} (nothing was run with them)`);
      this.patch = {};
    }
    this.shown = { runId, checkpoint };
    this.threadOf(runId);
    this.variables.reset();
    this.frames.reset();
  }

  get edited(): boolean {
    return Object.keys(this.patch).length > 0;
  }

  /** The edits, handed to the branch run that goes on with them. */
  takePatch(): Record<string, Json> | undefined {
    const patch = this.edited ? { ...this.patch } : undefined;
    this.patch = {};
    return patch;
  }

  /** The run is going on: the variables the client holds are no longer answered. */
  forget(): void {
    this.variables.reset();
  }

  /** One thread per run, announced the first time it is seen. */
  threadOf(runId: string): number {
    let id = this.threads.get(runId);
    if (id === undefined) {
      id = this.threads.size + 1;
      this.threads.set(runId, id);
      this.host.sendEvent(new ThreadEvent("started", id));
    }
    return id;
  }

  threadList(): DebugProtocol.Thread[] {
    return [...this.threads].map(([runId, id]) => new Thread(id, `run ${runId}`.slice(0, THREAD_NAME_MAX)));
  }

  frame(id: number): FrameRef {
    const frame = this.frames.get(id);
    if (!frame) throw new Refusal("UNKNOWN_FRAME", `no frame ${id}`);
    return frame;
  }

  /** The state shown at a checkpoint: stored, with this session's edits when it is the one edited. */
  values(store: SqlJsStore, cp: Checkpoint): Record<string, Json> {
    const stored = this.reader.valuesAt(store, cp);
    const edited = this.shown?.checkpoint === cp.id && this.edited;
    return structuredClone(edited ? { ...stored, ...this.patch } : stored);
  }

  /** Call Stack: the executors due next (each at its definition), above the superstep and checkpoint. */
  async stackTrace(args: DebugProtocol.StackTraceArguments): Promise<DebugProtocol.StackTraceResponse["body"]> {
    const view = this.shown;
    if (!view || this.threads.get(view.runId) !== args.threadId) return { stackFrames: [], totalFrames: 0 };
    const store = await this.reader.snapshot();
    const cp = checkpointIn(store, view.checkpoint);
    const { file, sources } = this.host.workflow();
    const to = this.host.toClient;
    const source = new Source(path.basename(file), to.path(file));
    const frames: StackFrame[] = [];
    for (const executor of [...new Set(cp.pending.map((m) => m.to))]) {
      const where = sources.find((s) => s.name === executor);
      const kind = where?.kind ? ` (${where.kind})` : "";
      const ref = this.frames.create({ checkpoint: cp.id, executor });
      frames.push(
        new StackFrame(ref, `${executor}${kind}`, where ? source : undefined, to.line(where?.line ?? 0), to.column(where?.column ?? 1)),
      );
    }
    const run = store.getRun(cp.runId);
    const next = cp.pending.length ? `before superstep ${cp.superstep + 1}` : `run ${run?.status ?? "ended"}`;
    const bottom = new StackFrame(
      this.frames.create({ checkpoint: cp.id }),
      `superstep ${cp.superstep + 1} · checkpoint ${cp.id} (${next})`,
      source,
      to.line(workflowLine(file)),
      1,
    ) as DebugProtocol.StackFrame;
    bottom.canRestart = cp.pending.length > 0;
    frames.push(bottom);
    const start = args.startFrame ?? 0;
    const count = args.levels && args.levels > 0 ? args.levels : frames.length;
    return { stackFrames: frames.slice(start, start + count), totalFrames: frames.length };
  }

  async scopes(frameId: number): Promise<DebugProtocol.ScopesResponse["body"]> {
    const frame = this.frame(frameId);
    const store = await this.reader.snapshot();
    const cp = checkpointIn(store, frame.checkpoint);
    const kind = frame.executor ? this.host.workflow().sources.find((s) => s.name === frame.executor)?.kind : undefined;
    const step = frame.executor ? stepOfExecutor(store, cp, frame.executor, kind) : stepOfSuperstep(store, cp);
    const run = runOf(store, cp, Object.keys(this.patch));
    return { scopes: this.variables.scopes({ state: this.values(store, cp), messages: messagesOf(cp), step, run }) };
  }

  children(args: DebugProtocol.VariablesArguments): DebugProtocol.VariablesResponse["body"] {
    return { variables: this.variables.children(args.variablesReference, args.start, args.count) };
  }

  /**
   * Edit-then-fork: the value is parsed with the key's schema (`check`, the patch checker); a valid
   * edit is kept for the branch Continue starts, an invalid one refused naming key, path and problem.
   */
  async setVariable(
    args: DebugProtocol.SetVariableArguments,
    check: (
      patch: Record<string, Json>,
    ) => Promise<{ problems: { code: string; key: string; path: string[]; message: string }[]; error?: { code: string; message: string } }>,
  ): Promise<DebugProtocol.SetVariableResponse["body"]> {
    const c = this.variables.get(args.variablesReference);
    const edit = c && this.variables.editOf(c, args.name);
    const view = this.shown;
    if (!c || !edit || !view) throw new Refusal("READ_ONLY", `"${args.name}" is not a state value: only State can be edited`);
    const { key, path: at } = edit;
    let value: Json;
    try {
      value = JSON.parse(args.value) as Json;
    } catch {
      throw new Refusal(
        "INVALID_PATCH",
        `state "${key}" at "${[key, ...at].join(".")}": ${JSON.stringify(args.value)} is not JSON (write strings in quotes)`,
      );
    }
    const store = await this.reader.snapshot();
    const cp = checkpointIn(store, view.checkpoint);
    const current = this.values(store, cp);
    const next = at.length ? setAt(structuredClone(current[key] ?? null), at, value) : value;
    const result = await check({ [key]: next });
    if (result.error) throw new Refusal(result.error.code, `cannot check the edit: ${result.error.message}`);
    const problem = result.problems[0];
    if (problem)
      throw new Refusal(problem.code, `state "${problem.key}" at "${[problem.key, ...problem.path].join(".")}": ${problem.message}`);
    this.patch[key] = next;
    // The containers hold the values shown: write the edit into the one the client sees.
    if (c.value && typeof c.value === "object") (c.value as Record<string, Json>)[args.name] = value;
    this.host.console(
      `edited ${[key, ...at].join(".")} at ${cp.id}: Continue or Next runs a branch from it with the edit (the run itself is unchanged)`,
    );
    const shown = this.variables.variable(args.name, value, {});
    return { value: shown.value, variablesReference: shown.variablesReference, ...(shown.type ? { type: shown.type } : {}) };
  }

  /**
   * Debug Console evaluate, watches and hovers, over the shown (or the frame's) checkpoint:
   * JavaScript over `state`, `message` (the frame's executor's pending message), `messages` and
   * each state key by name, evaluated by the debug helper over a copy of the values (this
   * session's edits included). The same for the live boundary and a checkpoint in history.
   */
  async evaluate(args: DebugProtocol.EvaluateArguments): Promise<DebugProtocol.EvaluateResponse["body"]> {
    const view = this.shown;
    if (!view) throw new Refusal("NOT_PAUSED", "evaluate needs a paused run");
    const frame = args.frameId !== undefined ? this.frames.get(args.frameId) : undefined;
    const store = await this.reader.snapshot();
    const cp = store.getCheckpoint(frame?.checkpoint ?? view.checkpoint);
    if (!cp) throw new Refusal("UNKNOWN_CHECKPOINT", "the checkpoint is not in the case file");
    const executor = frame?.executor ?? cp.pending[0]?.to;
    const scope = {
      state: this.values(store, cp),
      message: executor ? (messageFor(cp, executor) ?? null) : null,
      messages: messagesOf(cp),
    };
    const hover = args.context === "hover";
    // A hover sends the word under the pointer with the member chain before it: `variance` (a key,
    // in `owns` or `ctx.write("variance", …)`), `ctx.state.variance.pct`, `ctx.message.pct`. The
    // executor's ctx.state and ctx.message are the paused ones. Only such chains: a hover calls nothing.
    if (hover && !/^[\w$.[\]"']+$/.test(args.expression)) throw new Refusal("NOT_A_VALUE", "hover shows state values only");
    const expression = hover ? args.expression.replace(/^ctx\./, "") : args.expression;
    const head = /^[\w$]+/.exec(expression)?.[0] ?? "";
    if (hover && !["state", "message", "messages"].includes(head) && !Object.hasOwn(scope.state, head))
      throw new Refusal("NOT_A_VALUE", `"${args.expression}" is not a state key or path at ${cp.id}`);
    const [r] = await this.host.evaluate([expression], scope as EvaluationScope);
    if (!r || !r.ok || (hover && r.type === "undefined")) {
      if (hover) throw new Refusal("NOT_A_VALUE", `"${args.expression}" is not a state key or path at ${cp.id}`);
      throw new Refusal("EVALUATE_FAILED", r ? (r as { error: string }).error : "no answer");
    }
    if (r.value === undefined) return { result: r.display ?? r.type, type: r.type, variablesReference: 0 };
    const shown = this.variables.variable("", r.value as Json, { evaluateName: args.expression });
    return { result: shown.value, type: shown.type ?? r.type, variablesReference: shown.variablesReference };
  }
}

function checkpointIn(store: SqlJsStore, id: string): Checkpoint {
  const cp = store.getCheckpoint(id);
  if (!cp) throw new Refusal("UNKNOWN_CHECKPOINT", `checkpoint ${id} is not in the case file`);
  return cp;
}

/** The line of `defineWorkflow(` in the workflow file: where the superstep frame points. */
function workflowLine(file: string): number {
  try {
    const lines = readFileSync(file, "utf8").split("\n");
    const i = lines.findIndex((l) => /\bdefineWorkflow\s*\(/.test(l) && !/^\s*import\b/.test(l));
    return i >= 0 ? i + 1 : 1;
  } catch {
    return 1;
  }
}
