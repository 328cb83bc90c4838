import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { z } from "zod";
import { type SqlJsStore } from "../../../src/casefile/index";
import { RunControl } from "../../../src/engine/control";
import { type EngineOptions, type RunResult } from "../../../src/engine/engine";
import { code, edge, request, type ExecutorSpec } from "../../../src/engine/executors";
import { planResume } from "../../../src/engine/resumePlan";
import { defineWorkflow, type Workflow, type WorkflowSpec } from "../../../src/engine/workflow";
import { engineOn, refusal, withCaseFile } from "./helpers/caseFileOnDisk";

/**
 * What a resume or an answer refuses, and how it says so, on a case file on disk reopened for
 * every step (mutation testing of resumePlan.ts, issue 18): a bad patch, a stored value or a
 * migrated state that no longer parses, a request that was answered, is not waited on, or whose
 * step a version removed. Each refusal names the key, request or executor and says what to do.
 */

let dir: string;
let file: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), "casefile-resumerefusals-"));
  file = path.join(dir, "case.casefile");
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const onDisk = <T>(go: (store: SqlJsStore) => Promise<T> | T): Promise<T> => withCaseFile(file, go);
const engine = (wf: Workflow, options: EngineOptions = {}) => engineOn(file, wf, options);

/** Resolves to the CasefileError the call refused with (failing the test when it did not refuse). */

/** Set while a run should stop after its next superstep (stopped() below). */
let stopper: RunControl | undefined;
const tick = code({
  owns: ["n"],
  run: (ctx) => {
    stopper?.stopAfterSuperstep();
    ctx.write("n", ((ctx.state.n as number | undefined) ?? 0) + 1);
    return ctx.state.n === undefined ? "again" : undefined;
  },
});
const counter = (over: Partial<WorkflowSpec> = {}) =>
  defineWorkflow({
    name: "counter",
    version: 1,
    state: { n: z.number().int(), note: z.string() },
    start: "tick",
    executors: { tick },
    edges: [edge("tick", "tick")],
    ...over,
  });

/** A run of `counter` stopped after its first superstep (n = 1). */
async function stopped(): Promise<RunResult> {
  stopper = new RunControl();
  try {
    const r = await engine(counter(), { control: stopper })((e) => e.run());
    assert.equal(r.status, "stopped", "the control stopped the run after its first superstep");
    return r;
  } finally {
    stopper = undefined;
  }
}

describe("resume refusals: patches and stored state", () => {
  it("a patch naming an unknown key is refused listing the keys there are", async () => {
    const r = await stopped();
    const err = await refusal(
      engine(counter())((e) => e.resume(r.checkpointId, { patch: { nte: "x" } })),
      "patching an unknown key",
    );
    assert.equal(err.code, "UNKNOWN_KEY");
    assert.equal(err.message, 'patch names unknown state key "nte"; keys are: n, note', "the message lists the keys to choose from");
    assert.deepEqual(err.details, { key: "nte" }, "the error names the key for the editor");
  });

  it("a patch value the key's schema refuses is refused naming the key and path", async () => {
    const r = await stopped();
    const err = await refusal(
      engine(counter())((e) => e.resume(r.checkpointId, { patch: { n: 1.5 } })),
      "patching n with 1.5",
    );
    assert.equal(err.code, "INVALID_PATCH");
    assert.match(err.message, /^patch value for "n" is invalid at "n": /, "the message names the key");
    assert.deepEqual(err.details, { key: "n", path: [] }, "the error names the key and the path in it");
  });

  it("a patch whose schema turns it into something that is not JSON is refused as the patch's doing", async () => {
    const r = await stopped();
    const dated = counter({ state: { n: z.number().int(), note: z.string().transform((s) => new Date(s)) } });
    const err = await refusal(
      engine(dated)((e) => e.resume(r.checkpointId, { patch: { note: "2026-01-01" } })),
      "a Date patch",
    );
    assert.equal(err.code, "INVALID_STATE_VALUE");
    assert.equal(err.message, 'executor "patch" wrote a Date object at "note": state holds JSON data only');
  });

  it("a stored value the same version's schema refuses names the key, path and checkpoint in its details", async () => {
    const r = await stopped();
    const err = await refusal(
      engine(counter({ state: { n: z.string(), note: z.string() } }))((e) => e.resume(r.checkpointId)),
      "n is now a string",
    );
    assert.equal(err.code, "INVALID_STATE_VALUE");
    assert.deepEqual(err.details, { key: "n", path: [], checkpoint: r.checkpointId }, "the details point at the stored value");
  });

  it("a key the same version no longer declares does not refuse the resume; the graph change is warned about", async () => {
    const r = await stopped();
    const patched = await engine(counter())((e) => e.resume(r.checkpointId, { patch: { note: "kept" }, branch: true }));
    const first = await onDisk((s) => s.listCheckpoints(patched.runId).find((c) => c.superstep === 1)!.id);
    const resumed = await engine(counter({ state: { n: z.number().int() } }))((e) => e.resume(first));
    assert.equal(resumed.status, "completed", "the run goes on without the key it no longer has");
    assert.match(resumed.warnings.join("\n"), /edges or keys changed/, "the dropped key shows as a graph change");
  });

  it("a newer version without a migration names a key it no longer declares as what no longer parses", async () => {
    const r = await stopped();
    const patched = await engine(counter())((e) => e.resume(r.checkpointId, { patch: { note: "kept" }, branch: true }));
    const first = await onDisk((s) => s.listCheckpoints(patched.runId).find((c) => c.superstep === 1)!.id);
    const err = await refusal(
      engine(counter({ version: 2, state: { n: z.number().int() } }))((e) => e.resume(first)),
      "v2 without note",
    );
    assert.equal(err.code, "MIGRATION_FAILED");
    assert.match(
      err.message,
      /no migration to version 2 is declared; as it is, its state no longer parses at: "note" \(is not a state key of version 2\)$/,
      "the message says which key the missing migration must deal with",
    );
  });
});

describe("resume refusals: requests", () => {
  const ask = (title: string): ExecutorSpec => request({ prompt: () => ({ title }), onAnswer: () => undefined });
  const approvals = (over: Partial<WorkflowSpec> = {}) =>
    defineWorkflow({
      name: "approvals",
      version: 1,
      state: {},
      start: "start",
      executors: { start: code({ run: () => "go" }), ask: ask("Approve?"), audit: ask("Audit?") },
      edges: [edge("start", ["ask", "audit"])],
      ...over,
    });
  const waitingIds = (runId: string) => onDisk((s) => s.latestCheckpoint(runId)!.waiting.map((w) => w.id));

  it("an answer to a request nobody waits on lists every request that is waited on", async () => {
    const r = await engine(approvals())((e) => e.run());
    const ids = await waitingIds(r.runId);
    assert.equal(ids.length, 2, "two requests wait");
    const err = await refusal(
      engine(approvals())((e) => e.respond("nope", { decision: "approve" })),
      "answering nope",
    );
    assert.equal(err.code, "UNKNOWN_REQUEST");
    assert.equal(err.message, `no run is waiting on request "nope"; waiting: ${ids.join(", ")}`);
  });

  it("a request of a run that was stopped, not waiting, cannot be answered until the run is resumed", async () => {
    const control = new RunControl();
    const wf = approvals({
      executors: {
        start: code({ run: () => "go" }),
        ask: ask("Approve?"),
        work: code({ run: () => (control.stopAfterSuperstep(), "more") }),
        more: code({ run: () => undefined }),
      },
      edges: [edge("start", ["ask", "work"]), edge("work", "more")],
    });
    const r = await engine(wf, { control })((e) => e.run());
    assert.equal(r.status, "stopped", "the run stopped with a request open");
    const [id] = await waitingIds(r.runId);
    const err = await refusal(
      engine(wf)((e) => e.respond(id!, { decision: "approve" })),
      "answering a stopped run",
    );
    assert.equal(err.code, "UNKNOWN_REQUEST");
    assert.equal(err.message, `no run is waiting on request "${id}"; no run is waiting`);
  });

  it("a second answer after one given without a name says when and in which run, naming nobody", async () => {
    const wf = approvals({ executors: { start: code({ run: () => "go" }), ask: ask("Approve?") }, edges: [edge("start", "ask")] });
    const r = await engine(wf)((e) => e.run());
    const [id] = await waitingIds(r.runId);
    await engine(wf)((e) => e.respond(id!, { decision: "approve" }));
    const err = await refusal(
      engine(wf)((e) => e.respond(id!, { decision: "reject" })),
      "a second answer",
    );
    assert.equal(err.code, "REQUEST_ANSWERED");
    assert.match(
      err.message,
      new RegExp(`^request "${id}" was already answered \\{"decision":"approve"\\} at \\S+, in run ${r.runId}; a request`),
    );
  });

  it("an answer recorded before answers named their run (Casefile before dd6ebbb) is named by the run it was recorded in", async () => {
    const wf = approvals({ executors: { start: code({ run: () => "go" }), ask: ask("Approve?") }, edges: [edge("start", "ask")] });
    const r = await engine(wf)((e) => e.run());
    const [id] = await waitingIds(r.runId);
    // What Engine.respond wrote then: the request, executor and answer, no `run`, no `by`.
    await onDisk((s) =>
      s.commit({
        events: [
          {
            runId: r.runId,
            superstep: 3,
            type: "request_answered",
            at: "2026-01-01T00:00:00.000Z",
            data: { requestId: id!, executor: "ask", answer: { decision: "approve" } },
          },
        ],
      }),
    );
    const err = await refusal(
      engine(wf)((e) => e.respond(id!, { decision: "reject" })),
      "answering an old case file's answered request",
    );
    assert.equal(err.code, "REQUEST_ANSWERED");
    assert.match(
      err.message,
      new RegExp(`at 2026-01-01T00:00:00.000Z, in run ${r.runId}; `),
      "the message names the run the answer is recorded in",
    );
    assert.deepEqual(err.details, { requestId: id, run: r.runId }, "the details name the request and the run");
  });
});

describe("resume refusals: a waiting request or a message whose executor a version removed", () => {
  const ask = request({ prompt: () => ({ title: "Approve?" }), onAnswer: () => undefined });
  const decide = code({ run: () => undefined });
  const approval = (version: number, executors: Record<string, ExecutorSpec>, migrations?: WorkflowSpec["migrations"]) =>
    defineWorkflow({ name: "approval", version, state: {}, start: Object.keys(executors)[0]!, executors, edges: [], migrations });
  const refused = async (wf: Workflow, cp: string) => {
    const err = await refusal(
      engine(wf)((e) => e.resume(cp)),
      `resuming with version ${wf.version}`,
    );
    assert.equal(err.code, "UNDELIVERABLE_MESSAGE");
    return err;
  };

  it("the same version without the request step says to declare the next version with a migration that drops it", async () => {
    const r = await engine(approval(1, { ask }))((e) => e.run());
    const err = await refused(approval(1, { decide }), r.checkpointId);
    assert.match(
      err.message,
      /; drop it in a migration: migrations: \{ 2: \{ state: \(s\) => s, messages: \{ "ask": null \} \} \} \(with version: 2\)$/,
      "the fix names version 2, and that the workflow must say version: 2",
    );
    assert.deepEqual(
      err.details,
      { executor: "ask", checkpoint: r.checkpointId, requestId: `${r.runId}:1:ask` },
      "the details name it all",
    );
  });

  it("a newer version without the request step names its own version in the migration to write", async () => {
    const r = await engine(approval(1, { ask }))((e) => e.run());
    const err = await refused(approval(2, { decide }, { 2: (s) => s }), r.checkpointId);
    assert.match(
      err.message,
      /migrations: \{ 2: \{ state: \(s\) => s, messages: \{ "ask": null \} \} \}$/,
      "version 2, which the workflow already is",
    );
  });

  it("a drop in the migration to a version the checkpoint already has does not apply to it", async () => {
    const dropsAsk = { 2: { messages: { ask: null } } };
    const r = await engine(approval(2, { ask }, dropsAsk))((e) => e.run());
    assert.equal(r.status, "waiting", "the version 2 run waits on ask");
    await refused(approval(3, { decide }, { ...dropsAsk, 3: (s) => s }), r.checkpointId);
  });

  it("a migration object that routes no messages, or only another executor's, does not drop a waiting request", async () => {
    const r = await engine(approval(1, { ask }))((e) => e.run());
    await refused(approval(2, { decide }, { 2: { state: (s) => s } }), r.checkpointId);
    await refused(approval(2, { decide }, { 2: { messages: { review: null } } }), r.checkpointId);
  });

  it("planResume called without saying it answers refuses a checkpoint waiting on an answered request", async () => {
    const wf = approval(1, { ask });
    const r = await engine(wf)((e) => e.run());
    await engine(wf)((e) => e.respond(`${r.runId}:1:ask`, { decision: "approve" }));
    const ctx = { now: () => "2026-01-01T00:00:00.000Z", warn: () => undefined, warnings: [] };
    const err = await refusal(
      onDisk((s) => planResume(wf, s, { fromId: r.checkpointId }, ctx)),
      "planning a resume of the answered checkpoint",
    );
    assert.equal(err.code, "REQUEST_ANSWERED", "a request is answered once, whoever plans the resume");
  });

  it("the first migration that drops a waiting request is the one the warning names", async () => {
    const r = await engine(approval(1, { ask }))((e) => e.run());
    const both = { 2: { messages: { ask: null } }, 3: { messages: { ask: null } } };
    const dropped = await engine(approval(3, { decide }, both))((e) => e.resume(r.checkpointId));
    assert.deepEqual(
      dropped.warnings.filter((w) => w.startsWith("dropped")),
      [`dropped waiting request "${r.runId}:1:ask" of removed request step "ask", as the migration to version 2 says`],
      "the migration to version 2 dropped it",
    );
  });

  it("a message routed away in the migration to a version the checkpoint already has is still undeliverable", async () => {
    stopper = new RunControl();
    const first = code({ run: () => (stopper?.stopAfterSuperstep(), "to second") });
    const routes = { 2: { messages: { second: null } } };
    const v2 = defineWorkflow({
      name: "pipeline",
      version: 2,
      state: {},
      start: "first",
      executors: { first, second: code({ run: () => undefined }) },
      edges: [edge("first", "second")],
      migrations: routes,
    });
    const r = await engine(v2, { control: stopper })((e) => e.run()).finally(() => (stopper = undefined));
    assert.equal(r.status, "stopped", "the run stopped with a message pending for second");
    const v3 = defineWorkflow({ ...v2, version: 3, executors: { first }, edges: [], migrations: { ...routes, 3: (s) => s } });
    const err = await refused(v3, r.checkpointId);
    assert.match(err.message, /holds a message for executor "second" \(from "first": "to second"\)/, "the message names it");
  });
});
