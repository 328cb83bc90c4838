import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { z } from "zod";
import { openCaseFile } from "../../../src/casefile/index";
import { inspectCaseFile } from "../../../src/cli/inspect";
import { Engine } from "../../../src/engine/engine";
import { agent, code, commit, edge, extract, fact, loader, request } from "../../../src/engine/executors";
import { ScriptedProvider } from "../../../src/engine/providers/scripted";
import type { Json } from "../../../src/engine/records";
import { defineWorkflow, type Workflow } from "../../../src/engine/workflow";

/**
 * Every throw site of a superstep goes through one failure path: the run ends `failed` on the
 * record (run status, the error with the executor or edge at fault, a failed step, a `run_failed`
 * event at the superstep that failed), nothing of the superstep reaches state, and resuming from
 * the last good checkpoint with the code fixed finishes the run. Each case runs on a case file on
 * disk, closed and reopened before anything is read back.
 *
 * The workflow: load (loader) -> calc (code) -> propose (agent, reads an extract of the document)
 * -> decide (commit, one rule) -> review (request). `fault` breaks one place; `null` is the fix,
 * with the same graph (a `when` on load -> calc in both), so resume continues the same run.
 */

type Fault =
  | "loader"
  | "when"
  | "when-not-boolean"
  | "send-date"
  | "local-date"
  | "yield-date"
  | "write-invalid"
  | "write-date"
  | "extract"
  | "context"
  | "context-garbage"
  | "rule"
  | "rule-garbage"
  | "rule-async"
  | "refine"
  | "apply"
  | "prompt"
  | "prompt-date"
  | "prompt-garbage"
  | "answer";

const Proposal = z.object({ action: z.enum(["pay", "refuse"]), reason: z.string(), facts: z.array(z.string()) });

function workflow(fault: Fault | null): Workflow {
  const boom = (where: Fault) => {
    if (fault === where) throw new Error(`${where} broke`);
  };
  return defineWorkflow({
    name: "failures",
    version: 1,
    state: {
      doc: fact(z.object({ text: z.string() })),
      words: extract(z.object({ count: z.number() }), {
        from: "doc",
        run: (d: { text: string }) => (boom("extract"), { count: d.text.split(" ").length }),
      }),
      // A refine that throws is a broken schema: the write is refused naming executor and key.
      total: z.number().refine(() => (boom("refine"), true)),
      anything: z.unknown(),
      decision: z.object({ verdict: z.string() }),
      review: z.string(),
    },
    start: "load",
    executors: {
      load: loader({
        owns: ["doc"],
        run(ctx) {
          boom("loader");
          ctx.fact("doc", { text: "pay the claim now" }, { source: "erp://doc/1", sourceVersion: "v1" });
          return "loaded";
        },
      }),
      calc: code({
        reads: ["doc"],
        owns: ["total", "anything"],
        run(ctx) {
          ctx.write("total", fault === "write-invalid" ? "forty" : 40);
          if (fault === "write-date") ctx.write("anything", { at: new Date(0) });
          if (fault === "local-date") ctx.setLocal(new Date(0) as unknown as Json);
          if (fault === "yield-date") ctx.yield({ at: new Date(0) } as unknown as Json);
          return fault === "send-date" ? (new Date(0) as unknown as Json) : "calculated";
        },
      }),
      propose: agent({
        reads: ["words", "total"],
        proposal: Proposal,
        model: { model: "test-model" },
        context: (s) => {
          boom("context");
          if (fault === "context-garbage") return "hello" as never;
          return [{ role: "user", content: `Pay ${s.total}? The document has ${s.words.value.count} words.` }];
        },
      }),
      decide: commit({
        reads: ["total"],
        owns: ["decision"],
        rules: {
          small: ({ state }) => {
            boom("rule");
            if (fault === "rule-garbage") return 42 as never;
            if (fault === "rule-async") return Promise.resolve(true) as never;
            return (state.total as number) < 100;
          },
        },
        apply(outcome, ctx) {
          boom("apply");
          ctx.write("decision", { verdict: outcome.verdict });
        },
      }),
      review: request({
        owns: ["review"],
        prompt: () => {
          boom("prompt");
          if (fault === "prompt-garbage") return 42 as never;
          return { title: "Review the payment", detail: (fault === "prompt-date" ? new Date(0) : "40") as string };
        },
        onAnswer(answer, ctx) {
          boom("answer");
          ctx.write("review", answer.decision);
        },
      }),
    },
    edges: [
      edge("load", "calc", { when: () => (boom("when"), fault === "when-not-boolean" ? ("yes" as unknown as boolean) : true) }),
      edge("calc", "propose"),
      edge("propose", "decide"),
      edge("decide", "review"),
    ],
  });
}

let dir: string;
let file: string;
let provider: ScriptedProvider;
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), "casefile-failures-"));
  file = path.join(dir, "case.casefile");
  const fixture = path.join(dir, "responses.json");
  const response = { action: "pay", reason: "small", facts: ["words"] };
  writeFileSync(fixture, JSON.stringify({ responses: [{ step: "propose", response }] }));
  provider = new ScriptedProvider(fixture);
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** Runs the engine on the case file, then closes it: what a test reads next comes from disk. */
async function withEngine<T>(wf: Workflow, go: (e: Engine) => Promise<T>): Promise<T> {
  const store = await openCaseFile(file);
  try {
    return await go(new Engine(wf, store, { provider }));
  } finally {
    store.close();
  }
}

async function reopened<T>(read: (store: Awaited<ReturnType<typeof openCaseFile>>) => T): Promise<T> {
  const store = await openCaseFile(file, { readOnly: true });
  try {
    return read(store);
  } finally {
    store.close();
  }
}

/** `ranSteps: false`: the superstep failed before its steps ran (an extract), so no step is recorded. */
const cases: { fault: Fault; superstep: number; code: string; executor: string; edge?: string; message: RegExp; ranSteps?: false }[] = [
  { fault: "loader", superstep: 1, code: "EXECUTOR_FAILED", executor: "load", message: /loader broke/ },
  {
    fault: "when",
    superstep: 1,
    code: "EDGE_FAILED",
    executor: "load",
    edge: "load->calc",
    message: /condition of edge "load->calc" threw: when broke/,
  },
  {
    fault: "when-not-boolean",
    superstep: 1,
    code: "EDGE_FAILED",
    executor: "load",
    edge: "load->calc",
    message: /condition of edge "load->calc" returned "yes", not true or false/,
  },
  { fault: "send-date", superstep: 2, code: "INVALID_STATE_VALUE", executor: "calc", message: /"calc" wrote a Date object at "message"/ },
  { fault: "local-date", superstep: 2, code: "INVALID_STATE_VALUE", executor: "calc", message: /"calc" wrote a Date object at "local"/ },
  {
    fault: "yield-date",
    superstep: 2,
    code: "INVALID_STATE_VALUE",
    executor: "calc",
    message: /"calc" wrote a Date object at "output.at"/,
  },
  { fault: "write-invalid", superstep: 2, code: "INVALID_STATE_VALUE", executor: "calc", message: /invalid value at "total"/ },
  { fault: "write-date", superstep: 2, code: "INVALID_STATE_VALUE", executor: "calc", message: /Date object at "anything.at"/ },
  {
    fault: "extract",
    superstep: 3,
    code: "EXTRACT_FAILED",
    executor: "propose",
    message: /extract "words" of "doc" .* failed: extract broke/,
    ranSteps: false,
  },
  { fault: "context", superstep: 3, code: "EXECUTOR_FAILED", executor: "propose", message: /context broke/ },
  { fault: "rule", superstep: 4, code: "RULE_FAILED", executor: "decide", message: /rule "small" threw: rule broke/ },
  {
    fault: "rule-garbage",
    superstep: 4,
    code: "RULE_FAILED",
    executor: "decide",
    message: /rule "small" returned 42: a rule returns true, false or/,
  },
  { fault: "rule-async", superstep: 4, code: "RULE_FAILED", executor: "decide", message: /rule "small" returned a Promise: / },
  {
    fault: "refine",
    superstep: 2,
    code: "INVALID_STATE_VALUE",
    executor: "calc",
    message: /executor "calc" wrote an invalid value at "total": its schema threw: refine broke/,
  },
  { fault: "apply", superstep: 4, code: "EXECUTOR_FAILED", executor: "decide", message: /apply broke/ },
  { fault: "prompt", superstep: 5, code: "EXECUTOR_FAILED", executor: "review", message: /prompt broke/ },
  {
    fault: "prompt-date",
    superstep: 5,
    code: "INVALID_WORKFLOW",
    executor: "review",
    message: /request step "review": prompt returned a detail that is a Date, not \{ title: string/,
  },
  {
    fault: "prompt-garbage",
    superstep: 5,
    code: "INVALID_WORKFLOW",
    executor: "review",
    message: /request step "review": prompt returned 42, not/,
  },
  {
    fault: "context-garbage",
    superstep: 3,
    code: "INVALID_WORKFLOW",
    executor: "propose",
    message: /step "propose": context returned "hello", not an array of \{ role, content \} messages/,
  },
];

describe("engine: every failure ends the run failed, on the record", () => {
  for (const c of cases) {
    it(`${c.fault}: fails at superstep ${c.superstep} naming ${c.edge ? `edge ${c.edge}` : `"${c.executor}"`}, then resumes after the fix`, async () => {
      const failed = await withEngine(workflow(c.fault), (e) => e.run(null));
      assert.equal(failed.status, "failed");
      assert.equal(failed.failedAt, c.superstep, "the superstep that failed, not the last good one");
      assert.equal(failed.superstep, c.superstep - 1);

      const seen = await reopened((store) => ({
        run: store.getRun(failed.runId)!,
        events: store.listEvents({ runId: failed.runId }),
        steps: store.listSteps(failed.runId),
        checkpoints: store.listCheckpoints(failed.runId).map((cp) => cp.superstep),
      }));
      assert.equal(seen.run.status, "failed", "the case file says failed, not running");
      assert.equal(seen.run.error?.code, c.code);
      assert.match(seen.run.error!.message, c.message);
      assert.equal(seen.run.error?.executor, c.executor);
      assert.equal(seen.run.error?.edge, c.edge);
      const runFailed = seen.events.filter((e) => e.type === "run_failed");
      assert.equal(runFailed.length, 1);
      assert.equal(runFailed[0]!.superstep, c.superstep);
      assert.equal((runFailed[0]!.data as { checkpoint: string }).checkpoint, failed.checkpointId);
      const stepFailed = seen.events.filter((e) => e.type === "step_failed");
      assert.deepEqual(
        stepFailed.map((e) => [e.superstep, (e.data as { executor: string }).executor]),
        c.ranSteps === false ? [] : [[c.superstep, c.executor]],
        "the step at fault is recorded failed",
      );
      if (c.ranSteps !== false) {
        const failedStep = seen.steps.find((s) => s.superstep === c.superstep && s.executor === c.executor)!;
        assert.equal(failedStep.status, "failed");
        assert.equal(failedStep.error?.code, c.code);
      }
      assert.deepEqual(
        seen.checkpoints,
        Array.from({ length: c.superstep }, (_, i) => i),
        "nothing of the failed superstep was checkpointed",
      );

      const resumed = await withEngine(workflow(null), (e) => e.resume(failed.checkpointId));
      assert.equal(resumed.runId, failed.runId, "the latest checkpoint of a failed run continues that run");
      assert.equal(resumed.status, "waiting");
      const after = await reopened((store) => ({
        run: store.getRun(failed.runId)!,
        values: store.readValues(store.latestCheckpoint(failed.runId)!.keys),
      }));
      assert.equal(after.run.status, "waiting");
      assert.equal(after.run.error, undefined);
      assert.equal(after.values.total, 40);
      assert.deepEqual(after.values.decision, { verdict: "accepted" });
    });
  }

  it("an answer whose handler throws fails the run at the answer's superstep; resume after the fix completes it", async () => {
    const waiting = await withEngine(workflow(null), (e) => e.run(null));
    assert.equal(waiting.status, "waiting");
    const requestId = await reopened((store) => store.latestCheckpoint(waiting.runId)!.waiting[0]!.id);
    const failed = await withEngine(workflow("answer"), (e) => e.respond(requestId, { decision: "approve" }));
    assert.equal(failed.status, "failed");
    assert.equal(failed.failedAt, waiting.superstep + 2, "the answer is delivered in the next checkpoint, handled in the one after");
    const run = await reopened((store) => store.getRun(failed.runId)!);
    assert.equal(run.status, "failed");
    assert.match(run.error!.message, /executor "review" failed: answer broke/);
    const done = await withEngine(workflow(null), (e) => e.resume(failed.checkpointId));
    assert.equal(done.status, "completed");
    const review = await reopened((store) => store.readValues(store.latestCheckpoint(failed.runId)!.keys).review);
    assert.equal(review, "approve");
  });

  it("inspect's outcome of a failed run names the code, the step and the superstep that failed", async () => {
    const failed = await withEngine(workflow("rule"), (e) => e.run(null));
    const out = await reopened((store) => inspectCaseFile(store, file));
    const run = out.runs.find((r) => r.id === failed.runId)!;
    assert.equal(run.outcome.summary, "FAILED: stopped by RULE_FAILED in decide at superstep 4");
  });

  it("a failure repeated on resume is recorded per attempt, each at its own superstep", async () => {
    const first = await withEngine(workflow("rule"), (e) => e.run(null));
    const second = await withEngine(workflow("rule"), (e) => e.resume(first.checkpointId));
    assert.equal(second.runId, first.runId);
    assert.equal(second.failedAt, 4);
    const events = await reopened((store) => store.listEvents({ runId: first.runId }).filter((e) => e.type === "run_failed"));
    assert.deepEqual(
      events.map((e) => e.superstep),
      [4, 4],
    );
  });
});

describe("engine: a damaged record a run would read later is refused before its first write", () => {
  // The agent's call counts and the business rules are read by steps after the branch starts:
  // found then, the branch would be left `running` in the damaged file.
  for (const [table, damage] of [
    ["agent_calls", "UPDATE agent_calls SET data = 'not json'"],
    ["rules", `INSERT INTO rules VALUES ('rule-x', 0, '{"id": 5}')`],
  ] as const) {
    it(`${table}: resume from an earlier checkpoint is CORRUPT_CASE_FILE naming the row, the file's bytes unchanged`, async () => {
      const waiting = await withEngine(workflow(null), (e) => e.run(null));
      execFileSync("/usr/bin/sqlite3", [file, damage]);
      const before = readFileSync(file);
      await assert.rejects(
        withEngine(workflow(null), (e) => e.resume(`${waiting.runId}:1`)),
        (err: Error & { code?: string }) => {
          assert.equal(err.code, "CORRUPT_CASE_FILE", err.message);
          assert.match(err.message, new RegExp(`is corrupted: ${table} row `));
          return true;
        },
      );
      assert.deepEqual(readFileSync(file), before, "nothing was written into the damaged file");
    });
  }
});

describe("engine: values loaded into a run are checked against their schemas", () => {
  it("a schema that throws on a stored value refuses the resume naming key and checkpoint, not an untyped throw", async () => {
    const waiting = await withEngine(workflow(null), (e) => e.run(null));
    await assert.rejects(
      withEngine(workflow("refine"), (e) => e.resume(waiting.checkpointId)),
      (err: Error & { code?: string }) => {
        assert.equal(err.code, "INVALID_STATE_VALUE");
        assert.match(
          err.message,
          /stored value of "total" .* at checkpoint "run-\w+:5" is invalid at "total": its schema threw: refine broke/,
        );
        return true;
      },
    );
    const run = await reopened((store) => store.getRun(waiting.runId)!);
    assert.equal(run.status, "waiting", "a refused resume changes nothing");
  });

  it("refuses to resume a checkpoint whose stored value no longer parses, naming key, path and message", async () => {
    const waiting = await withEngine(workflow(null), (e) => e.run(null));
    // Damage the stored decision the way a hand edit would: valid JSON, wrong shape.
    const { default: initSqlJs } = await import("sql.js");
    const SQL = await initSqlJs();
    const { readFileSync } = await import("node:fs");
    const db = new SQL.Database(readFileSync(file));
    const journalled = db.exec("SELECT count(*) FROM state_values WHERE key = 'decision'")[0]?.values[0]?.[0];
    db.close();
    // The engine's close compacts; if the value is still only in the journal, rewrite through a store.
    assert.equal(journalled, 1, "the closed case file holds the decision in its database");
    const db2 = new SQL.Database(readFileSync(file));
    db2.run("UPDATE state_values SET data = json_set(data, '$.value', json('{\"verdict\": 7}')) WHERE key = 'decision'");
    writeFileSync(file, db2.export());
    db2.close();

    const cp = await reopened((store) => store.latestCheckpoint(waiting.runId)!.id);
    await assert.rejects(
      withEngine(workflow(null), (e) => e.resume(cp)),
      (err: Error & { code?: string }) => {
        assert.equal(err.code, "INVALID_STATE_VALUE");
        assert.match(
          err.message,
          /stored value of "decision" \(version 1 of run run-\w+\) at checkpoint "run-\w+:\d+" is invalid at "decision.verdict": /,
        );
        return true;
      },
    );
    const run = await reopened((store) => store.getRun(waiting.runId)!);
    assert.equal(run.status, "waiting", "a refused resume changes nothing");
  });
});
