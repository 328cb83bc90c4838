import assert from "node:assert/strict";
import { liveFromEvent, type RunnerEventLike } from "../../../src/extension/graphLive";
import type { GraphLive } from "../../../src/protocol/graph";

/**
 * The Workflow Graph's highlight while a run goes, from the runner's events in the order the
 * engine emits them (src/engine/engine.ts): what RunSessions hands the open graph panels.
 */

const ev = (type: string, superstep: number, data: unknown = {}): RunnerEventLike => ({ runId: "run-1", superstep, type, data });

/** Folds events through the mapping, keeping each highlight it produced. */
function follow(events: RunnerEventLike[]): (GraphLive | undefined)[] {
  let live: GraphLive | undefined;
  return events.map((e) => (live = liveFromEvent(live, e)));
}

describe("Workflow Graph highlight from runner events", () => {
  it("highlights the executors of the superstep that started, and keeps them while its steps report", () => {
    const seen = follow([
      ev("run_started", 0),
      ev("superstep_started", 1, { executors: ["load"] }),
      ev("step_completed", 1, { executor: "load" }),
      ev("checkpoint", 1, { checkpoint: "cp-1", pending: ["variance", "policy"] }),
      ev("superstep_started", 2, { executors: ["variance", "policy", "variance"] }),
      ev("warning", 2, { executor: "policy", message: "slow" }),
    ]);
    assert.equal(seen[0], undefined, "nothing runs before the first superstep");
    assert.deepEqual(seen[1], { source: "runner", runId: "run-1", superstep: 1, executors: ["load"] });
    assert.deepEqual(seen[3], seen[1], "a checkpoint keeps the superstep it closed until the next one starts");
    assert.deepEqual(seen[4], { source: "runner", runId: "run-1", superstep: 2, executors: ["variance", "policy"] });
    assert.equal(seen[5], seen[4]);
  });

  it("in step mode, highlights where the run waits: the executors that run next, at the checkpoint", () => {
    const seen = follow([
      ev("superstep_started", 1, { executors: ["load"] }),
      ev("checkpoint", 1, { pending: ["propose"] }),
      ev("run_paused", 1, { checkpoint: "cp-1", next: ["propose"] }),
      ev("superstep_started", 2, { executors: ["propose"] }),
    ]);
    assert.deepEqual(seen[2], { source: "checkpoint", runId: "run-1", superstep: 1, executors: ["propose"] });
    assert.deepEqual(seen[3], { source: "runner", runId: "run-1", superstep: 2, executors: ["propose"] });
  });

  for (const end of ["run_completed", "run_failed", "run_stopped", "run_waiting", "run_needs_replanning"]) {
    it(`clears when the run ends (${end}): the graph reads the case file again`, () => {
      const seen = follow([ev("superstep_started", 3, { executors: ["decide"] }), ev(end, 3, { checkpoint: "cp-3" })]);
      assert.equal(seen[1], undefined);
    });
  }

  it("takes only executor names from an event's data", () => {
    assert.deepEqual(liveFromEvent(undefined, ev("superstep_started", 1, { executors: ["a", 7, null, "b"] }))?.executors, ["a", "b"]);
    assert.deepEqual(liveFromEvent(undefined, ev("superstep_started", 1, null))?.executors, []);
  });
});
