import assert from "node:assert/strict";
import { z } from "zod";
import { code, edge, extract, fact, loader } from "../../../src/engine/executors";
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

// Survivors of the mutation run over superstep.ts (issue 18): each test names what it kills.
describe("superstep core: what mutation testing found unchecked", () => {
  // Kills: `outputs` starting empty (the run's earlier outputs dropped), the output event's data
  // emptied, and the batch committing no run record (`runs: []`).
  it("keeps the run's earlier outputs, adds this superstep's, and commits the run record with them", () => {
    const earlier: SuperstepInput = { ...input([outcome("right", { b: 7 }, ["r"], { outputs: [{ b: 7 }] })]) };
    earlier.run = { ...run, outputs: [{ first: true }] };
    const next = nextCheckpoint(earlier);
    assert.deepEqual(next.run.outputs, [{ first: true }, { b: 7 }], "the run's outputs after the superstep");
    assert.deepEqual(next.batch.runs, [next.run], "the batch commits the run record holding the outputs");
    const output = next.batch.events!.find((e) => e.type === "output");
    assert.deepEqual(output?.data, { executor: "right", output: { b: 7 } }, "the output event names the executor and the output");
  });

  // Kills the mutants of deepFreeze (its condition, its freeze, its recursion): executors of the
  // next superstep get the values frozen, nested objects included.
  it("hands on the changed values deeply frozen, so that no executor can change state in place", () => {
    const nested = { ...input([outcome("left", { a: 2 }, [])]) };
    const value = { deep: { list: [1, { x: 1 }] } };
    nested.changed = new Map([["a", { executor: "left", value: value as unknown as Json }]]);
    const next = nextCheckpoint(nested);
    const v = next.values.a as unknown as typeof value;
    assert.ok(Object.isFrozen(v) && Object.isFrozen(v.deep) && Object.isFrozen(v.deep.list), "the value and its nested object and array");
    assert.ok(Object.isFrozen(v.deep.list[1]), "an object inside an array");
    assert.throws(() => {
      (v.deep.list[1] as { x: number }).x = 2;
    }, TypeError);
  });

  // Kills the emptied details ({ executor, key }) of write errors and the emptied path of array
  // items and class names in toJson's message.
  it("names executor and key in every write error's details, and the path and class of a non-JSON value", () => {
    const details = (writes: TaskOutcome["writes"]) => {
      try {
        checkWrites(wf, writes);
      } catch (e) {
        const err = e as Error & { code?: string; details?: Record<string, unknown> };
        return { code: err.code, details: err.details, message: err.message };
      }
      return assert.fail(`no error for ${JSON.stringify(writes)}`);
    };
    assert.deepEqual(details([{ executor: "left", key: "nope", value: 1 }]), {
      code: "UNKNOWN_KEY",
      details: { executor: "left", key: "nope" },
      message: 'executor "left" wrote unknown state key "nope"',
    });
    assert.deepEqual(details([{ executor: "right", key: "a", value: 1 }]).details, { executor: "right", key: "a" });
    assert.deepEqual(
      details([
        { executor: "left", key: "a", value: 1 },
        { executor: "left", key: "a", value: 2 },
      ]).details,
      { executor: "left", key: "a" },
    );
    const schemaFree = defineWorkflow({
      name: "free",
      version: 1,
      state: { blob: z.any() },
      start: "w",
      executors: { w: code({ owns: ["blob"], run: () => undefined }) },
      edges: [],
    });
    assert.throws(
      () => checkWrites(schemaFree, [{ executor: "w", key: "blob", value: { list: [1, new Date(0)] } }]),
      (e: Error & { details?: unknown }) => {
        assert.equal(e.message, 'executor "w" wrote a Date object at "blob.list.1": state holds JSON data only');
        assert.deepEqual(e.details, { executor: "w", key: "blob" });
        return true;
      },
    );
    assert.throws(
      () => checkWrites(schemaFree, [{ executor: "w", key: "blob", value: { f: () => 1 } }]),
      (e: Error) => e.message === 'executor "w" wrote a function at "blob.f": state holds JSON data only',
    );
    // An object whose prototype has no constructor (made with Object.create from a null-prototype
    // object) is named "non-plain", not a TypeError of toJson's own.
    // kills superstep.ts:80 OptionalChaining proto?.constructor.name and StringLiteral "non-plain"
    assert.throws(
      () => checkWrites(schemaFree, [{ executor: "w", key: "blob", value: { odd: Object.create(Object.create(null)) } }]),
      (e: Error & { code?: string }) => {
        assert.equal(e.code, "INVALID_STATE_VALUE", `a typed refusal, not ${e.name}: ${e.message}`);
        assert.equal(e.message, 'executor "w" wrote a non-plain object at "blob.odd": state holds JSON data only');
        return true;
      },
    );
  });

  // kills superstep.ts:33 ObjectLiteral {} (an extract key's write error without details, so the
  // run's error named no executor) and superstep.ts:40 StringLiteral "no executor owns"
  it("refuses a write to an extract key or to a key no executor owns, naming the executor and the key", () => {
    const withExtract = defineWorkflow({
      name: "extracts",
      version: 1,
      state: {
        doc: fact(z.string()),
        head: extract(z.string(), { from: "doc", run: (d: string) => d.slice(0, 3) }),
        spare: z.number(),
      },
      start: "load",
      executors: { load: loader({ owns: ["doc"], run: () => undefined }) },
      edges: [],
    });
    const refusal = (key: string) => {
      try {
        checkWrites(withExtract, [{ executor: "load", key, value: "x" }]);
      } catch (e) {
        const err = e as Error & { code?: string; details?: Record<string, unknown> };
        return { code: err.code, details: err.details, message: err.message };
      }
      return assert.fail(`no error for a write to ${key}`);
    };
    assert.deepEqual(refusal("head"), {
      code: "WRITE_NOT_OWNED",
      details: { executor: "load", key: "head" },
      message: 'executor "load" wrote extract key "head": extracts are made by the engine from "doc", never written by an executor',
    });
    assert.deepEqual(refusal("spare"), {
      code: "WRITE_NOT_OWNED",
      details: { executor: "load", key: "spare" },
      message: 'executor "load" wrote state key "spare", which no executor owns',
    });
  });

  // A run record without outputs (the field is optional: a record written before outputs were
  // kept) gets this superstep's outputs only. kills superstep.ts:187 ArrayDeclaration
  it("starts the outputs of a run record that has none from this superstep's", () => {
    const older = input([outcome("right", { b: 7 }, ["r"], { outputs: [{ b: 7 }] })]);
    const { outputs: _none, ...withoutOutputs } = run;
    older.run = withoutOutputs;
    assert.deepEqual(nextCheckpoint(older).run.outputs, [{ b: 7 }], "only the output of this superstep");
  });
});
