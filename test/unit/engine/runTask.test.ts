import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { z } from "zod";
import { type SqlJsStore } from "../../../src/casefile/index";
import { Engine, type RunResult } from "../../../src/engine/engine";
import { code, edge, fact, loader, request, type ExecutorSpec, type LoaderContext } from "../../../src/engine/executors";
import type { CasefileError } from "../../../src/engine/errors";
import type { Json } from "../../../src/engine/records";
import { defineWorkflow, type Workflow, type WorkflowSpec } from "../../../src/engine/workflow";
import { withCaseFile } from "./helpers/caseFileOnDisk";

/**
 * One executor run for one message, as its author and the case file see it (mutation testing of
 * steps.ts, issue 18): what the step's context holds and hides, what its step record says, and
 * how a request step's bad prompt or a fact without provenance fails the run, naming the step.
 */

let dir: string;
let file: string;
// The log lines of this test only: Stryker loads the test files once and reruns them in one
// process per mutant, so a module-level list kept from an earlier run hid a mutant that dropped
// the line (steps.ts:112 BlockStatement, steps.ts:113 StringLiteral).
const logs: string[] = [];
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), "casefile-runtask-"));
  file = path.join(dir, "case.casefile");
  logs.length = 0;
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const onDisk = <T>(go: (store: SqlJsStore) => Promise<T> | T): Promise<T> => withCaseFile(file, go);

/** A clock that moves one second per reading, so that every time recorded says which came first. */
function ticking(): () => Date {
  let t = Date.UTC(2026, 0, 1);
  return () => new Date((t += 1000));
}

/** `alter`: changes the defined workflow before the run, as plain JavaScript could. */
const run = (spec: Omit<WorkflowSpec, "name" | "version">, input: Json = null, alter?: (wf: Workflow) => void): Promise<RunResult> =>
  onDisk((store) => {
    const wf = defineWorkflow({ name: "steps", version: 1, ...spec });
    alter?.(wf);
    return new Engine(wf, store, { now: ticking(), log: (m) => logs.push(m) }).run(input);
  });

describe("run task: what an executor's context holds", () => {
  it("shows only the keys the executor reads or owns, with the message, its sender, the run and the superstep", async () => {
    const seen: Record<string, unknown>[] = [];
    const r = await run({
      state: { a: z.number(), b: z.number(), hidden: z.number(), never: z.number() },
      start: "first",
      executors: {
        first: code({ owns: ["a", "hidden"], run: (ctx) => (ctx.write("a", 1), ctx.write("hidden", 2), { go: true }) }),
        second: code({
          reads: ["a", "never"],
          owns: ["b"],
          run: (ctx) => {
            seen.push({
              state: { ...ctx.state },
              message: ctx.message,
              from: ctx.from,
              runId: ctx.runId,
              superstep: ctx.superstep,
              executor: ctx.executor,
            });
            seen.push({ frozen: Object.isFrozen(ctx.state), hasNever: "never" in ctx.state });
            ctx.log("looked at a");
          },
        }),
      },
      edges: [edge("first", "second")],
    });
    assert.equal(r.status, "completed", "the run completed");
    assert.deepEqual(
      seen,
      [
        { state: { a: 1 }, message: { go: true }, from: "first", runId: r.runId, superstep: 2, executor: "second" },
        { frozen: true, hasNever: false },
      ],
      "second sees a (it reads it), not hidden (first's own), and no entry for a key never written",
    );
    assert.ok(logs.includes("[second] looked at a"), `the log line is prefixed with the executor: ${JSON.stringify(logs)}`);
  });

  it("records each step's writes, sends, kind and times, and sends a returned value but not undefined", async () => {
    const before = performance.now();
    const r = await run({
      state: { a: z.number() },
      start: "first",
      executors: {
        first: code({ owns: ["a"], run: (ctx) => (ctx.write("a", 1), ctx.send("one"), "two") }),
        second: code({ run: async () => void (await new Promise((r) => setTimeout(r, 30))) }),
      },
      edges: [edge("first", "second")],
    });
    const wall = performance.now() - before;
    const steps = await onDisk((s) => s.listSteps(r.runId));
    assert.deepEqual(
      steps.map((s) => [s.executor, s.kind, s.status, s.writes, s.sent]),
      [
        ["first", "code", "ok", ["a"], 2],
        ["second", "code", "ok", [], 0],
        ["second", "code", "ok", [], 0],
      ],
      "first wrote a and sent twice (ctx.send and its return); second returned nothing, so sent nothing",
    );
    for (const s of steps) assert.ok(s.endedAt > s.startedAt, `${s.id} ended after it started (${s.startedAt} .. ${s.endedAt})`);
    // kills steps.ts:76 ArithmeticOperator monotonicMs() + t0, and ... * 1000 for / 1000
    for (const s of steps)
      assert.ok(s.durationMs >= 0 && s.durationMs <= wall, `${s.id} took between 0 and the run's ${wall} ms, not ${s.durationMs} ms`);
    const slow = steps[1]!;
    assert.ok(slow.durationMs >= 29, `a step that waited 30 ms reports at least that long, not ${slow.durationMs}`);
    assert.ok(/^\d+(\.\d{1,3})?$/.test(String(slow.durationMs)), `durations are kept to the microsecond: ${slow.durationMs}`);
    assert.deepEqual(
      steps.map((s) => s.id),
      [`${r.runId}:1:first`, `${r.runId}:2:second`, `${r.runId}:2:second#1`],
      "two messages to one executor in one superstep are two steps",
    );
  });

  it("a loader's fact is stored with its source, version and the time it was read", async () => {
    const r = await run({
      state: { invoice: fact(z.object({ total: z.number() })) },
      start: "load",
      executors: {
        load: loader({ owns: ["invoice"], run: (ctx) => ctx.fact("invoice", { total: 5 }, { source: "erp", sourceVersion: "v7" }) }),
      },
      edges: [],
    });
    const { value, facts, step } = await onDisk((s) => ({
      value: s.readValues(s.latestCheckpoint(r.runId)!.keys).invoice as { value: Json; provenance: { readAt: string } },
      facts: s.listFacts(r.runId),
      step: s.listSteps(r.runId)[0]!,
    }));
    assert.ok(value.provenance.readAt > step.startedAt && value.provenance.readAt < step.endedAt, "the fact was read during the step");
    assert.deepEqual(value, { value: { total: 5 }, provenance: { source: "erp", sourceVersion: "v7", readAt: value.provenance.readAt } });
    assert.deepEqual(
      facts.map((f) => [f.key, f.source, f.sourceVersion, f.executor]),
      [["invoice", "erp", "v7", "load"]],
      "the fact record names where it came from and who loaded it",
    );
  });
});

describe("run task: failures named with the step", () => {
  const failure = async (executors: Record<string, ExecutorSpec>, state: WorkflowSpec["state"] = {}, alter?: (wf: Workflow) => void) => {
    const r = await run({ state, start: Object.keys(executors)[0]!, executors, edges: [] }, null, alter);
    assert.equal(r.status, "failed", "the run failed");
    const step = await onDisk((s) => s.listSteps(r.runId)[0]!);
    assert.deepEqual(
      [step.status, step.error],
      ["failed", r.error && { code: r.error.code, message: r.error.message }],
      "the step is recorded failed",
    );
    return r.error!;
  };

  it("a fact written by a step that is not a loader is refused naming the step, its kind and the key", async () => {
    const sneaky = code({ run: (ctx) => (ctx as LoaderContext).fact("doc", 1, { source: "erp", sourceVersion: "1" }) });
    const err = await failure({ sneaky }, { doc: z.number() });
    assert.deepEqual(err, {
      code: "FACT_WRITER_NOT_LOADER",
      message: 'executor "sneaky" failed: executor "sneaky" (code) tried to write fact "doc": only loaders may write facts',
      executor: "sneaky",
    });
  });

  for (const [what, from] of [
    ["no source", { source: "", sourceVersion: "1" }],
    ["a version that is not a string", { source: "erp", sourceVersion: 7 }],
    ["no provenance at all", undefined],
  ] as const) {
    it(`a fact with ${what} is refused naming the loader and key`, async () => {
      const load = loader({ owns: ["doc"], run: (ctx) => ctx.fact("doc", 1, from as never) });
      const err = await failure({ load }, { doc: fact(z.number()) });
      assert.equal(err.code, "INVALID_STATE_VALUE");
      assert.equal(err.message, 'executor "load" failed: loader "load" wrote fact "doc" without a source and source version');
    });
  }

  // A refused fact a step catches (to load it elsewhere, or say which key) carries the typed
  // error's details: kills steps.ts:120 and steps.ts:130 ObjectLiteral {}.
  it("a fact refusal the step catches names the executor and the key in its details", async () => {
    const caught: unknown[] = [];
    const keep = (e: unknown) => caught.push({ code: (e as CasefileError).code, details: (e as CasefileError).details });
    const r = await run({
      state: { doc: z.number(), ref: fact(z.number()) },
      start: "sneaky",
      executors: {
        sneaky: code({
          owns: ["doc"],
          run: (ctx) => {
            try {
              (ctx as LoaderContext).fact("doc", 1, { source: "erp", sourceVersion: "1" });
            } catch (e) {
              keep(e);
            }
            return "next";
          },
        }),
        load: loader({
          owns: ["ref"],
          run: (ctx) => {
            try {
              ctx.fact("ref", 1, undefined as never);
            } catch (e) {
              keep(e);
            }
          },
        }),
      },
      edges: [edge("sneaky", "load")],
    });
    assert.equal(r.status, "completed", "the steps caught the refusals, so the run completed");
    assert.deepEqual(
      caught,
      [
        { code: "FACT_WRITER_NOT_LOADER", details: { executor: "sneaky", key: "doc" } },
        { code: "INVALID_STATE_VALUE", details: { executor: "load", key: "ref" } },
      ],
      "each refusal names the step and the fact key",
    );
  });

  // defineWorkflow refuses a kind the engine does not have (workflowGraph.test.ts); a workflow
  // object changed after it was defined (plain JavaScript) still fails at that step, naming the
  // step and the kind, and runs nothing of it.
  // kills steps.ts:63 ConditionalExpression and BlockStatement, steps.ts:65 CallExpression and StringLiteral
  it("an executor of a kind the engine does not know fails its step naming the step and the kind", async () => {
    const tick = code({ run: () => "ran anyway" });
    const err = await failure({ tick }, {}, (wf) => Object.assign(wf.executors.tick!, { kind: "cron" }));
    assert.deepEqual(err, {
      code: "INVALID_WORKFLOW",
      message: 'executor "tick" failed: unknown executor kind cron',
      executor: "tick",
    });
  });

  const prompts: [string, unknown, string][] = [
    ["a string", "approve?", 'returned "approve?"'],
    ["null", null, "returned null"],
    ["an array", ["approve?"], 'returned ["approve?"]'],
    ["no title", { detail: "d" }, "returned a title that is undefined"],
    ["a detail that is a number", { title: "t", detail: 3 }, "returned a detail that is 3"],
    ["options that are a string", { title: "t", options: "a,b" }, 'returned options that are "a,b"'],
    ["options holding a number", { title: "t", options: ["a", 2] }, 'returned options that are ["a",2]'],
  ];
  for (const [what, prompt, problem] of prompts) {
    it(`a request step whose prompt gives ${what} fails naming the step and what it returned`, async () => {
      const ask = request({ prompt: () => prompt as never, onAnswer: () => undefined });
      const err = await failure({ ask });
      assert.equal(err.code, "INVALID_WORKFLOW");
      assert.equal(
        err.message,
        `executor "ask" failed: request step "ask": prompt ${problem}, not { title: string, detail?: string, options?: string[] }`,
      );
    });
  }

  it("a request step's prompt with a title, detail and options opens the request with exactly those", async () => {
    const ask = request({
      prompt: () => ({ title: "Pay?", detail: "5 EUR", options: ["a", "b"], extra: 1 }) as never,
      onAnswer: () => undefined,
    });
    const r = await run({ state: {}, start: "ask", executors: { ask }, edges: [] }, { invoice: 1 });
    assert.equal(r.status, "waiting", "the run waits on the request");
    const { waiting, step } = await onDisk((s) => ({ waiting: s.latestCheckpoint(r.runId)!.waiting, step: s.listSteps(r.runId)[0]! }));
    assert.deepEqual(
      waiting,
      [
        {
          id: `${r.runId}:1:ask`,
          executor: "ask",
          runId: r.runId,
          superstep: 1,
          createdAt: waiting[0]!.createdAt,
          prompt: { title: "Pay?", detail: "5 EUR", options: ["a", "b"] },
          message: { invoice: 1 },
        },
      ],
      "the request holds the prompt's fields only, and the message that opened it",
    );
    assert.ok(waiting[0]!.createdAt > step.startedAt, "the request was opened during the step");
    assert.equal(step.status, "waiting", "the step is recorded waiting");
  });
});

describe("run task: a request answered", () => {
  it("hands onAnswer the answer as its schema parsed it and the message that opened the request, from the person", async () => {
    const seen: unknown[] = [];
    const ask = request({
      prompt: () => ({ title: "How much?" }),
      answer: z.object({ amount: z.coerce.number() }),
      onAnswer: (answer, ctx) => void seen.push({ answer, message: ctx.message, from: ctx.from }),
    });
    const wf = { state: {}, start: "ask", executors: { ask }, edges: [] };
    const waited = await run(wf, { invoice: 7 });
    await onDisk((store) =>
      new Engine(defineWorkflow({ name: "steps", version: 1, ...wf }), store).respond(`${waited.runId}:1:ask`, { amount: "12" }),
    );
    assert.deepEqual(seen, [{ answer: { amount: 12 }, message: { invoice: 7 }, from: "person" }], "the parsed answer, the opening message");
  });
});
