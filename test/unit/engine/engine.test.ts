import assert from "node:assert/strict";
import { z } from "zod";
import { MemoryStore } from "../../../src/casefile/memoryStore";
import { RunControl } from "../../../src/engine/control";
import { Engine } from "../../../src/engine/engine";
import { isCasefileError } from "../../../src/engine/errors";
import { checkpoint } from "../casefile/builders";
import { code, edge, fact, loader, request } from "../../../src/engine/executors";
import type { EventRecord, Json } from "../../../src/engine/records";
import { defineWorkflow, type WorkflowSpec } from "../../../src/engine/workflow";

/** A counter loop: `tick` increments n until it reaches the input's limit. */
function counterSpec(overrides: Partial<WorkflowSpec> = {}): WorkflowSpec {
  return {
    name: "counter",
    version: 1,
    state: { n: z.number().int(), log: z.array(z.string()) },
    input: z.object({ limit: z.number() }),
    executors: {
      tick: code({
        owns: ["n"],
        run: (ctx) => {
          const n = (ctx.state.n ?? 0) + 1;
          ctx.write("n", n);
          const limit = (ctx.message as { limit?: number }).limit ?? ctx.local;
          ctx.setLocal(limit as Json);
          return n < (limit as number) ? { limit: limit as number } : undefined;
        },
      }),
    },
    edges: [edge("tick", "tick")],
    start: "tick",
    ...overrides,
  };
}

describe("engine: supersteps and checkpoints", () => {
  it("checkpoints every superstep, writing only keys that changed", async () => {
    const store = new MemoryStore();
    const engine = new Engine(defineWorkflow(counterSpec()), store);
    const result = await engine.run({ limit: 3 });
    assert.equal(result.status, "completed");
    const cps = store.listCheckpoints(result.runId);
    assert.deepEqual(
      cps.map((c) => c.superstep),
      [0, 1, 2, 3],
    );
    const last = store.getCheckpoint(cps[3]!.id)!;
    assert.ok(!("log" in last.keys), "a key never written has no version");
    assert.deepEqual(last.keys, { n: { version: 3, run: result.runId } });
    assert.deepEqual(store.readValues(last.keys), { n: 3 });
  });

  it("runs executors of a superstep against state as of its start, and stages their writes", async () => {
    const seen: Record<string, unknown> = {};
    const wf = defineWorkflow({
      name: "fan",
      version: 1,
      state: { a: z.number(), b: z.number(), sum: z.number() },
      executors: {
        start: code({ owns: ["a"], run: (ctx) => (ctx.write("a", 1), "go") }),
        left: code({ reads: ["a", "b"], owns: ["b"], run: (ctx) => ((seen.leftSawB = ctx.state.b), ctx.write("b", 10), "l") }),
        right: code({
          reads: ["a", "b"],
          run: async (ctx) => {
            await new Promise((r) => setTimeout(r, 5));
            seen.rightSawB = ctx.state.b;
            return "r";
          },
        }),
        join: code({
          reads: ["a", "b"],
          owns: ["sum"],
          run: (ctx) => {
            seen.joinMessage = ctx.message;
            ctx.write("sum", ctx.state.a + ctx.state.b);
          },
        }),
      },
      edges: [edge("start", ["left", "right"]), edge(["left", "right"], "join")],
      start: "start",
    });
    const store = new MemoryStore();
    const result = await new Engine(wf, store).run();
    assert.equal(result.status, "completed");
    assert.equal(seen.rightSawB, undefined, "right ran in the same superstep as left and must not see its write");
    assert.deepEqual(seen.joinMessage, { left: "l", right: "r" }, "fan-in delivers one message holding every source");
    const steps = store.listSteps(result.runId);
    assert.deepEqual(
      steps.map((s) => [s.superstep, s.executor]),
      [
        [1, "start"],
        [2, "left"],
        [2, "right"],
        [3, "join"],
      ],
    );
    assert.deepEqual(store.readValues(store.latestCheckpoint(result.runId)!.keys), { a: 1, b: 10, sum: 11 });
  });

  it("fails the superstep when one key is written twice in it, never last-write-wins", async () => {
    // ownership is exclusive, so a double write comes from one executor invoked twice in a
    // superstep: here two edges deliver two messages to "writer"
    const wf = defineWorkflow({
      name: "double",
      version: 1,
      state: { x: z.number() },
      executors: {
        start: code({ run: () => 1 }),
        writer: code({ owns: ["x"], run: (ctx) => ctx.write("x", ctx.message as number) }),
      },
      edges: [edge("start", "writer"), edge("start", "writer")],
      start: "start",
    });
    const store = new MemoryStore();
    const r = await new Engine(wf, store).run();
    assert.equal(r.status, "failed");
    assert.equal(r.error?.code, "DOUBLE_WRITE");
    assert.match(r.error!.message, /"x" was written twice in one superstep \(by "writer" and "writer"\)/);
    assert.equal(store.latestCheckpoint(r.runId)!.superstep, 1, "the failed superstep left no checkpoint");
    assert.deepEqual(store.readValues(store.latestCheckpoint(r.runId)!.keys), {}, "no write of the failed superstep applied");
    assert.equal(store.getRun(r.runId)!.status, "failed");
    assert.deepEqual(
      store
        .listSteps(r.runId)
        .filter((s) => s.superstep === 2)
        .map((s) => s.executor),
      ["writer", "writer"],
      "the failed superstep's steps are kept to explain it",
    );
  });

  it("refuses a write to a key the executor does not own, naming executor and key", async () => {
    const wf = defineWorkflow({
      name: "rogue",
      version: 1,
      state: { mine: z.number(), yours: z.number() },
      executors: {
        a: code({ owns: ["mine"], run: (ctx) => ctx.write("yours" as "mine", 1) }),
        b: code({ owns: ["yours"], run: () => undefined }),
      },
      edges: [edge("a", "b")],
      start: "a",
    });
    const r = await new Engine(wf, new MemoryStore()).run();
    assert.equal(r.error?.code, "WRITE_NOT_OWNED");
    assert.equal(r.error?.executor, "a");
    assert.match(r.error!.message, /executor "a" wrote state key "yours", which is owned by "b"/);
  });

  it("refuses a value its schema rejects, naming the key and path", async () => {
    const wf = defineWorkflow({
      name: "bad",
      version: 1,
      state: { inv: z.object({ total: z.number() }) },
      executors: { a: code({ owns: ["inv"], run: (ctx) => ctx.write("inv", { total: "12" }) }) },
      edges: [],
      start: "a",
    });
    const r = await new Engine(wf, new MemoryStore()).run();
    assert.equal(r.error?.code, "INVALID_STATE_VALUE");
    assert.match(r.error!.message, /at "inv.total"/);
  });

  it("records facts with provenance and refuses a fact from a non-loader at run time", async () => {
    const wf = defineWorkflow({
      name: "facts",
      version: 1,
      state: { doc: fact(z.object({ id: z.string() })) },
      executors: {
        load: loader({ owns: ["doc"], run: (ctx) => ctx.fact("doc", { id: "D1" }, { source: "erp", sourceVersion: "v7" }) }),
      },
      edges: [],
      start: "load",
    });
    const store = new MemoryStore();
    const r = await new Engine(wf, store, { now: () => new Date("2026-01-02T03:04:05Z") }).run();
    const state = store.readValues(store.latestCheckpoint(r.runId)!.keys);
    assert.deepEqual(state.doc, {
      value: { id: "D1" },
      provenance: { source: "erp", sourceVersion: "v7", readAt: "2026-01-02T03:04:05.000Z" },
    });
    assert.deepEqual(
      store.listFacts(r.runId).map((f) => [f.key, f.source, f.sourceVersion, f.executor]),
      [["doc", "erp", "v7", "load"]],
    );
  });

  it("validates the input against the workflow's input schema", async () => {
    const engine = new Engine(defineWorkflow(counterSpec()), new MemoryStore());
    // Code and message both: an alternation `CODE|message` would pass on either half.
    await assert.rejects(engine.run({ limit: "x" }), (e: Error & { code?: string }) => {
      assert.equal(e.code, "INVALID_INPUT", e.message);
      assert.match(e.message, /^input of workflow "counter" is invalid at "limit": /);
      return true;
    });
  });

  it("yields outputs, kept with the run", async () => {
    const wf = defineWorkflow({
      name: "out",
      version: 1,
      state: {},
      executors: { a: code({ run: (ctx) => ctx.yield({ done: true }) }) },
      edges: [],
      start: "a",
    });
    const store = new MemoryStore();
    const r = await new Engine(wf, store).run();
    assert.deepEqual(r.outputs, [{ done: true }]);
    assert.deepEqual(store.getRun(r.runId)!.outputs, [{ done: true }]);
  });
});

describe("engine: resume and fork", () => {
  it("resuming from an older checkpoint creates a branch and leaves the parent untouched", async () => {
    const store = new MemoryStore();
    const wf = defineWorkflow(counterSpec());
    const parent = await new Engine(wf, store).run({ limit: 4 });
    const before = JSON.stringify([store.getRun(parent.runId), store.listCheckpoints(parent.runId)]);
    const branch = await new Engine(wf, store).resume(`${parent.runId}:2`);
    assert.notEqual(branch.runId, parent.runId);
    const run = store.getRun(branch.runId)!;
    assert.equal(run.parentRunId, parent.runId);
    assert.equal(run.parentCheckpointId, `${parent.runId}:2`);
    assert.equal(branch.status, "completed");
    assert.deepEqual(store.readValues(store.latestCheckpoint(branch.runId)!.keys), { n: 4 });
    assert.equal(JSON.stringify([store.getRun(parent.runId), store.listCheckpoints(parent.runId)]), before);
    assert.deepEqual(branch.warnings, [], "the same workflow: no graph-change warning");
    // the branch reuses the parent's stored values for keys it did not change
    assert.deepEqual(store.getCheckpoint(`${branch.runId}:2`)!.keys.n, { version: 2, run: parent.runId });
  });

  it("refuses a checkpoint the case file does not have, or one another workflow made, naming it", async () => {
    // Kills resumePlan's refusals (they had no test in this layer).
    const store = new MemoryStore();
    const wf = defineWorkflow(counterSpec());
    const parent = await new Engine(wf, store).run({ limit: 2 });
    await assert.rejects(
      new Engine(wf, store).resume("run-nope:1"),
      (e: unknown) => isCasefileError(e) && e.code === "UNKNOWN_CHECKPOINT" && e.message === 'no checkpoint "run-nope:1" in this case file',
    );
    const other = defineWorkflow(counterSpec({ name: "other-counter" }));
    await assert.rejects(
      new Engine(other, store).resume(`${parent.runId}:1`),
      (e: unknown) =>
        isCasefileError(e) &&
        e.code === "WORKFLOW_MISMATCH" &&
        e.message === `checkpoint "${parent.runId}:1" was made by workflow "counter", not "other-counter"`,
    );
    assert.equal(store.listRuns().length, 1, "nothing was started");
    // A checkpoint whose run the case file lacks (a damaged or hand-edited file).
    store.commit({
      checkpoints: [checkpoint("run-gone:1", "run-gone", 1, { workflow: store.getCheckpoint(`${parent.runId}:1`)!.workflow })],
    });
    await assert.rejects(new Engine(wf, store).resume("run-gone:1"), (e: unknown) => {
      assert.ok(isCasefileError(e), `a CasefileError: ${String(e)}`);
      assert.equal(e.code, "CORRUPT_CASE_FILE", e.message);
      assert.equal(e.message, 'this case file: checkpoint "run-gone:1" refers to run run-gone, which is not stored');
      // The run it names, for a caller reading the error as JSON (toJSON) rather than its sentence.
      assert.deepEqual(e.toJSON().details, { run: "run-gone" }, "the details name the missing run");
      return true;
    });
  });

  it("edit-then-fork validates the patch against the schemas, naming key and path", async () => {
    const store = new MemoryStore();
    const wf = defineWorkflow(counterSpec());
    const parent = await new Engine(wf, store).run({ limit: 3 });
    const engine = new Engine(wf, store);
    await assert.rejects(engine.resume(`${parent.runId}:1`, { patch: { n: "ten" } }), (e: Error & { code?: string }) => {
      assert.equal(e.code, "INVALID_PATCH");
      assert.match(e.message, /patch value for "n" is invalid at "n"/);
      return true;
    });
    await assert.rejects(engine.resume(`${parent.runId}:1`, { patch: { nope: 1 } }), /patch names unknown state key "nope"/);
    const fork = await engine.resume(`${parent.runId}:1`, { patch: { n: 10 } });
    const run = store.getRun(fork.runId)!;
    assert.deepEqual(run.patch, ["n"]);
    assert.deepEqual(store.getCheckpoint(`${fork.runId}:1`)!.keys.n, { version: 2, run: fork.runId });
    assert.deepEqual(store.readValues(store.latestCheckpoint(fork.runId)!.keys), { n: 11 }, "the fork continued from the edited state");
    assert.deepEqual(store.readValues(store.latestCheckpoint(parent.runId)!.keys), { n: 3 });
  });

  it("continues the same run from its latest checkpoint after a stop", async () => {
    const store = new MemoryStore();
    const control = new RunControl();
    const wf = defineWorkflow(counterSpec());
    let seen = 0;
    const first = await new Engine(wf, store, {
      control,
      onEvent: (e) => {
        if (e.type === "checkpoint" && ++seen === 2) control.stop();
      },
    }).run({ limit: 5 });
    assert.equal(first.status, "stopped");
    assert.equal(first.superstep, 2);
    const again = await new Engine(wf, store).resume(first.checkpointId);
    assert.equal(again.runId, first.runId, "the latest checkpoint of a stopped run continues that run");
    assert.equal(again.status, "completed");
    assert.deepEqual(store.readValues(store.latestCheckpoint(first.runId)!.keys), { n: 5 });
  });

  // Kills the mutant "a patch at the latest checkpoint of an unfinished run continues that run"
  // (resumePlan.ts sameRun without `changed.size === 0`): the edit would rewrite the parent's history.
  it("editing state at the latest checkpoint of a stopped run forks a branch; the stopped run keeps its state and history", async () => {
    const store = new MemoryStore();
    const control = new RunControl();
    const wf = defineWorkflow(counterSpec());
    let seen = 0;
    const first = await new Engine(wf, store, {
      control,
      onEvent: (e) => {
        if (e.type === "checkpoint" && ++seen === 2) control.stop();
      },
    }).run({ limit: 5 });
    assert.equal(first.status, "stopped");
    const before = JSON.stringify([
      store.getRun(first.runId),
      store.listCheckpoints(first.runId),
      store.listEvents({ runId: first.runId }),
    ]);
    const fork = await new Engine(wf, store).resume(first.checkpointId, { patch: { n: 3 } });
    assert.notEqual(fork.runId, first.runId, "the edit continued the stopped run itself");
    assert.equal(store.getRun(fork.runId)!.parentCheckpointId, first.checkpointId);
    assert.deepEqual(store.getRun(fork.runId)!.patch, ["n"]);
    assert.equal(fork.status, "completed");
    assert.deepEqual(store.readValues(store.latestCheckpoint(fork.runId)!.keys), { n: 5 }, "the fork went on from the edited n = 3");
    assert.equal(
      JSON.stringify([store.getRun(first.runId), store.listCheckpoints(first.runId), store.listEvents({ runId: first.runId })]),
      before,
      "the stopped run's record, checkpoints or events changed",
    );
    assert.deepEqual(store.readValues(store.latestCheckpoint(first.runId)!.keys), { n: 2 }, "the stopped run's state changed");
  });

  it("resuming a failed run retries the failed superstep in the same run, keeping the failed attempt's records", async () => {
    let attempts = 0;
    const wf = defineWorkflow({
      name: "flaky",
      version: 1,
      state: { x: z.number() },
      executors: {
        a: code({ run: () => "go" }),
        b: code({
          owns: ["x"],
          run: (ctx) => {
            if (++attempts < 3) throw new Error(`outage #${attempts}`);
            ctx.write("x", attempts);
          },
        }),
      },
      edges: [edge("a", "b")],
      start: "a",
    });
    const store = new MemoryStore();
    const first = await new Engine(wf, store).run();
    assert.equal(first.status, "failed");
    const second = await new Engine(wf, store).resume(first.checkpointId);
    assert.equal(second.runId, first.runId);
    assert.equal(second.status, "failed");
    const third = await new Engine(wf, store).resume(second.checkpointId);
    assert.equal(third.runId, first.runId, "still the same run");
    assert.equal(third.status, "completed");
    assert.deepEqual(
      store.listSteps(first.runId, 2).map((s) => [s.id.replace(first.runId, "R"), s.status]),
      [
        ["R:2:b~attempt-1", "failed"],
        ["R:2:b~attempt-2", "failed"],
        ["R:2:b", "ok"],
      ],
    );
    assert.deepEqual(store.readValues(store.latestCheckpoint(first.runId)!.keys), { x: 3 });
  });

  it("migrates a checkpoint made by an older version, or refuses naming what no longer parses", async () => {
    const store = new MemoryStore();
    const v1 = defineWorkflow(counterSpec());
    const parent = await new Engine(v1, store).run({ limit: 2 });
    const v2bad = defineWorkflow(counterSpec({ version: 2, state: { n: z.string(), log: z.array(z.string()) } }));
    await assert.rejects(new Engine(v2bad, store).resume(`${parent.runId}:1`), /no migration to version 2/);
    const v2noParse = defineWorkflow(
      counterSpec({ version: 2, state: { n: z.string(), log: z.array(z.string()) }, migrations: { 2: (s) => s } }),
    );
    await assert.rejects(new Engine(v2noParse, store).resume(`${parent.runId}:1`), (e: Error & { code?: string }) => {
      assert.equal(e.code, "MIGRATION_FAILED");
      assert.match(e.message, /"n" no longer parses/);
      return true;
    });
    const v2 = defineWorkflow(counterSpec({ version: 2, migrations: { 2: (s) => ({ ...s, n: (s.n as number) * 100 }) } }));
    const migrated = await new Engine(v2, store).resume(`${parent.runId}:1`);
    assert.notEqual(migrated.runId, parent.runId);
    assert.equal(store.getCheckpoint(`${migrated.runId}:1`)!.workflow.version, 2);
    assert.deepEqual(store.readValues(store.getCheckpoint(`${migrated.runId}:1`)!.keys), { n: 100 });
    const v0 = defineWorkflow(counterSpec({ version: 1, name: "counter" }));
    const newer = await new Engine(v2, store).run({ limit: 1 });
    await assert.rejects(
      new Engine(v0, store).resume(newer.checkpointId),
      /made by version 2 of "counter", newer than this workflow's version 1/,
    );
  });

  it("warns, naming executors added and removed, when the graph changed since the checkpoint", async () => {
    const store = new MemoryStore();
    const parent = await new Engine(defineWorkflow(counterSpec()), store).run({ limit: 2 });
    const changed = defineWorkflow(
      counterSpec({
        executors: { ...counterSpec().executors, audit: code({ run: () => undefined }) },
        edges: [edge("tick", "tick"), edge("tick", "audit")],
      }),
    );
    const r = await new Engine(changed, store).resume(`${parent.runId}:1`);
    assert.equal(r.warnings.length, 1);
    assert.match(r.warnings[0]!, /graph of "counter" changed since checkpoint .*; executors added: audit/);
    assert.ok(
      store.listEvents({ runId: r.runId }).some((e) => e.type === "warning"),
      `no warning event among ${JSON.stringify(store.listEvents({ runId: r.runId }).map((e) => e.type))}`,
    );
  });
});

describe("engine: requests, pause and step", () => {
  const approvalSpec = (): WorkflowSpec => ({
    name: "approval",
    version: 1,
    state: { decision: z.string() },
    executors: {
      ask: request({
        owns: ["decision"],
        prompt: () => ({ title: "Approve the payment?", options: ["approve", "reject"] }),
        onAnswer: (answer, ctx) => ctx.write("decision", `${answer.decision}: ${answer.comment ?? ""}`),
      }),
    },
    edges: [],
    start: "ask",
  });

  it("waits durably for a person, validates the answer, and continues the run", async () => {
    const store = new MemoryStore();
    const wf = defineWorkflow(approvalSpec());
    const r = await new Engine(wf, store).run();
    assert.equal(r.status, "waiting");
    const waiting = store.latestCheckpoint(r.runId)!.waiting;
    assert.equal(waiting.length, 1);
    assert.equal(waiting[0]!.prompt.title, "Approve the payment?");
    // a new engine, as after a restart days later
    const later = new Engine(wf, store);
    await assert.rejects(later.respond(waiting[0]!.id, { decision: "maybe" }), /answer to request .* is invalid at "decision"/);
    await assert.rejects(
      later.respond("nope", { decision: "approve" }),
      (e: unknown) => isCasefileError(e) && e.message === `no run is waiting on request "nope"; waiting: ${waiting[0]!.id}`,
    );
    const done = await later.respond(waiting[0]!.id, { decision: "approve", comment: "ok by me" });
    assert.equal(done.runId, r.runId);
    assert.equal(done.status, "completed");
    assert.deepEqual(store.readValues(store.latestCheckpoint(r.runId)!.keys), { decision: "approve: ok by me" });
    assert.equal(store.latestCheckpoint(r.runId)!.waiting.length, 0);
    // Nothing waits any more: the refusal says so rather than listing nothing.
    await assert.rejects(
      later.respond("nope", { decision: "approve" }),
      (e: unknown) =>
        isCasefileError(e) && e.code === "UNKNOWN_REQUEST" && e.message === 'no run is waiting on request "nope"; no run is waiting',
    );
  });

  it("in step mode pauses before each superstep and runs one per step", async () => {
    const store = new MemoryStore();
    const control = new RunControl(true);
    const events: EventRecord[] = [];
    // Driven by the run's own run_paused events, never by time: each wait ends when the run comes to rest.
    let onPause: (() => void) | undefined;
    const nextPause = () => new Promise<void>((resolve) => (onPause = resolve));
    let paused = nextPause();
    const running = new Engine(defineWorkflow(counterSpec()), store, {
      control,
      onEvent: (e) => {
        events.push(e);
        if (e.type === "run_paused") onPause?.();
      },
    }).run({ limit: 3 });
    const pauses = () => events.filter((e) => e.type === "run_paused").length;
    await paused;
    assert.equal(pauses(), 1, "one pause before the first superstep");
    const runId = events[0]!.runId;
    assert.equal(store.latestCheckpoint(runId)!.superstep, 0, "nothing ran before the first step");
    paused = nextPause();
    control.step();
    await paused;
    assert.equal(store.latestCheckpoint(runId)!.superstep, 1, "one step ran one superstep");
    assert.equal(pauses(), 2, "the run paused again after its one superstep");
    control.continue();
    const r = await running;
    assert.equal(r.status, "completed");
    assert.equal(r.superstep, 3);
  });

  it("stop on a paused run wakes it and ends it stopped, and aborts the signal executors may listen to", async function () {
    // Kills RunControl.stop's `this.abort.abort()` and `this.release()` removed; without the
    // release the run never wakes, so this test fails at its own short timeout.
    this.timeout(5_000);
    const store = new MemoryStore();
    const control = new RunControl(true);
    let onPause: (() => void) | undefined;
    const paused = new Promise<void>((resolve) => (onPause = resolve));
    const running = new Engine(defineWorkflow(counterSpec()), store, {
      control,
      onEvent: (e) => {
        if (e.type === "run_paused") onPause?.();
      },
    }).run({ limit: 3 });
    await paused;
    assert.equal(control.signal.aborted, false, "not aborted before stop");
    control.stop();
    assert.equal(control.signal.aborted, true, "stop aborts the signal");
    const r = await running;
    assert.equal(r.status, "stopped");
    assert.equal(r.superstep, 0, "no superstep ran");
  });

  it("pause on a running run rests it before its next superstep until continued; pause during a step leaves the step to run", async () => {
    // Kills the mutants of RunControl.pause (no pause; pause in any mode).
    const store = new MemoryStore();
    const control = new RunControl();
    const events: EventRecord[] = [];
    let onPause: (() => void) | undefined;
    const nextPause = () => new Promise<void>((resolve) => (onPause = resolve));
    let paused = nextPause();
    const running = new Engine(defineWorkflow(counterSpec()), store, {
      control,
      onEvent: (e) => {
        events.push(e);
        // Asked while superstep 1 is made durable: the run rests before superstep 2.
        if (e.type === "checkpoint" && e.superstep === 1) control.pause();
        if (e.type === "run_paused") onPause?.();
      },
    }).run({ limit: 4 });
    // Fails at once, not at mocha's timeout, if the run ends instead of resting.
    const ended = running.then((r) => assert.fail(`the run ended (${r.status} at superstep ${r.superstep}) without pausing`));
    await Promise.race([paused, ended]);
    const runId = events[0]!.runId;
    assert.equal(store.latestCheckpoint(runId)!.superstep, 1, "paused after superstep 1, before superstep 2");
    // A step asked and a pause right behind it: the step still runs its one superstep.
    paused = nextPause();
    control.step();
    control.pause();
    await paused;
    assert.equal(store.latestCheckpoint(runId)!.superstep, 2, "the step ran superstep 2 and rested again");
    control.continue();
    const r = await running;
    assert.equal(r.status, "completed");
    assert.equal(r.superstep, 4);
  });
});
