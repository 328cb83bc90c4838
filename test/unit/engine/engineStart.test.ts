import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { z } from "zod";
import { type SqlJsStore } from "../../../src/casefile/index";
import { RunControl } from "../../../src/engine/control";
import { Engine } from "../../../src/engine/engine";
import { isCasefileError } from "../../../src/engine/errors";
import { code, edge, request } from "../../../src/engine/executors";
import { defineWorkflow } from "../../../src/engine/workflow";
import { withCaseFile } from "./helpers/caseFileOnDisk";

/**
 * How a new run starts on the record (mutation testing of engine.ts's run(), issue 18), on a case
 * file on disk reopened: its run_started event, the input delivered to the start executor as
 * from "input", and an input its schema turns into something that is not JSON, refused in words.
 */

let dir: string;
let file: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), "casefile-enginestart-"));
  file = path.join(dir, "case.casefile");
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const onDisk = <T>(go: (store: SqlJsStore) => Promise<T> | T): Promise<T> => withCaseFile(file, go);

describe("engine start: a new run on the record", () => {
  it('records run_started with the workflow, version and input, and hands the input to start from "input"', async () => {
    const seen: unknown[] = [];
    const wf = defineWorkflow({
      name: "start",
      version: 3,
      state: {},
      input: z.object({ id: z.string() }),
      start: "first",
      executors: { first: code({ run: (ctx) => void seen.push([ctx.from, ctx.message]) }) },
      edges: [],
    });
    const r = await onDisk((s) => new Engine(wf, s).run({ id: "INV-1" }));
    const { started, cp0 } = await onDisk((s) => ({
      started: s.listEvents({ runId: r.runId }).filter((e) => e.type === "run_started"),
      cp0: s.getCheckpoint(`${r.runId}:0`)!,
    }));
    assert.deepEqual(
      started.map((e) => [e.superstep, e.data]),
      [[0, { workflow: "start", version: 3, input: { id: "INV-1" } }]],
      "one run_started at superstep 0",
    );
    assert.deepEqual(
      cp0.pending,
      [{ to: "first", from: "input", payload: { id: "INV-1" }, kind: "input" }],
      "checkpoint 0 holds the input",
    );
    assert.deepEqual(seen, [["input", { id: "INV-1" }]], 'the start executor gets the input, from "input"');
  });

  it("an input its schema turns into something that is not JSON is refused as the input's doing", async () => {
    const wf = defineWorkflow({
      name: "dated",
      version: 1,
      state: {},
      input: z.string().transform((s) => new Date(s)),
      start: "first",
      executors: { first: code({ run: () => undefined }) },
      edges: [],
    });
    await assert.rejects(
      onDisk((s) => new Engine(wf, s).run("2026-01-01")),
      (e: unknown) => {
        assert.ok(isCasefileError(e), `a typed error, not ${String(e)}`);
        assert.equal(e.message, 'executor "input" wrote a Date object at "input": state holds JSON data only');
        return true;
      },
    );
    assert.deepEqual(await onDisk((s) => s.listRuns()), [], "no run was started");
  });

  it("an answer its schema turns into something that is not JSON is refused as the person's, and the run still waits (it was left running, unanswerable)", async () => {
    const wf = defineWorkflow({
      name: "when",
      version: 1,
      state: {},
      start: "ask",
      executors: {
        ask: request({ prompt: () => ({ title: "When?" }), answer: z.string().transform((s) => new Date(s)), onAnswer: () => undefined }),
      },
      edges: [],
    });
    const r = await onDisk((s) => new Engine(wf, s).run());
    await assert.rejects(
      onDisk((s) => new Engine(wf, s).respond(`${r.runId}:1:ask`, "2026-01-01")),
      (e: unknown) => {
        assert.ok(isCasefileError(e), `a typed error, not ${String(e)}`);
        assert.equal(e.message, 'executor "person" wrote a Date object at "answer": state holds JSON data only');
        return true;
      },
    );
    assert.equal(await onDisk((s) => s.getRun(r.runId)!.status), "waiting", "the run still waits for an answer");
  });
});

describe("engine start: answering one of several requests", () => {
  const asks = (control?: RunControl) =>
    defineWorkflow({
      name: "two",
      version: 1,
      state: {},
      start: "start",
      executors: {
        start: code({ run: () => "go" }),
        ask: request({ prompt: () => ({ title: "Pay?" }), onAnswer: () => undefined }),
        audit: request({ prompt: () => ({ title: "Audit?" }), onAnswer: () => undefined }),
        work: code({ run: () => (control?.stopAfterSuperstep(), "more") }),
        more: code({ run: () => undefined }),
      },
      edges: [edge("start", ["ask", "audit", "work"]), edge("work", "more")],
    });

  it("the request answered leaves the waiting list; the other one stays", async () => {
    const r = await onDisk((s) => new Engine(asks(), s).run());
    assert.equal(r.status, "waiting", "two requests wait");
    await onDisk((s) => new Engine(asks(), s).respond(`${r.runId}:2:ask`, { decision: "approve" }, { recordOnly: true }));
    const waiting = await onDisk((s) => s.latestCheckpoint(r.runId)!.waiting.map((w) => w.id));
    assert.deepEqual(waiting, [`${r.runId}:2:audit`], "audit still waits");
  });

  // kills engine.ts:207 ConditionalExpression true in waiting.some((w) => w.id === requestId): every
  // waiting run of the case file was superseded by an answer to any one of them
  it("answering one run's request leaves another run, waiting on its own requests, waiting", async () => {
    const first = await onDisk((s) => new Engine(asks(), s).run());
    const second = await onDisk((s) => new Engine(asks(), s).run());
    await onDisk((s) => new Engine(asks(), s).respond(`${first.runId}:2:ask`, { decision: "approve" }));
    const other = await onDisk((s) => ({ run: s.getRun(second.runId)!, cp: s.latestCheckpoint(second.runId)! }));
    assert.deepEqual(
      [other.run.status, other.run.supersededBy, other.cp.waiting.map((w) => w.id)],
      ["waiting", undefined, [`${second.runId}:2:ask`, `${second.runId}:2:audit`]],
      "the other run still waits on both its requests",
    );
  });

  // A run record without outputs (the field is optional: a record written before outputs were
  // kept), answered for another process to continue. kills engine.ts:217 (recorded; now :219)
  // ArrayDeclaration in the record-only result's run.outputs ?? []
  it("a run record without outputs, answered record-only, reports no outputs", async () => {
    const r = await onDisk((s) => new Engine(asks(), s).run());
    await onDisk((s) => {
      const { outputs: _none, ...older } = s.getRun(r.runId)!;
      s.commit({ runs: [older] });
    });
    const answered = await onDisk((s) => new Engine(asks(), s).respond(`${r.runId}:2:ask`, { decision: "approve" }, { recordOnly: true }));
    assert.deepEqual([answered.status, answered.outputs], ["running", []], "recorded running, with no outputs yet");
  });

  // The same older run record, stopped, resumed and stopped again before its next superstep: the
  // run_stopped event says no outputs. kills engine.ts:396 ArrayDeclaration in finish's run.outputs ?? []
  it("a stopped run record without outputs, stopped again at once on resume, records no outputs", async () => {
    const control = new RunControl();
    const stopped = await onDisk((s) => new Engine(asks(control), s, { control }).run());
    assert.equal(stopped.status, "stopped");
    await onDisk((s) => {
      const { outputs: _none, ...older } = s.getRun(stopped.runId)!;
      s.commit({ runs: [older] });
    });
    const again = new RunControl();
    again.stopAfterSuperstep();
    const resumed = await onDisk((s) => new Engine(asks(), s, { control: again }).resume(stopped.checkpointId));
    assert.deepEqual([resumed.runId, resumed.status, resumed.outputs], [stopped.runId, "stopped", []], "the same run, stopped, no outputs");
    const last = await onDisk((s) =>
      s
        .listEvents({ runId: stopped.runId })
        .filter((e) => e.type === "run_stopped")
        .at(-1)!,
    );
    assert.deepEqual(
      last.data,
      { checkpoint: stopped.checkpointId, waiting: [`${stopped.runId}:2:ask`, `${stopped.runId}:2:audit`], outputs: [] },
      "run_stopped names the checkpoint, the requests still open and no outputs",
    );
  });

  // kills engine.ts:198 ArrayDeclaration (respond's batch without the run): the run record is written
  // with the answer, so its last change is the answer's time, not the moment prepare marked it running
  it("answered record-only, the run record was last changed when the answer was recorded", async () => {
    let tick = 0;
    const now = () => new Date(Date.UTC(2026, 0, 1) + 1000 * tick++);
    const r = await onDisk((s) => new Engine(asks(), s, { now }).run());
    const answered = await onDisk((s) =>
      new Engine(asks(), s, { now }).respond(`${r.runId}:2:ask`, { decision: "approve" }, { recordOnly: true }),
    );
    const seen = await onDisk((s) => ({ run: s.getRun(r.runId)!, cp: s.getCheckpoint(answered.checkpointId)! }));
    assert.equal(seen.run.status, "running");
    assert.equal(seen.run.updatedAt, seen.cp.createdAt, "the run's updatedAt is the answer checkpoint's time");
  });

  it("answering a branch leaves a stopped run that holds the same request stopped, not superseded", async () => {
    const control = new RunControl();
    const stopped = await onDisk((s) => new Engine(asks(control), s, { control }).run());
    assert.equal(stopped.status, "stopped", "stopped with the requests open");
    const branch = await onDisk((s) => new Engine(asks(), s).resume(stopped.checkpointId, { branch: true }));
    assert.equal(branch.status, "waiting", "the branch waits on the requests it inherited");
    await onDisk((s) => new Engine(asks(), s).respond(`${stopped.runId}:2:ask`, { decision: "approve" }));
    const parent = await onDisk((s) => s.getRun(stopped.runId)!);
    assert.deepEqual([parent.status, parent.supersededBy], ["stopped", undefined], "only waiting runs are superseded");
  });

  it("answered through a newer version's branch, a run that waited on it and on another request is superseded", async () => {
    const r = await onDisk((s) => new Engine(asks(), s).run());
    const v2 = defineWorkflow({ ...asks(), version: 2, migrations: { 2: (st) => st } });
    const answered = await onDisk((s) => new Engine(v2, s).respond(`${r.runId}:2:ask`, { decision: "approve" }));
    assert.notEqual(answered.runId, r.runId, "the answer went to a v2 branch");
    const old = await onDisk((s) => s.getRun(r.runId)!);
    assert.deepEqual([old.status, old.supersededBy], ["superseded", answered.runId], "the v1 run no longer waits");
  });
});
