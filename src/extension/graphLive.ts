import type { GraphLive } from "../protocol/graph";

/**
 * What the Workflow Graph highlights while a run goes, from the runner's events (RunSessions
 * feeds them in as they arrive; open graph panels of the run's workflow show the result):
 *   superstep_started  the executors of the superstep running now (source "runner");
 *   run_paused         step mode waits at a boundary: the executors that run next, at the
 *                      checkpoint it waits on (source "checkpoint", as the case file would say);
 *   run_* (it ended)   undefined: no run drives the highlight any more, the panel reads the case
 *                      file again (the executors pending at the latest checkpoint, if any).
 * Any other event leaves the highlight as it is. Plain data, no vscode: unit-tested.
 */

export interface RunnerEventLike {
  runId: string;
  superstep: number;
  type: string;
  data: unknown;
}

const ENDED = new Set(["run_completed", "run_failed", "run_stopped", "run_waiting", "run_needs_replanning"]);

export function liveFromEvent(current: GraphLive | undefined, event: RunnerEventLike): GraphLive | undefined {
  if (ENDED.has(event.type)) return undefined;
  if (event.type === "superstep_started") {
    return { source: "runner", runId: event.runId, superstep: event.superstep, executors: names(event.data, "executors") };
  }
  if (event.type === "run_paused") {
    return { source: "checkpoint", runId: event.runId, superstep: event.superstep, executors: names(event.data, "next") };
  }
  return current;
}

/** The executor names under `field` of an event's data, once each, in order. */
function names(data: unknown, field: string): string[] {
  const list = typeof data === "object" && data !== null ? (data as Record<string, unknown>)[field] : undefined;
  return Array.isArray(list) ? [...new Set(list.filter((n): n is string => typeof n === "string"))] : [];
}
