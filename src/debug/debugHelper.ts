import { fork, type ChildProcess } from "node:child_process";
import path from "node:path";
import type { Json } from "../engine/records";
import {
  DebugHelperResultSchema,
  type DebugHelperRequest,
  type DebugHelperResult,
  type Evaluation,
  type EvaluationScope,
  type PatchCheckResult,
} from "../protocol/debug";

/**
 * The adapter's side of the debug helper: dist/runner.js --debug-helper (src/runner/debugHelper.ts),
 * forked on the first request and kept until the session ends. It checks state edits with the
 * keys' schemas and evaluates every JavaScript expression of the session (conditions, logpoints,
 * hovers, evaluate) over values the adapter read from the case file. One mechanism for the live
 * boundary, for checkpoints in history (Step Back, Reverse Continue) and for a run whose runner is
 * paused in js-debug or has exited: the helper is none of those runners, so it always answers.
 * A helper that does not answer in time (a hang the time limit did not catch, memory run out) is
 * killed and the next request starts another.
 */

/** Each expression's time limit, unless the session says otherwise. */
export const EVALUATE_TIMEOUT_MS = 1000;
/** How long past the expressions' own limits the adapter waits before it kills the helper. */
const GRACE_MS = 5000;

type Waiting = (r: DebugHelperResult | { type: "gone"; message: string }) => void;

export class DebugHelper {
  private helper?: { child: ChildProcess; next: number; waiting: Map<number, Waiting> };

  constructor(private readonly opts: { runnerPath: string; env: NodeJS.ProcessEnv; cwd: () => string; timeoutMs?: number }) {}

  get timeoutMs(): number {
    return this.opts.timeoutMs ?? EVALUATE_TIMEOUT_MS;
  }

  /** Starts the helper ahead of its first request (a breakpoint with a condition or a logpoint was set). */
  warm(): void {
    if (!this.helper) this.start();
  }

  async check(workflowFile: string, patch: Record<string, Json>): Promise<PatchCheckResult> {
    const r = await this.ask((id) => ({ type: "check", id, workflowPath: workflowFile, patch }), 120_000);
    if (r.type === "checked") return r;
    return {
      type: "checked",
      id: 0,
      problems: [],
      error: { code: "RUNNER_CRASHED", message: r.type === "gone" ? r.message : "wrong answer" },
    };
  }

  /** Each expression's result over the scope, in order; a helper that is gone makes every one an error saying so. */
  async evaluate(expressions: readonly string[], scope: EvaluationScope): Promise<Evaluation[]> {
    if (expressions.length === 0) return [];
    const limit = this.timeoutMs;
    const r = await this.ask(
      (id) => ({ type: "evaluate", id, expressions: [...expressions], scope, timeoutMs: limit }),
      limit * (expressions.length + 1) + GRACE_MS,
    );
    if (r.type === "evaluated" && r.results.length === expressions.length) return r.results;
    const error = r.type === "gone" ? r.message : "the evaluator answered something else";
    return expressions.map(() => ({ ok: false as const, kind: "thrown" as const, error }));
  }

  close(): void {
    this.helper?.child.kill();
    this.helper = undefined;
  }

  private ask(
    request: (id: number) => DebugHelperRequest,
    withinMs: number,
  ): Promise<DebugHelperResult | { type: "gone"; message: string }> {
    const helper = this.helper ?? this.start();
    const id = helper.next++;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        helper.waiting.delete(id);
        resolve({ type: "gone", message: `the evaluator did not answer within ${withinMs / 1000} s and was restarted` });
        if (this.helper === helper) this.close();
      }, withinMs);
      helper.waiting.set(id, (r) => {
        clearTimeout(timer);
        resolve(r);
      });
      helper.child.send(request(id));
    });
  }

  private start(): NonNullable<DebugHelper["helper"]> {
    const child = fork(this.opts.runnerPath, ["--debug-helper"], {
      execArgv: [],
      env: this.opts.env,
      cwd: this.opts.cwd(),
      stdio: ["ignore", "ignore", "pipe", "ipc"],
      serialization: "json",
    });
    const helper = { child, next: 1, waiting: new Map<number, Waiting>() };
    child.on("message", (raw) => {
      const parsed = DebugHelperResultSchema.safeParse(raw);
      if (!parsed.success) return;
      const settle = helper.waiting.get(parsed.data.id);
      helper.waiting.delete(parsed.data.id);
      settle?.(parsed.data);
    });
    child.on("exit", (code, signal) => {
      for (const settle of helper.waiting.values())
        settle({ type: "gone", message: `the evaluator exited (${signal ?? `code ${code}`}) before answering` });
      helper.waiting.clear();
      if (this.helper === helper) this.helper = undefined;
    });
    this.helper = helper;
    return helper;
  }
}

/** Where the helper runs: the workflow's folder, as the runner does. */
export function helperCwd(workflowFile: string): string {
  return workflowFile ? path.dirname(workflowFile) : process.cwd();
}
