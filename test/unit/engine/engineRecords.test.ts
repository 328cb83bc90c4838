import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { z } from "zod";
import { type SqlJsStore } from "../../../src/casefile/index";
import { RunControl } from "../../../src/engine/control";
import { Engine, type EngineOptions } from "../../../src/engine/engine";
import { code, edge, request } from "../../../src/engine/executors";
import type { EventRecord, RunRecord } from "../../../src/engine/records";
import { defineWorkflow, type Workflow } from "../../../src/engine/workflow";
import { engineOn, refusal, withCaseFile } from "./helpers/caseFileOnDisk";

/**
 * What the superstep loop puts on the record and tells its listeners (mutation testing of
 * engine.ts, issue 18), on a case file on disk reopened for every step: the run is on record
 * from its first step, each run's end says where it ended, answers record who and which run,
 * and a bad input or answer is refused in words naming the workflow or request.
 */

let dir: string;
let file: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), "casefile-enginerecords-"));
  file = path.join(dir, "case.casefile");
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const onDisk = <T>(go: (store: SqlJsStore) => Promise<T> | T): Promise<T> => withCaseFile(file, go);
const engine = (wf: Workflow, options: EngineOptions = {}) => engineOn(file, wf, options);

const approval = (over: { answer?: z.ZodType } = {}) =>
  defineWorkflow({
    name: "approval",
    version: 1,
    state: {},
    input: z.object({ amount: z.number() }),
    start: "work",
    executors: {
      work: code({ run: () => "ask" }),
      ask: request({ prompt: () => ({ title: "Pay?" }), answer: over.answer, onAnswer: (a, ctx) => ctx.yield({ answered: a as never }) }),
    },
    edges: [edge("work", "ask")],
  });

describe("engine records: a run on the record", () => {
  it("a run is on record as running while its first step runs, before any checkpoint after the input", async () => {
    let seen: RunRecord | undefined;
    await onDisk(async (store) => {
      const wf = defineWorkflow({
        name: "one",
        version: 1,
        state: {},
        start: "only",
        executors: { only: code({ run: (ctx) => void (seen = store.getRun(ctx.runId)) }) },
        edges: [],
      });
      await new Engine(wf, store).run();
    });
    assert.equal(seen?.status, "running", "the editor sees the run as running while its first step runs");
  });

  it("a run's end event says the checkpoint, the requests waited on and the outputs, for each way a run ends", async () => {
    const ends = (events: EventRecord[]) =>
      events.filter((e) => ["run_completed", "run_waiting", "run_stopped"].includes(e.type)).map((e) => [e.type, e.data]);
    const waited = await engine(approval())((e) => e.run({ amount: 5 }));
    const waitedEvents = await onDisk((s) => s.listEvents({ runId: waited.runId }));
    assert.deepEqual(
      ends(waitedEvents),
      [["run_waiting", { checkpoint: waited.checkpointId, waiting: [`${waited.runId}:2:ask`], outputs: [] }]],
      "a waiting run says what it waits on",
    );
    const done = await engine(approval())((e) => e.respond(`${waited.runId}:2:ask`, { decision: "approve" }));
    assert.deepEqual(
      ends(await onDisk((s) => s.listEvents({ runId: done.runId }))).slice(-1),
      [["run_completed", { checkpoint: done.checkpointId, waiting: [], outputs: [{ answered: { decision: "approve" } }] }]],
      "a completed run says its outputs",
    );
    assert.deepEqual(done.outputs, [{ answered: { decision: "approve" } }], "the result holds them too");
    const control = new RunControl();
    control.stopAfterSuperstep();
    const stopped = await engine(approval(), { control })((e) => e.run({ amount: 1 }));
    assert.deepEqual(
      ends(await onDisk((s) => s.listEvents({ runId: stopped.runId }))),
      [["run_stopped", { checkpoint: stopped.checkpointId, waiting: [], outputs: [] }]],
      "a stopped run says where it stopped",
    );
  });

  it("says which executors each superstep runs, and, paused, where it rests and what runs next", async () => {
    const control = new RunControl(true);
    const events: EventRecord[] = [];
    const r = await engine(approval(), {
      control,
      onEvent: (e) => (events.push(e), e.type === "run_paused" && setImmediate(() => control.step())),
    })((e) => e.run({ amount: 1 }));
    assert.deepEqual(
      events.filter((e) => e.type === "run_paused" || e.type === "superstep_started").map((e) => [e.type, e.superstep, e.data]),
      [
        ["run_paused", 0, { checkpoint: `${r.runId}:0`, next: ["work"] }],
        ["superstep_started", 1, { executors: ["work"] }],
        ["run_paused", 1, { checkpoint: `${r.runId}:1`, next: ["ask"] }],
        ["superstep_started", 2, { executors: ["ask"] }],
      ],
    );
  });

  it("a listener that throws is logged and the run goes on", async () => {
    const logs: string[] = [];
    const r = await engine(approval(), {
      onEvent: () => {
        throw new Error("listener broke");
      },
      log: (m) => logs.push(m),
    })((e) => e.run({ amount: 1 }));
    assert.equal(r.status, "waiting", "the run reached its request");
    assert.ok(logs.includes("event listener threw: listener broke"), `the log says the listener threw: ${JSON.stringify(logs)}`);
  });

  it("a resume's warnings are logged as warnings", async () => {
    const waited = await engine(approval(), { control: stopAtOnce() })((e) => e.run({ amount: 1 }));
    const logs: string[] = [];
    const changed = defineWorkflow({ ...approval(), edges: [{ from: "work", to: "ask", label: "then" }] });
    await engine(changed, { log: (m) => logs.push(m) })((e) => e.resume(waited.checkpointId));
    assert.ok(
      logs.includes(`warning: graph of "approval" changed since checkpoint "${waited.checkpointId}"; edges or keys changed`),
      `the log carries the warning: ${JSON.stringify(logs)}`,
    );
  });
});

function stopAtOnce(): RunControl {
  const c = new RunControl();
  c.stopAfterSuperstep();
  return c;
}

describe("engine records: answers", () => {
  it("an answer recorded only leaves the run running at the answer's checkpoint, naming who answered and which run waited", async () => {
    const waited = await engine(approval())((e) => e.run({ amount: 5 }));
    const id = `${waited.runId}:2:ask`;
    const r = await engine(approval())((e) => e.respond(id, { decision: "approve" }, { recordOnly: true }));
    assert.deepEqual(
      r,
      { runId: waited.runId, status: "running", checkpointId: `${waited.runId}:3`, superstep: 3, warnings: [], outputs: [] },
      "the result says where another process takes the run up",
    );
    const { run, answered, cp } = await onDisk((s) => ({
      run: s.getRun(waited.runId)!,
      answered: s.listEvents({ runId: waited.runId }).filter((e) => e.type === "request_answered"),
      cp: s.latestCheckpoint(waited.runId)!,
    }));
    assert.equal(run.status, "running", "the case file says the run is running");
    assert.deepEqual(
      answered.map((e) => [e.superstep, e.data]),
      [[3, { requestId: id, executor: "ask", answer: { decision: "approve" }, by: null, run: waited.runId, waitingRun: waited.runId }]],
      "the answer is recorded once, with nobody named",
    );
    assert.deepEqual(
      [cp.waiting, cp.pending.map((m) => [m.to, m.from, m.kind])],
      [[], [["ask", "person", "answer"]]],
      "the answer waits to be delivered",
    );
  });

  it("an input the workflow's schema refuses names the workflow and where", async () => {
    const err = await refusal(
      engine(approval())((e) => e.run({ amount: "five" })),
      "a string amount",
    );
    assert.equal(err.code, "INVALID_INPUT");
    assert.match(err.message, /^input of workflow "approval" is invalid at "amount": /);
  });

  it("an answer its schema refuses names the request and where, and leaves the run waiting", async () => {
    const waited = await engine(approval({ answer: z.object({ amount: z.number() }) }))((e) => e.run({ amount: 5 }));
    const id = `${waited.runId}:2:ask`;
    const err = await refusal(
      engine(approval({ answer: z.object({ amount: z.number() }) }))((e) => e.respond(id, { amount: "x" })),
      "a bad answer",
    );
    assert.equal(err.code, "INVALID_ANSWER");
    assert.match(err.message, new RegExp(`^answer to request "${id}" is invalid at "amount": `));
    assert.equal(await onDisk((s) => s.getRun(waited.runId)!.status), "waiting", "the run still waits");
  });

  it("an answer to a request whose executor is no longer a request step is refused naming both", async () => {
    const waited = await engine(approval())((e) => e.run({ amount: 5 }));
    const id = `${waited.runId}:2:ask`;
    const noAsk = defineWorkflow({ ...approval(), executors: { work: code({ run: () => "ask" }), ask: code({ run: () => undefined }) } });
    const err = await refusal(
      engine(noAsk)((e) => e.respond(id, { decision: "approve" })),
      "answering a code step",
    );
    assert.equal(err.code, "WORKFLOW_MISMATCH");
    assert.equal(err.message, `request "${id}" belongs to executor "ask", which is no longer a request step`);
  });
});

describe("engine records: a damaged intent found on resume", () => {
  it("an open intent row that is not a record refuses the resume as CORRUPT_CASE_FILE, and the run is not marked failed", async () => {
    const stopped = await engine(approval(), { control: stopAtOnce() })((e) => e.run({ amount: 1 }));
    execFileSync("/usr/bin/sqlite3", [file, `INSERT INTO intents VALUES ('intent-x', '${stopped.runId}', 'open', 'not json')`]);
    const err = await refusal(
      engine(approval())((e) => e.resume(stopped.checkpointId)),
      "resuming over a damaged intent",
    );
    assert.equal(err.code, "CORRUPT_CASE_FILE", err.message);
    assert.match(err.message, /intents row /, "the message names the damaged table");
    const run = await onDisk((s) => s.getRun(stopped.runId)!);
    assert.notEqual(run.status, "failed", "nothing more was written as the run's outcome into the damaged file");
    assert.equal(run.error, undefined, "no error was recorded on the run");
  });
});

describe("engine records: an answer that goes to a branch", () => {
  it("records the answer on the run that waited too, at the superstep it waited at, naming the branch that took it", async () => {
    const waited = await engine(approval())((e) => e.run({ amount: 5 }));
    const id = `${waited.runId}:2:ask`;
    const v2 = defineWorkflow({ ...approval(), version: 2, migrations: { 2: (s) => s } });
    const answered = await engine(v2)((e) => e.respond(id, { decision: "approve" }, { by: "ana" }));
    assert.notEqual(answered.runId, waited.runId, "the v2 workflow answers in a branch");
    const { old, events } = await onDisk((s) => ({
      old: s.getRun(waited.runId)!,
      events: s.listEvents({ runId: waited.runId }).filter((e) => e.type === "request_answered"),
    }));
    assert.deepEqual([old.status, old.supersededBy], ["superseded", answered.runId], "the run that waited is superseded by the branch");
    assert.deepEqual(
      events.map((e) => [e.superstep, e.data]),
      [[2, { requestId: id, executor: "ask", answer: { decision: "approve" }, by: "ana", run: answered.runId, waitingRun: waited.runId }]],
      "the run that waited says who answered, and in which run",
    );
  });
});
