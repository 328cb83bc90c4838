import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { z } from "zod";
import { type SqlJsStore } from "../../../src/casefile/index";
import { type EngineOptions } from "../../../src/engine/engine";
import { CasefileError } from "../../../src/engine/errors";
import { agent, code, edge, type ExecutorSpec, type StateShape } from "../../../src/engine/executors";
import type { ModelProvider } from "../../../src/engine/model";
import { defineWorkflow, type Workflow } from "../../../src/engine/workflow";
import { engineOn, withCaseFile } from "./helpers/caseFileOnDisk";

/**
 * What a failed superstep leaves on the record (mutation testing of engine.ts's fail(), issue
 * 18), on a case file on disk reopened: the step at fault is recorded failed beside the steps
 * that ran fine, with a step_failed event for it alone, and when the store refuses the step
 * records themselves the run still ends failed, saying why they are missing.
 */

let dir: string;
let file: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), "casefile-enginefailures-"));
  file = path.join(dir, "case.casefile");
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const onDisk = <T>(go: (store: SqlJsStore) => Promise<T> | T): Promise<T> => withCaseFile(file, go);
const engine = (wf: Workflow, options: EngineOptions = {}) => engineOn(file, wf, options);

/**
 * start sends to a and b, each of which sends to check: check gets two messages in superstep 3,
 * from a and from b, and runs as two steps of one executor, check and check#1. `check` decides
 * which of them goes wrong, by `ctx.from`.
 */
const reachedTwice = (name: string, check: ExecutorSpec, state: StateShape = {}): Workflow =>
  defineWorkflow({
    name,
    version: 1,
    state,
    start: "start",
    executors: {
      start: code({ run: () => "go" }),
      a: code({ run: () => "from a" }),
      b: code({ run: () => "from b" }),
      check,
    },
    edges: [edge("start", ["a", "b"]), edge("a", "check"), edge("b", "check")],
  });

describe("engine failures: the step at fault", () => {
  it("a step whose payload is not JSON is recorded failed, its sibling ok, and only it has a step_failed event", async () => {
    const wf = defineWorkflow({
      name: "fan",
      version: 1,
      state: {},
      start: "start",
      executors: {
        start: code({ run: () => "go" }),
        fine: code({ run: () => "fine" }),
        bad: code({ run: () => new Date(0) as never }),
        after: code({ run: () => undefined }),
      },
      edges: [edge("start", ["fine", "bad"]), edge("fine", "after"), edge("bad", "after")],
    });
    const r = await engine(wf)((e) => e.run());
    assert.equal(r.status, "failed", "the run failed");
    assert.deepEqual(
      [r.failedAt, r.superstep, r.error?.code, r.error?.executor],
      [2, 1, "INVALID_STATE_VALUE", "bad"],
      "at superstep 2, by bad",
    );
    const { steps, events } = await onDisk((s) => ({ steps: s.listSteps(r.runId, 2), events: s.listEvents({ runId: r.runId }) }));
    assert.deepEqual(
      steps.map((s) => [s.id, s.status, s.error?.code]),
      [
        [`${r.runId}:2:fine~attempt-1`, "ok", undefined],
        [`${r.runId}:2:bad~attempt-1`, "failed", "INVALID_STATE_VALUE"],
      ],
      "the step that sent the Date is the one at fault",
    );
    const failedEvents = events.filter((e) => e.type === "step_failed" || e.type === "run_failed");
    assert.deepEqual(
      failedEvents.map((e) => [e.type, e.superstep, e.data]),
      [
        [
          "step_failed",
          2,
          { step: `${r.runId}:2:bad~attempt-1`, executor: "bad", error: { code: r.error!.code, message: r.error!.message } },
        ],
        ["run_failed", 2, { error: r.error!, checkpoint: `${r.runId}:1` }],
      ],
      "a step_failed for bad alone, then the run's failure naming the checkpoint it rests at",
    );
    assert.equal(r.error!.message, 'executor "bad" wrote a Date object at "message": state holds JSON data only');
  });
});

describe("engine failures: one executor run twice in a superstep", () => {
  // Two messages to "check" in one superstep (from "a" and from "b") are two steps, check and
  // check#1; only the one that threw is at fault. kills engine.ts:363 MethodExpression (every) and
  // ArrowFunction (() => undefined): the step at fault looked up by executor name, the first
  // "check" (which ran fine) recorded failed with its sibling's error
  it("only the step that threw is recorded failed, not its namesake that ran fine", async () => {
    const wf = reachedTwice(
      "twice",
      code({
        run: (ctx) => {
          if (ctx.from === "b") throw new Error("b's message is bad");
        },
      }),
    );
    const r = await engine(wf)((e) => e.run());
    assert.deepEqual([r.status, r.failedAt, r.error?.executor], ["failed", 3, "check"], "failed at superstep 3, in check");
    const { steps, events } = await onDisk((s) => ({ steps: s.listSteps(r.runId, 3), events: s.listEvents({ runId: r.runId }) }));
    assert.deepEqual(
      steps.map((s) => [s.id, s.status, s.error?.message]),
      [
        [`${r.runId}:3:check~attempt-1`, "ok", undefined],
        [`${r.runId}:3:check#1~attempt-1`, "failed", `executor "check" failed: b's message is bad`],
      ],
      "the check of a's message ran fine; the check of b's failed",
    );
    assert.deepEqual(
      events.filter((e) => e.type === "step_failed").map((e) => (e.data as { step: string }).step),
      [`${r.runId}:3:check#1~attempt-1`],
      "one step_failed, for the step that threw",
    );
  });
});

describe("engine failures: one executor run twice, the second sending what is not JSON", () => {
  // The bug this found: a failure after the steps ran (a payload that is not JSON) named only the
  // executor, and the first step of that name, which ran fine, was recorded failed in place of the
  // one that sent it. nextCheckpoint now names the step.
  it("the step that sent the Date is recorded failed, not its namesake that sent JSON", async () => {
    // What check sends is checked whether or not an edge leads on from it.
    const wf = reachedTwice("twiceSent", code({ run: (ctx) => (ctx.from === "b" ? (new Date(0) as never) : "fine") }));
    const r = await engine(wf)((e) => e.run());
    const message = 'executor "check" wrote a Date object at "message": state holds JSON data only';
    assert.deepEqual([r.status, r.failedAt, r.error], ["failed", 3, { code: "INVALID_STATE_VALUE", message, executor: "check" }]);
    const { steps, events } = await onDisk((s) => ({ steps: s.listSteps(r.runId, 3), events: s.listEvents({ runId: r.runId }) }));
    assert.deepEqual(
      steps.map((s) => [s.id, s.status, s.error?.message]),
      [
        [`${r.runId}:3:check~attempt-1`, "ok", undefined],
        [`${r.runId}:3:check#1~attempt-1`, "failed", message],
      ],
      "check of b's message sent the Date; check of a's sent JSON",
    );
    assert.deepEqual(
      events.filter((e) => e.type === "step_failed").map((e) => (e.data as { step: string }).step),
      [`${r.runId}:3:check#1~attempt-1`],
      "one step_failed, for the step that sent the Date",
    );
  });
});

describe("engine failures: one executor run twice, the second writing what its key refuses", () => {
  // The same bug for writes: a write refused after the steps ran (a value its key's schema refuses,
  // a key written twice) named only the executor, and the first step of that name was recorded
  // failed. checkWrites now names the step that staged the write.
  it("the step whose write the schema refuses is recorded failed, not its namesake whose write was fine", async () => {
    const wf = reachedTwice(
      "twiceWritten",
      code({
        owns: ["fromA", "fromB"],
        run: (ctx) => {
          if (ctx.from === "a") ctx.write("fromA", 1);
          else ctx.write("fromB", "not a number" as never);
        },
      }),
      { fromA: z.number(), fromB: z.number() },
    );
    const r = await engine(wf)((e) => e.run());
    assert.deepEqual([r.status, r.failedAt, r.error?.code, r.error?.executor], ["failed", 3, "INVALID_STATE_VALUE", "check"]);
    const steps = await onDisk((s) => s.listSteps(r.runId, 3));
    assert.deepEqual(
      steps.map((s) => [s.id, s.status, s.error?.code]),
      [
        [`${r.runId}:3:check~attempt-1`, "ok", undefined],
        [`${r.runId}:3:check#1~attempt-1`, "failed", "INVALID_STATE_VALUE"],
      ],
      "check of b's message wrote the string; check of a's wrote a number",
    );
  });

  it("of a key written by both, the second writer's step is recorded failed for the double write", async () => {
    const wf = reachedTwice("twiceSameKey", code({ owns: ["seen"], run: (ctx) => ctx.write("seen", String(ctx.from)) }), {
      seen: z.string(),
    });
    const r = await engine(wf)((e) => e.run());
    assert.deepEqual([r.status, r.error?.code], ["failed", "DOUBLE_WRITE"]);
    const steps = await onDisk((s) => s.listSteps(r.runId, 3));
    assert.deepEqual(
      steps.map((s) => [s.id, s.status]),
      [
        [`${r.runId}:3:check~attempt-1`, "ok"],
        [`${r.runId}:3:check#1~attempt-1`, "failed"],
      ],
      "the second write of the key is the one refused",
    );
  });
});

describe("engine failures: a payload that throws when read", () => {
  // The bug this found: the getter's error reached the run as it was, EXECUTOR_FAILED with no
  // executor named and no step recorded failed. A value that cannot be read is bad output of the
  // step that sent it, like a value that is not JSON.
  it("a payload whose getter throws is its step's failure: the step recorded failed, the error naming the executor and what threw", async () => {
    const wf = defineWorkflow({
      name: "getter",
      version: 1,
      state: {},
      start: "start",
      executors: {
        start: code({
          run: () =>
            ({
              get total(): number {
                throw new Error("total is not ready");
              },
            }) as never,
        }),
        after: code({ run: () => undefined }),
      },
      edges: [edge("start", "after")],
    });
    const r = await engine(wf)((e) => e.run());
    const message = 'executor "start" wrote a value that threw when read at "message": total is not ready';
    assert.deepEqual([r.status, r.failedAt, r.error], ["failed", 1, { code: "INVALID_STATE_VALUE", message, executor: "start" }]);
    const { steps, events } = await onDisk((s) => ({ steps: s.listSteps(r.runId, 1), events: s.listEvents({ runId: r.runId }) }));
    assert.deepEqual(
      steps.map((s) => [s.id, s.executor, s.status, s.error]),
      [[`${r.runId}:1:start~attempt-1`, "start", "failed", { code: "INVALID_STATE_VALUE", message }]],
      "the step that sent it is recorded failed with the error",
    );
    assert.deepEqual(
      events.filter((e) => e.type === "step_failed" || e.type === "run_failed").map((e) => [e.type, e.data]),
      [
        ["step_failed", { step: `${r.runId}:1:start~attempt-1`, executor: "start", error: { code: "INVALID_STATE_VALUE", message } }],
        ["run_failed", { error: r.error!, checkpoint: `${r.runId}:0` }],
      ],
      "a step_failed for start, then the run's failure",
    );
  });
});

describe("engine failures: which attempt a failed superstep's records are", () => {
  // A failed superstep's step records are tagged with their attempt (resume retries it in the
  // same run): the count is of this run's failures at this superstep only.
  // kills engine.ts:356 (recorded; now :358) ObjectLiteral listEvents({}) and :357 (now :359) ConditionalExpression true
  it("counts only this run's earlier failures at the same superstep", async () => {
    const failing = new Set(["b", "c"]);
    const step = (id: string, next?: string) =>
      code({
        run: () => {
          if (failing.has(id)) throw new Error(`${id} is down`);
          return next;
        },
      });
    const wf = defineWorkflow({
      name: "attempts",
      version: 1,
      state: {},
      start: "a",
      executors: { a: code({ run: () => "go" }), b: step("b", "on"), c: step("c") },
      edges: [edge("a", "b"), edge("b", "c")],
    });
    const first = await engine(wf)((e) => e.run());
    const second = await engine(wf)((e) => e.run());
    failing.delete("b");
    const resumed = await engine(wf)((e) => e.resume(first.checkpointId));
    assert.deepEqual(
      [first.failedAt, second.failedAt, resumed.runId, resumed.failedAt],
      [2, 2, first.runId, 3],
      "both runs failed at b; the first, resumed, got past b and failed at c",
    );
    const ids = await onDisk((s) => [...s.listSteps(first.runId), ...s.listSteps(second.runId)].map((x) => x.id).sort());
    assert.deepEqual(
      ids,
      [
        `${first.runId}:1:a`,
        `${first.runId}:2:b`,
        `${first.runId}:2:b~attempt-1`,
        `${first.runId}:3:c~attempt-1`,
        `${second.runId}:1:a`,
        `${second.runId}:2:b~attempt-1`,
      ].sort(),
      "the other run's failure and the first failure at superstep 2 do not count as earlier attempts at c, or at the second run's b",
    );
  });
});

describe("engine failures: a case stopped for replanning", () => {
  it("a step that says the plan no longer holds ends the run needs_replanning, not failed, on the record", async () => {
    const wf = defineWorkflow({
      name: "replan",
      version: 1,
      state: {},
      start: "pay",
      edges: [],
      executors: {
        pay: code({
          run: () => {
            throw new CasefileError("NEEDS_REPLANNING", "the supplier's bank account changed");
          },
        }),
      },
    });
    const r = await engine(wf)((e) => e.run());
    assert.equal(r.status, "needs_replanning", "the result says a person must replan");
    const { run, ends } = await onDisk((s) => ({
      run: s.getRun(r.runId)!,
      ends: s.listEvents({ runId: r.runId }).filter((e) => e.type.startsWith("run_") && e.type !== "run_started"),
    }));
    assert.equal(run.status, "needs_replanning", "the case file says so too");
    assert.deepEqual(
      ends.map((e) => [e.type, e.data]),
      [["run_needs_replanning", { error: r.error!, checkpoint: `${r.runId}:0` }]],
      "one run_needs_replanning event, no run_failed",
    );
    assert.equal(r.error!.message, `executor "pay" failed: the supplier's bank account changed`);
  });
});

describe("engine failures: step records the store refuses", () => {
  it("a provider's usage that is not JSON leaves the run failed on the record, saying what the store refused and that the step records could not be stored", async () => {
    const odd: ModelProvider = { name: "odd", complete: async () => ({ text: "not a proposal", usage: { inputTokens: NaN } as never }) };
    const wf = defineWorkflow({
      name: "ask",
      version: 1,
      state: {},
      start: "propose",
      edges: [],
      executors: {
        propose: agent({
          proposal: z.object({ action: z.string(), reason: z.string(), facts: z.array(z.string()) }),
          model: { model: "m" },
          context: () => [{ role: "user", content: "pay?" }],
        }),
      },
    });
    const r = await engine(wf, { provider: odd })((e) => e.run());
    assert.equal(r.status, "failed", "the run ended failed");
    // The proposal is not JSON, so the step escalates rather than fails; the superstep's batch is
    // refused for the call record's usage, and then so are the failed superstep's step records.
    const row = `agentCalls row ${r.runId}:1:propose`;
    assert.deepEqual(
      r.error,
      {
        code: "INVALID_BATCH",
        message:
          `commit refused: ${row}.usage.inputTokens: NaN is not a JSON number ` +
          `(the superstep's step records could not be stored: commit refused: ${row}~attempt-1.usage.inputTokens: NaN is not a JSON number)`,
      },
      "the error says what the store refused, and why the step records are missing",
    );
    const { run, steps, calls, failed } = await onDisk((s) => ({
      run: s.getRun(r.runId)!,
      steps: s.listSteps(r.runId),
      calls: s.listAgentCalls(r.runId),
      failed: s.listEvents({ runId: r.runId }).filter((e) => e.type === "run_failed"),
    }));
    assert.deepEqual([run.status, run.error], ["failed", r.error], "the case file says the run failed, and why");
    assert.deepEqual([steps, calls], [[], []], "the refused records are not there");
    assert.deepEqual(
      failed.map((e) => e.data),
      [{ error: r.error!, checkpoint: `${r.runId}:0` }],
      "the run_failed event carries the error that says so",
    );
  });
});

describe("engine failures: a host log that throws", () => {
  it("loses its lines, not the steps that logged or warned: the run completes as it would with no log", async () => {
    const wf = defineWorkflow({
      name: "chatty",
      version: 1,
      state: { n: z.number() },
      start: "first",
      executors: {
        first: code({ owns: ["n"], run: (ctx) => (ctx.log("first says hello"), ctx.write("n", 1), "next") }),
        second: code({ reads: ["n"], run: (ctx) => void ctx.log(`second sees ${String(ctx.state.n)}`) }),
      },
      edges: [edge("first", "second")],
    });
    const tried: string[] = [];
    const log = (m: string): void => {
      tried.push(m);
      throw new Error("the editor's channel is closed");
    };
    const r = await engine(wf, { log, onEvent: () => assert.fail("a listener that throws is logged, and the log throws too") })((e) =>
      e.run(),
    );
    assert.deepEqual([r.status, r.error], ["completed", undefined], "the run completed, with no error");
    const steps = await onDisk((s) => s.listSteps(r.runId));
    assert.deepEqual(
      steps.map((s) => [s.executor, s.status]),
      [
        ["first", "ok"],
        ["second", "ok"],
      ],
      "both steps are recorded ok",
    );
    assert.ok(
      tried.includes("[first] first says hello") && tried.includes("[second] second sees 1"),
      `the steps' lines were handed to the log before it threw: ${JSON.stringify(tried)}`,
    );
    assert.ok(
      tried.some((m) => m.startsWith("event listener threw:")),
      `the throwing listener was reported to the log: ${JSON.stringify(tried)}`,
    );
  });
});
