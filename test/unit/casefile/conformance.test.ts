import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { MemoryStore, SCHEMA_VERSION, SqlJsStore } from "../../../src/casefile";
import type { CaseStore } from "../../../src/engine/store";
import { PG_SCHEMA_VERSION, PostgresStore } from "../../../src/pgstore";
import { createDatabase } from "../../helpers/pgCluster";
import { agentCall, checkpoint, event, fact, intent, ref, rule, run, step, verdict } from "./builders";

/**
 * One suite, every CaseStore. Whatever the engine can observe through the port must be the same
 * whether it runs against memory (tests, previews) or against a case file on disk.
 */
/** `schemaVersion`: the version of the store's own schema (a case file's, or the Postgres store's). */
function conformance(name: string, open: () => Promise<{ store: CaseStore; dispose(): void }>, schemaVersion = SCHEMA_VERSION): void {
  describe(`CaseStore conformance: ${name}`, () => {
    let store: CaseStore;
    let dispose: () => void;

    beforeEach(async () => {
      ({ store, dispose } = await open());
    });
    afterEach(() => dispose());

    it("says it is open for writing, as a store the engine commits to is", () => {
      assert.equal(store.readOnly, false, "readOnly of a store opened for writing");
    });

    it("reports the schema version and creation time", () => {
      const m = store.meta();
      assert.equal(m.schemaVersion, schemaVersion);
      assert.ok(!Number.isNaN(Date.parse(m.createdAt)), m.createdAt);
    });

    it("stores runs, keeps a branch run's parent run and checkpoint, and lists runs in commit order", () => {
      store.commit({ runs: [run("r1")] });
      store.commit({ runs: [run("r2", { parentRunId: "r1", parentCheckpointId: "c1", patch: { invoice: ["/amount"] } })] });
      assert.deepEqual(store.getRun("r2"), run("r2", { parentRunId: "r1", parentCheckpointId: "c1", patch: { invoice: ["/amount"] } }));
      assert.deepEqual(
        store.listRuns().map((r) => [r.id, r.parentRunId]),
        [
          ["r1", undefined],
          ["r2", "r1"],
        ],
      );
      assert.equal(store.getRun("nope"), undefined);
    });

    it("upserts a run: a status change replaces the row and keeps its place in the list", () => {
      store.commit({ runs: [run("r1"), run("r2")] });
      store.commit({ runs: [run("r1", { status: "completed", updatedAt: "2026-01-02T00:00:00.000Z", outputs: [{ paid: true }] })] });
      assert.deepEqual(
        store.listRuns().map((r) => [r.id, r.status]),
        [
          ["r1", "completed"],
          ["r2", "running"],
        ],
      );
      assert.deepEqual(store.getRun("r1")!.outputs, [{ paid: true }]);
    });

    it("lists a run's checkpoints by superstep whatever the commit order, and finds the latest", () => {
      store.commit({ runs: [run("r1"), run("r2")] });
      store.commit({ checkpoints: [checkpoint("c0", "r1", 0)] });
      store.commit({ checkpoints: [checkpoint("c2", "r1", 2, { parentId: "c1", pending: [{ to: "b", from: "a", payload: 1 }] })] });
      store.commit({
        checkpoints: [
          checkpoint("c1", "r1", 1, {
            parentId: "c0",
            waiting: [
              { id: "q", executor: "ask", runId: "r1", superstep: 1, createdAt: "t", prompt: { title: "Approve?" }, message: null },
            ],
          }),
          checkpoint("b0", "r2", 0, { parentId: "c1" }),
        ],
      });
      assert.deepEqual(store.listCheckpoints("r1"), [
        { id: "c0", runId: "r1", superstep: 0, createdAt: "2026-01-01T00:00:00.000Z", pending: 0, waiting: 0 },
        { id: "c1", runId: "r1", superstep: 1, createdAt: "2026-01-01T00:00:00.000Z", parentId: "c0", pending: 0, waiting: 1 },
        { id: "c2", runId: "r1", superstep: 2, createdAt: "2026-01-01T00:00:00.000Z", parentId: "c1", pending: 1, waiting: 0 },
      ]);
      assert.equal(store.latestCheckpoint("r1")!.id, "c2");
      assert.equal(store.latestCheckpoint("r2")!.parentId, "c1", "a branch's first checkpoint points into its parent run");
      assert.deepEqual(
        store.getCheckpoint("c1"),
        checkpoint("c1", "r1", 1, { parentId: "c0", waiting: store.getCheckpoint("c1")!.waiting }),
      );
      assert.equal(store.latestCheckpoint("r3"), undefined);
      assert.deepEqual(store.listCheckpoints("r3"), []);
      assert.deepEqual(
        store.listCheckpoints("r1", 1).map((c) => c.id),
        ["c1"],
        "one superstep's checkpoints",
      );
      assert.deepEqual(store.listCheckpoints("r1", 5), []);
      assert.equal(store.latestCheckpoint("r1", 2)!.id, "c1", "the last checkpoint before superstep 2");
      assert.equal(store.latestCheckpoint("r1", 9)!.id, "c2");
      assert.equal(store.latestCheckpoint("r1", 0), undefined, "nothing before the first superstep");
      assert.equal(store.getCheckpoint("zz"), undefined);
    });

    it("reads the values a checkpoint refers to, across a branch and its parent run", () => {
      store.commit({
        values: [
          { run: "r1", key: "invoice", version: 1, value: { amount: 100, lines: [1, 2] } },
          { run: "r1", key: "invoice", version: 2, value: { amount: 120, lines: [1, 2, 3] } },
          { run: "r1", key: "decision", version: 1, value: null },
        ],
      });
      store.commit({ values: [{ run: "r2", key: "invoice", version: 3, value: "edited" }] });
      assert.deepEqual(store.readValues({ invoice: ref("r1", 2), decision: ref("r1", 1) }), {
        invoice: { amount: 120, lines: [1, 2, 3] },
        decision: null,
      });
      assert.deepEqual(store.readValues({ invoice: ref("r2", 3), decision: ref("r1", 1) }), { invoice: "edited", decision: null });
      assert.deepEqual(store.readValues({}), {});
    });

    it("refuses to read a value a ref points at but the store lacks, naming the key", () => {
      store.commit({ values: [{ run: "r1", key: "invoice", version: 1, value: 1 }] });
      assert.throws(
        () => store.readValues({ invoice: ref("r1", 1), supplier: ref("r1", 4) }),
        (e: Error & { code?: string }) => e.code === "CORRUPT_CASE_FILE" && /"supplier" version 4 of run r1/.test(e.message),
      );
    });

    it("keeps append-only tables in commit order, with their filters", () => {
      store.commit({
        steps: [step("s1", "r1", 0), step("s2", "r1", 1, { executor: "decide", kind: "agent" }), step("s3", "r2", 0)],
        facts: [fact("r1", "invoice", 1), fact("r1", "invoice", 1, { source: "bank" }), fact("r2", "supplier", 1)],
        agentCalls: [agentCall("a1", "r1"), agentCall("a2", "r2")],
        verdicts: [verdict("v1", "r1", { agentCallId: "a1" }), verdict("v2", "r2")],
      });
      store.commit({ steps: [step("s4", "r1", 1, { status: "failed", error: { code: "EXECUTOR_FAILED", message: "boom" } })] });
      assert.deepEqual(
        store.listSteps("r1").map((s) => s.id),
        ["s1", "s2", "s4"],
      );
      assert.deepEqual(
        store.listSteps("r1", 1).map((s) => s.id),
        ["s2", "s4"],
      );
      assert.deepEqual(store.listSteps("r1", 1)[1]!.error, { code: "EXECUTOR_FAILED", message: "boom" });
      assert.deepEqual(
        store.listFacts("r1").map((f) => f.source),
        ["erp", "bank"],
      );
      assert.deepEqual(
        store.listAgentCalls().map((a) => a.id),
        ["a1", "a2"],
      );
      assert.deepEqual(store.listAgentCalls("r2"), [agentCall("a2", "r2")]);
      assert.deepEqual(store.getAgentCall("a1"), agentCall("a1", "r1"));
      assert.equal(store.getAgentCall("a9"), undefined);
      assert.deepEqual(
        store.listVerdicts().map((v) => v.id),
        ["v1", "v2"],
      );
      assert.deepEqual(store.listVerdicts("r1"), [verdict("v1", "r1", { agentCallId: "a1" })]);
    });

    it("narrows agent calls and verdicts to one superstep or one agent call, in commit order", () => {
      store.commit({
        agentCalls: [
          agentCall("a1", "r1", { superstep: 1 }),
          agentCall("a2", "r1", { superstep: 2, executor: "triage", tokens: { count: 42, tokenizer: "o200k_base" } }),
          agentCall("a3", "r2", { superstep: 1 }),
          agentCall("a4", "r1", { superstep: 1, executor: "triage" }),
        ],
        verdicts: [
          verdict("v1", "r1", { superstep: 2, agentCallId: "a1" }),
          verdict("v2", "r1", { superstep: 3, agentCallId: "a2" }),
          verdict("v3", "r2", { superstep: 2, agentCallId: "a3" }),
          verdict("v4", "r1", { superstep: 2 }),
        ],
      });
      const ids = (rows: { id: string }[]) => rows.map((r) => r.id);
      assert.deepEqual(ids(store.listAgentCalls("r1", 1)), ["a1", "a4"]);
      assert.deepEqual(ids(store.listAgentCalls(undefined, 1)), ["a1", "a3", "a4"]);
      assert.deepEqual(store.listAgentCalls("r1", 2), [
        agentCall("a2", "r1", { superstep: 2, executor: "triage", tokens: { count: 42, tokenizer: "o200k_base" } }),
      ]);
      assert.deepEqual(store.listAgentCalls("r1", 7), []);
      assert.deepEqual(ids(store.listVerdicts("r1", { superstep: 2 })), ["v1", "v4"]);
      assert.deepEqual(ids(store.listVerdicts(undefined, { superstep: 2 })), ["v1", "v3", "v4"]);
      assert.deepEqual(ids(store.listVerdicts("r1", { agentCallId: "a2" })), ["v2"]);
      assert.deepEqual(ids(store.listVerdicts(undefined, { agentCallId: "a3" })), ["v3"]);
      assert.deepEqual(ids(store.listVerdicts("r1", { agentCallId: "a3" })), [], "a call of another run");
      assert.deepEqual(store.listVerdicts("r1", { superstep: 2, agentCallId: "a1" }), [
        verdict("v1", "r1", { superstep: 2, agentCallId: "a1" }),
      ]);
    });

    it("summarises every agent call in commit order, the same list until a call is added", () => {
      assert.deepEqual(store.agentCallSummaries(), []);
      store.commit({
        agentCalls: [agentCall("a1", "r1"), agentCall("a2", "r2", { superstep: 4, tokens: { count: 42, tokenizer: "o200k_base" } })],
      });
      const first = store.agentCallSummaries();
      assert.deepEqual(first, [
        { id: "a1", runId: "r1", superstep: 1, executor: "decide", hash: "sha256:a1", tokens: null },
        { id: "a2", runId: "r2", superstep: 4, executor: "decide", hash: "sha256:a2", tokens: 42 },
      ]);
      store.commit({ steps: [step("s1", "r1", 0)] });
      assert.equal(store.agentCallSummaries(), first, "nothing new: the same array");
      store.commit({ agentCalls: [agentCall("a3", "r1", { superstep: 2, executor: "triage" })] });
      const second = store.agentCallSummaries();
      assert.notEqual(second, first);
      assert.deepEqual(
        second.map((c) => [c.id, c.executor]),
        [
          ["a1", "decide"],
          ["a2", "decide"],
          ["a3", "triage"],
        ],
      );
      assert.equal(first.length, 2, "an array handed out earlier is not changed");
    });

    it("refuses to replace a row of an append-only table, in the same batch or a later one", () => {
      store.commit({ steps: [step("s1", "r1", 0)], values: [{ run: "r1", key: "k", version: 1, value: 1 }] });
      const refused = (code: string, pattern: RegExp) => (e: Error & { code?: string }) => e.code === code && pattern.test(e.message);
      assert.throws(() => store.commit({ steps: [step("s1", "r1", 5)] }), refused("INVALID_BATCH", /steps row s1 already exists/));
      assert.throws(
        () => store.commit({ agentCalls: [agentCall("a", "r1"), agentCall("a", "r1")] }),
        refused("INVALID_BATCH", /agentCalls row a appears twice/),
      );
      assert.throws(
        () => store.commit({ values: [{ run: "r1", key: "k", version: 1, value: 2 }] }),
        refused("INVALID_BATCH", /already exists/),
      );
      assert.equal(store.listSteps("r1")[0]!.superstep, 0);
      assert.deepEqual(store.readValues({ k: ref("r1", 1) }), { k: 1 });
    });

    it("upserts intents as they move from open to done, filtering by run and status", () => {
      store.commit({ intents: [intent("pay:7", "r1"), intent("pay:8", "r1"), intent("pay:9", "r2")] });
      store.commit({ intents: [intent("pay:7", "r1", { status: "done", reference: { paymentId: "P-1" } })] });
      assert.deepEqual(store.getIntent("pay:7"), intent("pay:7", "r1", { status: "done", reference: { paymentId: "P-1" } }));
      assert.deepEqual(
        store.listIntents().map((i) => i.id),
        ["pay:7", "pay:8", "pay:9"],
      );
      assert.deepEqual(
        store.listIntents({ status: "open" }).map((i) => i.id),
        ["pay:8", "pay:9"],
      );
      assert.deepEqual(
        store.listIntents({ runId: "r1", status: "open" }).map((i) => i.id),
        ["pay:8"],
      );
      assert.deepEqual(
        store.listIntents({ runId: "r2" }).map((i) => i.id),
        ["pay:9"],
      );
      assert.equal(store.getIntent("pay:1"), undefined);
    });

    it("upserts rules; a deleted rule is listed only when asked for", () => {
      store.commit({ rules: [rule("eur"), rule("net30", { statement: "Pay at 30 days" })] });
      store.commit({
        rules: [rule("eur", { confirmedBy: "ana", confirmedAt: "2026-01-03T00:00:00.000Z" }), rule("net30", { deleted: true })],
      });
      assert.deepEqual(store.listRules(), [rule("eur", { confirmedBy: "ana", confirmedAt: "2026-01-03T00:00:00.000Z" })]);
      assert.deepEqual(
        store.listRules(true).map((r) => [r.id, r.deleted === true]),
        [
          ["eur", false],
          ["net30", true],
        ],
      );
    });

    it("numbers events itself, increasing across commits, and filters by run, superstep and sequence", () => {
      store.commit({ events: [event("r1", "run_started"), event("r1", "superstep_started", 1)] });
      store.commit({ events: [{ ...event("r2", "run_started"), seq: 999 }, event("r1", "checkpoint", 1, { id: "c1" })] });
      const all = store.listEvents();
      assert.deepEqual(
        all.map((e) => [e.runId, e.type]),
        [
          ["r1", "run_started"],
          ["r1", "superstep_started"],
          ["r2", "run_started"],
          ["r1", "checkpoint"],
        ],
      );
      const seqs = all.map((e) => e.seq!);
      assert.ok(seqs[0]! >= 1 && seqs.every((s, i) => i === 0 || s > seqs[i - 1]!), `increasing: ${seqs}`);
      assert.ok(!seqs.includes(999), "a seq given by the caller is not kept");
      assert.deepEqual(
        store.listEvents({ runId: "r1" }).map((e) => e.type),
        ["run_started", "superstep_started", "checkpoint"],
      );
      assert.deepEqual(
        store.listEvents({ afterSeq: seqs[1]! }).map((e) => e.seq),
        seqs.slice(2),
      );
      assert.deepEqual(
        store.listEvents({ runId: "r1", afterSeq: seqs[1]! }).map((e) => e.data),
        [{ id: "c1" }],
      );
      assert.deepEqual(
        store.listEvents({ runId: "r1", superstep: 1 }).map((e) => e.type),
        ["superstep_started", "checkpoint"],
        "one superstep of one run (the Run Inspector's click)",
      );
    });

    it("applies nothing of a batch with one bad row, and a refused batch uses up no event seq", () => {
      store.commit({ runs: [run("r1")], events: [event("r1", "run_started")] });
      const before = store.listEvents()[0]!.seq!;
      const bad = checkpoint("c1", "r1", 0, { local: { parser: (() => 1) as never } });
      assert.throws(
        () =>
          store.commit({
            runs: [run("r1", { status: "completed" }), run("r2")],
            steps: [step("s1", "r1", 0)],
            checkpoints: [bad],
            events: [event("r1", "checkpoint")],
          }),
        (e: Error & { code?: string }) =>
          e.code === "INVALID_BATCH" && /checkpoints row c1\.local\.parser: a function is not JSON/.test(e.message),
      );
      assert.equal(store.getRun("r1")!.status, "running");
      assert.equal(store.getRun("r2"), undefined);
      assert.deepEqual(store.listSteps("r1"), []);
      assert.equal(store.getCheckpoint("c1"), undefined);
      store.commit({ events: [event("r1", "checkpoint")] });
      assert.deepEqual(
        store.listEvents().map((e) => e.seq),
        [before, before + 1],
      );
    });

    it("refuses what JSON cannot carry, naming the table, row and path", () => {
      const cases: [string, () => void, RegExp][] = [
        ["NaN", () => store.commit({ values: [{ run: "r", key: "k", version: 1, value: { n: NaN } }] }), /values row .*\.value\.n: NaN/],
        [
          "a Date",
          () => store.commit({ runs: [run("r1", { input: { at: new Date() as never } })] }),
          /runs row r1\.input\.at: a Date object/,
        ],
        [
          "undefined in an array",
          () => store.commit({ runs: [run("r1", { outputs: [1, undefined as never] })] }),
          /runs row r1\.outputs\[1\]/,
        ],
        [
          "a missing id",
          () => store.commit({ steps: [{ ...step("x", "r1", 0), id: undefined as never }] }),
          /steps\[0\]\.id must be a non-empty string/,
        ],
        [
          "a missing value",
          () => store.commit({ values: [{ run: "r", key: "k", version: 1, value: undefined as never }] }),
          /value is missing/,
        ],
        ["an unknown table", () => store.commit({ value: [] } as never), /unknown table "value"/],
        [
          "a bigint",
          () => store.commit({ events: [event("r1", "output", 0, { n: 1n as never })] }),
          /events\[0\]\.data\.n: a bigint is not JSON/,
        ],
      ];
      for (const [what, commit, pattern] of cases) {
        assert.throws(commit, (e: Error & { code?: string }) => e.code === "INVALID_BATCH" && pattern.test(e.message), what);
      }
      assert.deepEqual(store.listRuns(), []);
      assert.deepEqual(store.listEvents(), []);
    });

    it("drops undefined members as JSON does, so both stores return the same record", () => {
      store.commit({ runs: [run("r1", { parentRunId: undefined, error: undefined })] });
      assert.deepEqual(store.getRun("r1"), run("r1"));
      assert.ok(!("parentRunId" in store.getRun("r1")!), 'expected: !("parentRunId" in store.getRun("r1")!)');
    });

    it("does not let a caller alias a stored row, going in or coming out", () => {
      const r = run("r1", { input: { amount: 100 } });
      const values = [{ run: "r1", key: "k", version: 1, value: { list: [1] } }];
      store.commit({ runs: [r], values });
      (r.input as { amount: number }).amount = 999;
      (values[0]!.value.list as number[]).push(2);
      const got = store.getRun("r1")!;
      (got.input as { amount: number }).amount = 555;
      assert.deepEqual(store.getRun("r1")!.input, { amount: 100 });
      const read = store.readValues({ k: ref("r1", 1) });
      (read.k as { list: number[] }).list.push(3);
      assert.deepEqual(store.readValues({ k: ref("r1", 1) }), { k: { list: [1] } });
    });

    it("treats an empty batch as nothing to do", () => {
      store.commit({});
      store.commit({ runs: [], events: [] });
      assert.deepEqual(store.listRuns(), []);
      store.commit({ events: [event("r1", "run_started")] });
      assert.equal(store.listEvents().length, 1);
    });
  });
}

conformance("MemoryStore", async () => {
  const store = new MemoryStore();
  return { store, dispose: () => store.close() };
});

conformance("SqlJsStore", async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "casefile-conf-"));
  const store = await SqlJsStore.open(path.join(dir, "case.casefile"), { create: true });
  return {
    store,
    dispose: () => {
      store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

// A real Postgres (a cluster made for this test run, test/helpers/pgCluster.ts): each test a case of its own.
let pgCase = 0;
conformance(
  "PostgresStore",
  async () => {
    pgConformanceUrl ??= createDatabase("conformance");
    const store = await PostgresStore.open(pgConformanceUrl, { caseId: `case-${++pgCase}`, create: true });
    return { store, dispose: () => store.close() };
  },
  PG_SCHEMA_VERSION,
);
let pgConformanceUrl: string | undefined;
