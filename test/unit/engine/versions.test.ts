import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { z } from "zod";
import { type SqlJsStore } from "../../../src/casefile/index";
import { type RunResult } from "../../../src/engine/engine";
import { code, edge, request } from "../../../src/engine/executors";
import { defineWorkflow, type Workflow, type WorkflowSpec } from "../../../src/engine/workflow";
import { engineOn, withCaseFile } from "./helpers/caseFileOnDisk";

/**
 * Versions keep their promises, on a case file on disk reopened for every step: a request is
 * answered once whatever the workflow version, a message for a removed executor is delivered
 * only where a migration routes it, a missing migration names what no longer parses, and a
 * schema changed without a new version is refused on resume.
 */

let dir: string;
let file: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), "casefile-versions-"));
  file = path.join(dir, "case.casefile");
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const onDisk = <T>(go: (store: SqlJsStore) => Promise<T> | T): Promise<T> => withCaseFile(file, go);
const engine = (wf: Workflow) => engineOn(file, wf);

describe("versions: a request is answered once", () => {
  const approval = (overrides: Partial<WorkflowSpec> = {}): Workflow =>
    defineWorkflow({
      name: "approval",
      version: 1,
      state: { decision: z.string() },
      start: "ask",
      executors: {
        ask: request({
          owns: ["decision"],
          prompt: () => ({ title: "Approve the refund?" }),
          onAnswer: (answer, ctx) => ctx.write("decision", answer.decision),
        }),
      },
      edges: [],
      ...overrides,
    });
  const v2 = () => approval({ version: 2, migrations: { 2: (s) => s } });

  it("refuses a second answer after the first went to a v2 branch, naming the first; the v1 run is no longer waiting", async () => {
    const waited = await engine(approval())((e) => e.run());
    assert.equal(waited.status, "waiting");
    const requestId = await onDisk((s) => s.latestCheckpoint(waited.runId)!.waiting[0]!.id);

    const first = await engine(v2())((e) => e.respond(requestId, { decision: "approve" }, { by: "ana" }));
    assert.equal(first.status, "completed");
    assert.notEqual(first.runId, waited.runId, "the v2 answer runs in a branch");

    for (const wf of [v2(), approval()]) {
      await assert.rejects(
        engine(wf)((e) => e.respond(requestId, { decision: "reject" }, { by: "bo" })),
        (err: Error & { code?: string }) => {
          assert.equal(err.code, "REQUEST_ANSWERED");
          assert.match(err.message, new RegExp(`already answered \\{"decision":"approve"\\} by ana at \\S+, in run ${first.runId}`));
          return true;
        },
      );
    }
    const seen = await onDisk((s) => ({
      v1: s.getRun(waited.runId)!,
      runs: s.listRuns().map((r) => [r.id, r.status]),
      branchDecision: s.readValues(s.latestCheckpoint(first.runId)!.keys).decision,
    }));
    assert.equal(seen.v1.status, "superseded");
    assert.equal(seen.v1.supersededBy, first.runId);
    assert.deepEqual(
      seen.runs.filter(([, status]) => status === "waiting"),
      [],
      "no run is listed as waiting",
    );
    assert.equal(seen.runs.length, 2, "the second answer made no branch");
    assert.equal(seen.branchDecision, "approve");
  });

  it("refuses a second answer in the same run, naming who answered", async () => {
    const waited = await engine(approval())((e) => e.run());
    const requestId = await onDisk((s) => s.latestCheckpoint(waited.runId)!.waiting[0]!.id);
    await engine(approval())((e) => e.respond(requestId, { decision: "approve" }, { by: "ana" }));
    await assert.rejects(
      engine(approval())((e) => e.respond(requestId, { decision: "reject" })),
      (err: Error & { code?: string }) => {
        assert.equal(err.code, "REQUEST_ANSWERED");
        assert.match(
          err.message,
          new RegExp(`already answered \\{"decision":"approve"\\} by ana at \\S+, in run ${waited.runId}; a request is answered once`),
        );
        return true;
      },
    );
  });
});

describe("versions: a request is answered once, whatever branch waits on it", () => {
  const approval = (version: number, extra: Partial<WorkflowSpec> = {}): Workflow =>
    defineWorkflow({
      name: "approval",
      version,
      state: { decision: z.string() },
      start: "ask",
      executors: {
        ask: request({
          owns: ["decision"],
          prompt: () => ({ title: "Approve the refund?" }),
          onAnswer: (answer, ctx) => ctx.write("decision", answer.decision),
        }),
      },
      edges: [],
      ...(version > 1 ? { migrations: { 2: (s) => s } } : {}),
      ...extra,
    });
  const statuses = () => onDisk((s) => Object.fromEntries(s.listRuns().map((r) => [r.id, [r.status, r.supersededBy ?? null]])));

  async function waitingWithV2Branch(): Promise<{ v1: string; v2: string; requestId: string; checkpoint: string }> {
    const waited = await engine(approval(1))((e) => e.run());
    const requestId = await onDisk((s) => s.latestCheckpoint(waited.runId)!.waiting[0]!.id);
    const branch = await engine(approval(2))((e) => e.resume(waited.checkpointId));
    assert.equal(branch.status, "waiting", "the migrated branch waits on the request it inherited");
    return { v1: waited.runId, v2: branch.runId, requestId, checkpoint: waited.checkpointId };
  }

  it("answered in the v1 run, the v2 branch a resume made waiting on it is superseded, not left waiting", async () => {
    const { v1, v2, requestId } = await waitingWithV2Branch();
    const answered = await engine(approval(1))((e) => e.respond(requestId, { decision: "approve" }, { by: "ana" }));
    assert.equal(answered.runId, v1, "the v1 workflow answers the v1 run in place");
    assert.deepEqual(await statuses(), { [v1]: ["completed", null], [v2]: ["superseded", v1] }, "no run is left waiting");
    await assert.rejects(
      engine(approval(2))((e) => e.respond(requestId, { decision: "reject" }, { by: "bo" })),
      (err: Error & { code?: string }) => err.code === "REQUEST_ANSWERED" && err.message.includes(`by ana at `),
      "the v2 branch cannot take a second answer",
    );
  });

  it("answered by the v2 workflow, the v2 branch takes it in place and the v1 run is superseded by it", async () => {
    const { v1, v2, requestId } = await waitingWithV2Branch();
    const answered = await engine(approval(2))((e) => e.respond(requestId, { decision: "reject" }, { by: "bo" }));
    assert.equal(answered.runId, v2, "the branch of this version continues; no third run");
    assert.deepEqual(await statuses(), { [v1]: ["superseded", v2], [v2]: ["completed", null] });
  });

  it("a resume of a checkpoint waiting on an answered request is refused naming the answer, and makes no run", async () => {
    const { requestId, checkpoint } = await waitingWithV2Branch();
    const answered = await engine(approval(1))((e) => e.respond(requestId, { decision: "approve" }, { by: "ana" }));
    const before = await statuses();
    for (const wf of [approval(1), approval(2)]) {
      await assert.rejects(
        engine(wf)((e) => e.resume(checkpoint)),
        (err: Error & { code?: string }) => {
          assert.equal(err.code, "REQUEST_ANSWERED");
          assert.match(
            err.message,
            new RegExp(
              `already answered \\{"decision":"approve"\\} by ana at \\S+, in run ${answered.runId}; checkpoint "${checkpoint}" waits on it`,
            ),
          );
          assert.match(err.message, /resume from a checkpoint before superstep 1 to ask it again/);
          return true;
        },
      );
    }
    assert.deepEqual(await statuses(), before, "the refused resumes changed no run and made none");
  });

  it("a version without the request step refuses a resume waiting on it, unless a migration drops it", async () => {
    const waited = await engine(approval(1))((e) => e.run());
    const noAsk = (migrations: WorkflowSpec["migrations"]) =>
      approval(2, {
        state: { decision: z.string() },
        start: "decide",
        executors: { decide: code({ owns: ["decision"], run: (ctx) => ctx.write("decision", "auto") }) },
        migrations,
      });
    await assert.rejects(
      engine(noAsk({ 2: (s) => s }))((e) => e.resume(waited.checkpointId)),
      (err: Error & { code?: string }) => {
        assert.equal(err.code, "UNDELIVERABLE_MESSAGE");
        assert.match(
          err.message,
          new RegExp(`waits on request "${waited.runId}:1:ask" of executor "ask", which version 2 of "approval" no longer has`),
        );
        assert.match(err.message, /messages: \{ "ask": null \}/);
        return true;
      },
    );
    assert.equal((await onDisk((s) => s.listRuns())).length, 1, "the refused resume made no branch");
    const dropped = await engine(noAsk({ 2: { messages: { ask: null } } }))((e) => e.resume(waited.checkpointId));
    assert.equal(dropped.status, "completed");
    assert.match(
      dropped.warnings.join("\n"),
      /dropped waiting request ".*:1:ask" of removed request step "ask", as the migration to version 2 says/,
    );
    assert.deepEqual(await onDisk((s) => s.latestCheckpoint(dropped.runId)!.waiting), [], "the branch waits on nothing");
  });
});

describe("versions: messages for removed executors", () => {
  // v1: first -> second, where second fails, so the checkpoint after `first` holds its message.
  const v1 = () =>
    defineWorkflow({
      name: "pipeline",
      version: 1,
      state: { done: z.string() },
      start: "first",
      executors: {
        first: code({ run: () => "to second" }),
        second: code({
          owns: ["done"],
          run: () => {
            throw new Error("second is broken");
          },
        }),
      },
      edges: [edge("first", "second")],
    });
  const without = (version: number, migrations?: WorkflowSpec["migrations"]) =>
    defineWorkflow({
      name: "pipeline",
      version,
      state: { done: z.string() },
      start: "first",
      executors: {
        first: code({ run: () => "to third" }),
        third: code({ owns: ["done"], run: (ctx) => ctx.write("done", `third got ${JSON.stringify(ctx.message)}`) }),
      },
      edges: [edge("first", "third")],
      migrations,
    });

  async function failedAtSecond(): Promise<RunResult> {
    const failed = await engine(v1())((e) => e.run());
    assert.equal(failed.status, "failed");
    assert.equal(failed.checkpointId, `${failed.runId}:1`);
    return failed;
  }

  // Kills the mutant "pending messages for removed executors dropped, not refused" (resumePlan.ts reroute).
  it("refuses the resume, naming the executor and the message, when nothing routes it", async () => {
    const failed = await failedAtSecond();
    for (const [wf, hint] of [
      [without(2, { 2: (s) => s }), /migrations: \{ 2: \{ state: \(s\) => s, messages: \{ "second": "<executor>" or null/],
      [without(1), /\(with version: 2\)/],
    ] as const) {
      await assert.rejects(
        engine(wf)((e) => e.resume(failed.checkpointId)),
        (err: Error & { code?: string }) => {
          assert.equal(err.code, "UNDELIVERABLE_MESSAGE");
          assert.match(
            err.message,
            /holds a message for executor "second" \(from "first": "to second"\), which version \d of "pipeline" no longer has/,
          );
          assert.match(err.message, hint);
          return true;
        },
      );
    }
    const runs = await onDisk((s) => s.listRuns());
    assert.equal(runs.length, 1, "a refused resume makes no branch");
  });

  it("delivers it where a migration routes it, and drops it where the migration says null", async () => {
    const failed = await failedAtSecond();
    const routed = await engine(without(2, { 2: { messages: { second: "third" } } }))((e) => e.resume(failed.checkpointId));
    assert.equal(routed.status, "completed");
    assert.match(routed.warnings.join("\n"), /routed a pending message for removed executor "second" \(from "first"\) to "third"/);
    assert.ok(
      routed.warnings.includes(
        `graph of "pipeline" changed since checkpoint "${failed.checkpointId}"; executors added: third; executors removed: second`,
      ),
      `the graph change is named, executor by executor: ${routed.warnings.join(" | ")}`,
    );
    const done = await onDisk((s) => s.readValues(s.latestCheckpoint(routed.runId)!.keys).done);
    assert.equal(done, 'third got "to second"');

    const dropped = await engine(without(2, { 2: { messages: { second: null } } }))((e) => e.resume(failed.checkpointId));
    assert.equal(dropped.status, "completed");
    assert.match(
      dropped.warnings.join("\n"),
      /dropped a pending message for removed executor "second" .* as the migration to version 2 says/,
    );
  });
});

describe("versions: migrations and schemas", () => {
  const order = (version: number, shape: z.ZodType, migrations?: WorkflowSpec["migrations"]) =>
    defineWorkflow({
      name: "order",
      version,
      state: { order: shape },
      start: "take",
      executors: {
        take: code({ owns: ["order"], run: (ctx) => (ctx.write("order", { qty: 3, unit: "box" }), "next") }),
        wait: request({ prompt: () => ({ title: "Ship it?" }), onAnswer: () => undefined }),
      },
      edges: [edge("take", "wait")],
      migrations,
    });
  const v1Shape = z.object({ qty: z.number(), unit: z.string() });
  const renamed = z.object({ quantity: z.number(), unit: z.enum(["carton", "pallet"]) });

  it("a missing migration names every key and path that no longer parses", async () => {
    const waited = await engine(order(1, v1Shape))((e) => e.run());
    await assert.rejects(
      engine(order(2, renamed))((e) => e.resume(waited.checkpointId)),
      (err: Error & { code?: string }) => {
        assert.equal(err.code, "MIGRATION_FAILED");
        assert.match(err.message, /no migration to version 2 is declared; as it is, its state no longer parses at: /);
        assert.match(err.message, /"order.quantity" \(no longer parses: .*\)/);
        assert.match(err.message, /"order.unit" \(no longer parses: .*\)/);
        return true;
      },
    );
  });

  it("a schema changed without a new version (a renamed field) is refused on resume, naming key and path", async () => {
    const waited = await engine(order(1, v1Shape))((e) => e.run());
    await assert.rejects(
      engine(order(1, renamed))((e) => e.resume(waited.checkpointId)),
      (err: Error & { code?: string }) => {
        assert.equal(err.code, "INVALID_STATE_VALUE");
        assert.match(err.message, /stored value of "order" .* is invalid at "order.quantity": /);
        assert.match(err.message, /declare version 2 with a migration/);
        return true;
      },
    );
    const run = await onDisk((s) => s.getRun(waited.runId)!);
    assert.equal(run.status, "waiting", "the refused resume changed nothing");
  });
});
