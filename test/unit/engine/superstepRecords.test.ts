import assert from "node:assert/strict";
import { z } from "zod";
import { isCasefileError } from "../../../src/engine/errors";
import { code, edge, fact, loader, request } from "../../../src/engine/executors";
import { CHECKPOINT_FORMAT, type Checkpoint, type Json, type VerdictRecord, type WaitingRequest } from "../../../src/engine/records";
import { checkWrites, nextCheckpoint, nextKeyRefs, route, toJson, workflowStamp } from "../../../src/engine/superstep";
import type { TaskOutcome } from "../../../src/engine/task";
import { defineWorkflow } from "../../../src/engine/workflow";

/**
 * The records one superstep becomes, called directly as the pure functions they are (mutation
 * testing of superstep.ts, issue 18): what a checkpoint keeps of each step (local state, waits,
 * warnings, facts, verdicts), which payloads an edge condition lets through, and the words a
 * value that is not JSON is refused with.
 */

const wf = defineWorkflow({
  name: "records",
  version: 1,
  state: { doc: fact(z.string()), n: z.number() },
  start: "load",
  executors: {
    load: loader({ owns: ["doc"], run: () => undefined }),
    count: code({ owns: ["n"], run: () => undefined }),
    ask: request({ prompt: () => ({ title: "ok?" }), onAnswer: () => undefined }),
    big: code({ run: () => undefined }),
  },
  edges: [edge("load", ["count", "ask"]), edge("count", "big", { when: (payload, state) => (payload as number) > (state.n as number) })],
});

const from: Checkpoint = {
  v: CHECKPOINT_FORMAT,
  id: "R:1",
  runId: "R",
  superstep: 1,
  createdAt: "t1",
  workflow: workflowStamp(wf),
  keys: { n: { version: 4, run: "P" } },
  pending: [],
  fanIn: {},
  local: { big: "kept" },
  waiting: [{ id: "R:1:ask", executor: "ask", runId: "R", superstep: 1, createdAt: "t1", prompt: { title: "old" }, message: null }],
};

function outcome(executor: string, extra: Partial<TaskOutcome> = {}): TaskOutcome {
  return {
    step: {
      id: `R:2:${executor}`,
      runId: "R",
      superstep: 2,
      executor,
      kind: "code",
      status: "ok",
      startedAt: "t2",
      endedAt: "t2",
      durationMs: 1.5,
      writes: [],
      sent: 0,
    },
    writes: [],
    facts: [],
    sends: [],
    outputs: [],
    warnings: [],
    ...extra,
  };
}

const build = (outcomes: TaskOutcome[], values: Record<string, Json> = { n: 1 }) =>
  nextCheckpoint({
    workflow: wf,
    run: {
      id: "R",
      workflow: { name: "records", version: 1, graphHash: wf.graphHash },
      status: "running",
      createdAt: "t0",
      updatedAt: "t0",
      outputs: [],
    },
    from,
    superstep: 2,
    values,
    outcomes,
    changed: checkWrites(
      wf,
      outcomes.flatMap((o) => o.writes),
    ),
    at: "t2",
    stamp: from.workflow,
  });

describe("superstep records: what a checkpoint keeps of each step", () => {
  it("keeps each executor's local state, the requests still open and the new one, and says so in its events", () => {
    const waiting: WaitingRequest = {
      id: "R:2:ask",
      executor: "ask",
      runId: "R",
      superstep: 2,
      createdAt: "t2",
      prompt: { title: "Pay?" },
      message: 1,
    };
    const next = build([
      outcome("count", { local: { value: { seen: 3 } }, warnings: ["slow source"] }),
      outcome("ask", { waiting, step: { ...outcome("ask").step, status: "waiting", kind: "request" } }),
    ]);
    assert.deepEqual(next.checkpoint.local, { big: "kept", count: { seen: 3 } }, "count's local state beside big's earlier one");
    assert.deepEqual(
      next.checkpoint.waiting.map((w) => w.id),
      ["R:1:ask", "R:2:ask"],
      "the request still open and the new one",
    );
    assert.deepEqual(
      next.batch.events!.map((e) => [e.type, e.data]),
      [
        ["step_completed", { step: "R:2:count", executor: "count", kind: "code", status: "ok", writes: [], durationMs: 1.5 }],
        ["warning", { executor: "count", message: "slow source" }],
        ["step_completed", { step: "R:2:ask", executor: "ask", kind: "request", status: "waiting", writes: [], durationMs: 1.5 }],
        ["request_waiting", { request: "R:2:ask", executor: "ask", prompt: { title: "Pay?" } }],
        ["checkpoint", { checkpoint: "R:2", changed: [], pending: [] }],
      ],
      "every event of the superstep, in order, with what the views show",
    );
    assert.ok(
      next.batch.events!.every((e) => e.runId === "R" && e.superstep === 2 && e.at === "t2"),
      "every event is the run's, at this superstep and time",
    );
  });

  it("commits a loader's fact with the key's new version, and a commit step's verdict, in the batch", () => {
    const provenance = { source: "erp", sourceVersion: "e1", readAt: "t2" };
    const verdict: VerdictRecord = {
      id: "R:2:count",
      runId: "R",
      superstep: 2,
      executor: "count",
      rules: [],
      verdict: "accepted",
      reason: "ok",
      diff: {},
      at: "t2",
    };
    const next = build([
      outcome("load", {
        writes: [{ executor: "load", key: "doc", value: { value: "text", provenance } }],
        facts: [{ key: "doc", provenance }],
      }),
      outcome("count", { writes: [{ executor: "count", key: "n", value: 2 }], verdict }),
    ]);
    assert.deepEqual(
      next.checkpoint.keys,
      { doc: { version: 1, run: "R" }, n: { version: 5, run: "R" } },
      "n's version follows the parent's 4",
    );
    assert.deepEqual(next.batch.facts, [{ ...provenance, runId: "R", superstep: 2, key: "doc", version: 1, executor: "load" }]);
    assert.deepEqual(next.batch.verdicts, [verdict], "the verdict is committed with the superstep");
    assert.deepEqual(
      next.batch.values!.map((v) => [v.key, v.version, v.run]),
      [
        ["doc", 1, "R"],
        ["n", 5, "R"],
      ],
    );
    assert.deepEqual(next.batch.agentCalls, [], "no agent ran");
  });

  it("lets a payload through an edge whose condition sees the state after the superstep, and holds it back otherwise", () => {
    assert.deepEqual(
      build([outcome("count", { writes: [{ executor: "count", key: "n", value: 5 }], sends: [9] })]).checkpoint.pending,
      [{ to: "big", from: "count", payload: 9, kind: "data" }],
      "9 > 5: the condition saw n as written in this superstep",
    );
    assert.deepEqual(
      build([outcome("count", { writes: [{ executor: "count", key: "n", value: 10 }], sends: [9] })]).checkpoint.pending,
      [],
      "9 > 10 is false: nothing is sent",
    );
    assert.deepEqual(
      route(wf, "load", "x", {}, {}).map((m) => m.to),
      ["count", "ask"],
      "a fan-out sends to every target",
    );
  });

  it("refuses a condition that returns something other than true or false, naming the edge and what it returned", () => {
    const odd = defineWorkflow({ ...wf, edges: [edge("load", ["count", "ask"]), edge("count", "big", { when: () => "yes" as never })] });
    assert.throws(
      () => route(odd, "count", 1, {}, {}),
      (e: unknown) => {
        assert.ok(isCasefileError(e), "a typed error");
        assert.equal(e.code, "EDGE_FAILED");
        assert.equal(e.message, 'condition of edge "count->big" returned "yes", not true or false');
        assert.deepEqual(e.details, { executor: "count", edge: "count->big" });
        return true;
      },
    );
  });
});

describe("superstep records: values that are not JSON", () => {
  const refused = (value: unknown) => {
    try {
      toJson(value, "n.deep", "count");
    } catch (e) {
      assert.ok(isCasefileError(e) && e.code === "INVALID_STATE_VALUE", `a typed refusal, not ${String(e)}`);
      assert.deepEqual(e.details, { executor: "count", key: "n" }, "the details name the executor and the key");
      return e.message;
    }
    return assert.fail(`${String(value)} was taken as JSON`);
  };

  it("names NaN, infinity, a bigint and a symbol, each at its path", () => {
    assert.equal(refused(NaN), 'executor "count" wrote NaN at "n.deep": state holds JSON data only');
    assert.equal(refused({ list: [1, Infinity] }), 'executor "count" wrote Infinity at "n.deep.list.1": state holds JSON data only');
    assert.equal(refused(10n), 'executor "count" wrote a bigint at "n.deep": state holds JSON data only');
    assert.equal(refused([Symbol("s")]), 'executor "count" wrote a symbol at "n.deep.0": state holds JSON data only');
    assert.equal(refused(new Map()), 'executor "count" wrote a Map object at "n.deep": state holds JSON data only');
  });

  it("names a value that throws when read at the part holding it, with what it threw", () => {
    const throwing = Object.defineProperty({}, "total", {
      enumerable: true,
      get: () => {
        throw new Error("total is not ready");
      },
    });
    assert.equal(
      refused({ list: [1, throwing] }),
      'executor "count" wrote a value that threw when read at "n.deep.list.1": total is not ready',
    );
    const revoked = Proxy.revocable({}, {});
    revoked.revoke();
    assert.match(refused([revoked.proxy]), /^executor "count" wrote a value that threw when read at "n\.deep\.0": /);
  });

  it("takes plain and prototype-less objects, dropping undefined fields as JSON does", () => {
    const bare = Object.assign(Object.create(null) as object, { a: 1 });
    assert.deepEqual(toJson({ bare, gone: undefined, list: [null, true, "s", 0] }, "n", "count"), {
      bare: { a: 1 },
      list: [null, true, "s", 0],
    });
  });

  it("versions a key changed for the first time at 1, and one changed again after its parent's version", () => {
    assert.deepEqual(nextKeyRefs({ a: { version: 3, run: "P" }, b: { version: 1, run: "P" } }, ["a", "c"], "R"), {
      a: { version: 4, run: "R" },
      b: { version: 1, run: "P" },
      c: { version: 1, run: "R" },
    });
  });
});
