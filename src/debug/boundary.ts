import type { EvaluationScope, ExceptionFilter } from "../protocol/debug";
import type { BoundaryHit, Breakpoints, Evaluator } from "./breakpoints";
import type { CaseReader } from "./caseReader";
import { messageFor } from "./caseView";

/**
 * What a superstep boundary does going forwards: stop (and why: the user's intent, an exception
 * filter, a breakpoint) or let the runner run the next superstep. Decided here from what the
 * session (session.ts) knows at the boundary; the session sends the StoppedEvent or releases the
 * runner. Reverse continue asks `breakpointsAt` too, without counting hits.
 */

/** What going forwards is for: it decides what the next boundary does. */
export type Intent = "continue" | "step" | "pause" | "entry" | "restart";

export interface Stop {
  reason: string;
  description?: string;
  hitBreakpointIds?: number[];
  exception?: ExceptionFilter;
}

export interface BoundaryFacts {
  intent: Intent;
  /** The runner's first boundary, and whether it is where the user already was (a runner started from a stop). */
  first: boolean;
  skipFirst: boolean;
  runId: string;
  at: { checkpoint: string; superstep: number; executors: string[] };
  /** Exception filters fired since the last boundary, and whether a commit or agent step completed. */
  exceptions: { filter: ExceptionFilter; description: string }[];
  judged: boolean;
}

export interface BoundaryContext {
  filters: ReadonlySet<ExceptionFilter>;
  breakpoints: Breakpoints;
  reader: CaseReader;
  /** Conditions and logpoints are JavaScript, evaluated by the debug helper. */
  evaluate: Evaluator;
  kindOf(executor: string): string | undefined;
}

/** The stop a boundary makes (undefined: go on), with the logpoint lines and condition problems to print either way. */
export async function decideBoundary(f: BoundaryFacts, c: BoundaryContext): Promise<{ stop?: Stop; logs: string[]; problems: string[] }> {
  const none = { logs: [], problems: [] };
  const { at, intent } = f;
  if (intent === "pause") return { stop: { reason: "pause" }, ...none };
  if (f.first && intent === "entry") return { stop: { reason: "entry" }, ...none };
  if (f.first && intent === "restart")
    return {
      stop: { reason: "restart", description: `re-running superstep ${at.superstep + 1} from ${at.checkpoint} as branch run ${f.runId}` },
      ...none,
    };
  if (f.first && f.skipFirst) return none;
  if (intent === "step") return { stop: { reason: "step" }, ...none };

  const fired = f.exceptions.filter((x) => c.filters.has(x.filter));
  if (c.filters.has("proposalRejected") && f.judged) {
    const rejected = await c.reader.rejectedAt(f.runId, at.superstep);
    if (rejected) fired.unshift({ filter: "proposalRejected", description: rejected });
  }
  if (c.filters.has("beforeEffect")) {
    const effect = at.executors.find((x) => c.kindOf(x) === "effect");
    if (effect) fired.push({ filter: "beforeEffect", description: `effect ${effect} is about to act` });
  }
  if (fired.length)
    return { stop: { reason: "exception", description: fired.map((x) => x.description).join("; "), exception: fired[0]!.filter }, ...none };

  const hit = await breakpointsAt(c, at.checkpoint, at.executors, true);
  const said = { logs: hit.logs, problems: hit.problems };
  if (!hit.stop.length) return said;
  const fn = hit.stop.every((b) => b.kind === "function");
  const failed = hit.problems.length ? `: ${hit.problems.join("; ")}` : "";
  return {
    stop: {
      reason: fn ? "function breakpoint" : "breakpoint",
      hitBreakpointIds: hit.stop.map((b) => b.id),
      description: `before ${[...new Set(hit.stop.map((b) => b.executor))].join(", ")} (${pausedLabel(at)})${failed}`,
    },
    ...said,
  };
}

/** The breakpoints the executors due at a checkpoint hit, the state read only when a condition or logpoint needs it. */
export async function breakpointsAt(
  c: Pick<BoundaryContext, "breakpoints" | "reader" | "evaluate">,
  checkpoint: string,
  executors: readonly string[],
  count: boolean,
): Promise<BoundaryHit> {
  let scope: ((executor: string) => EvaluationScope) | undefined;
  if (c.breakpoints.needsScope(executors)) {
    const store = await c.reader.snapshot();
    const cp = store.getCheckpoint(checkpoint);
    if (cp) {
      const state = c.reader.valuesAt(store, cp);
      scope = (executor) => ({ state, message: messageFor(cp, executor) ?? null });
    }
  }
  return c.breakpoints.check({ executors, ...(scope ? { scope } : {}) }, c.evaluate, { count });
}

export function pausedLabel(at: { checkpoint: string; superstep: number }): string {
  return `paused before superstep ${at.superstep + 1} (checkpoint ${at.checkpoint})`;
}
