import assert from "node:assert/strict";
import { z } from "zod";
import { code, edge } from "../../../src/engine/executors";
import { CHECKPOINT_FORMAT, type Checkpoint, type Json, type RunRecord } from "../../../src/engine/records";
import type { TaskOutcome } from "../../../src/engine/task";
import { checkWrites, nextCheckpoint, type SuperstepInput } from "../../../src/engine/superstep";
import { defineWorkflow } from "../../../src/engine/workflow";

/**
 * The pure core of a superstep, called directly (as langgraphjs tests algo.ts): checked writes
 * and what executors sent become the next checkpoint and one batch, with nothing committed.
 */

const wf = defineWorkflow({
  name: "pure",
  version: 1,
  state: { a: z.number(), b: z.number(), sum: z.number() },
  start: "split",
  executors: {
    split: code({ owns: [], run: () => "go" }),
    left: code({ owns: ["a"], run: () => "l" }),
    right: code({ owns: ["b"], run: () => "r" }),
    join: code({ reads: ["a", "b"], owns: ["sum"], run: () => undefined }),
    big: code({ run: () => undefined }),
  },
  edges: [
    edge("split", ["left", "right"]),
    edge(["left", "right"], "join"),
    edge("right", "big", { when: (_payload, state) => (state.b as number) > 5 }),
  ],
});

const run: RunRecord = {
  id: "run-1",
  workflow: { name: "pure", version: 1, graphHash: wf.graphHash },
  status: "running",
  createdAt: "t0",
  updatedAt: "t0",
  outputs: [],
};

const from: Checkpoint = {
  v: CHECKPOINT_FORMAT,
  id: "run-1:1",
  runId: "run-1",
  superstep: 1,
  createdAt: "t1",
  workflow: { name: "pure", version: 1, graphHash: wf.graphHash, executors: Object.keys(wf.executors) },
  keys: {},
  pending: [
    { to: "left", from: "split", payload: "go", kind: "data" },
    { to: "right", from: "split", payload: "go", kind: "data" },
  ],
  fanIn: {},
  local: {},
  waiting: [],
};

function outcome(executor: string, writes: Record<string, unknown>, sends: unknown[], extra: Partial<TaskOutcome> = {}): TaskOutcome {
  return {
    step: {
      id: `run-1:2:${executor}`,
      runId: "run-1",
      superstep: 2,
      executor,
      kind: "code",
      status: "ok",
      startedAt: "t2",
      endedAt: "t2",
      durationMs: 1,
      writes: Object.keys(writes),
      sent: sends.length,
    },
    writes: Object.entries(writes).map(([key, value]) => ({ executor, key, value })),
    facts: [],
    sends: sends as Json[],
    outputs: [],
    warnings: [],
    ...extra,
  };
}

function input(outcomes: TaskOutcome[]): SuperstepInput {
  return {
    workflow: wf,
    run,
    from,
    superstep: 2,
    values: {},
    outcomes,
    changed: checkWrites(
      wf,
      outcomes.flatMap((o) => o.writes),
    ),
    at: "t2",
    stamp: from.workflow,
  };
}

describe("superstep core: nextCheckpoint", () => {
  it("versions the changed keys, routes a fan-in once both have sent, and batches every record", () => {
    const outcomes = [outcome("left", { a: 2 }, ["l"]), outcome("right", { b: 7 }, ["r"], { outputs: [{ b: 7 }] })];
    const next = nextCheckpoint(input(outcomes));
    assert.equal(next.checkpoint.id, "run-1:2");
    assert.equal(next.checkpoint.parentId, "run-1:1");
    assert.deepEqual(next.checkpoint.keys, { a: { version: 1, run: "run-1" }, b: { version: 1, run: "run-1" } });
    assert.deepEqual(next.values, { a: 2, b: 7 });
    assert.deepEqual(
      next.checkpoint.pending.map((m) => [m.to, m.from]),
      [
        ["join", "left+right"],
        ["big", "right"],
      ],
      "the fan-in delivers one message with both payloads; the conditional edge sees b after the superstep",
    );
    assert.deepEqual(next.checkpoint.pending[0]!.payload, { left: "l", right: "r" });
    assert.deepEqual(next.checkpoint.fanIn, {});
    assert.deepEqual(next.run.outputs, [{ b: 7 }]);
    assert.deepEqual(
      next.batch.events!.map((e) => e.type),
      ["step_completed", "step_completed", "output", "checkpoint"],
    );
    assert.deepEqual(
      next.batch.values!.map((v) => [v.key, v.version]),
      [
        ["a", 1],
        ["b", 1],
      ],
    );
    assert.equal(run.outputs!.length, 0, "the input run record is not changed");
    assert.deepEqual(from.fanIn, {}, "nor the checkpoint it started from");
  });

  it("buffers one side of a fan-in in the checkpoint until the other has sent", () => {
    const next = nextCheckpoint(input([outcome("left", { a: 2 }, ["l"]), outcome("right", { b: 1 }, [])]));
    assert.deepEqual(next.checkpoint.pending, []);
    assert.deepEqual(next.checkpoint.fanIn, { "left+right->join": { left: "l" } });
  });

  it("throws, building nothing, when a payload is not JSON or an edge's condition throws", () => {
    assert.throws(
      () => nextCheckpoint(input([outcome("left", { a: 2 }, [new Date(0)])])),
      (e: Error & { code?: string; details?: { executor?: string } }) =>
        e.code === "INVALID_STATE_VALUE" && e.details?.executor === "left" && /a Date object at "message"/.test(e.message),
    );
    const throwing = defineWorkflow({
      ...wf,
      edges: [edge("split", ["left", "right"]), edge(["left", "right"], "join"), edge("right", "big", { when: () => JSON.parse("{") })],
    });
    assert.throws(
      () => nextCheckpoint({ ...input([outcome("right", { b: 1 }, ["r"])]), workflow: throwing }),
      (e: Error & { code?: string; details?: { edge?: string } }) => e.code === "EDGE_FAILED" && e.details?.edge === "right->big",
    );
  });
});
