import * as assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { z } from "zod";
import { MemoryStore, openCaseFile } from "../../../src/casefile/index";
import { Engine } from "../../../src/engine/engine";
import { code, edge, extract, fact, loader } from "../../../src/engine/executors";
import { defineWorkflow } from "../../../src/engine/workflow";
import type { CaseStore } from "../../../src/engine/store";
import {
  buildInspectorViewModel,
  buildContextView,
  buildStateView,
  buildSuperstepDetail,
  NoRunsError,
  UnknownRunError,
} from "../../../src/extension/viewModel";
import type { DetailOptions } from "../../../src/extension/viewModel";
import { InspectorViewModelSchema, SuperstepDetailSchema, TimelineRows, TimelineSchema } from "../../../src/protocol/webview";
import type { StepDetailView } from "../../../src/protocol/webview";
import { commitInvoiceRun, INVOICE_BRANCH, INVOICE_RUN } from "../../fixtures/casefile/fixture";
import { agentCall, run, step, verdict } from "../casefile/builders";

const caseFile = { path: "/w/invoice.casefile", name: "invoice.casefile" };

/** One step's details, as the panel sends them when the person selects its superstep. */
function detail(store: CaseStore, runId: string, superstep: number, executor: string, opts: DetailOptions = {}): StepDetailView {
  const d = buildSuperstepDetail(store, runId, superstep, opts);
  assert.ok(SuperstepDetailSchema.safeParse(d).success, "valid against the schema the webview parses with");
  const s = d.steps.find((x) => x.stepId === `${runId}-s${superstep}-${executor}`);
  assert.ok(s, `step ${executor} in superstep ${superstep}`);
  return s;
}

/** The same expectations against both stores: what the inspector shows must not depend on which. */
const stores: { name: string; open: () => Promise<{ store: CaseStore; done: () => void }> }[] = [
  {
    name: "MemoryStore",
    open: async () => ({ store: new MemoryStore(), done: () => undefined }),
  },
  {
    name: "SqlJsStore (a case file on disk, reopened read-only)",
    open: async () => {
      const dir = mkdtempSync(path.join(os.tmpdir(), "casefile-vm-"));
      const file = path.join(dir, "invoice.casefile");
      const writer = await openCaseFile(file, { create: true });
      commitInvoiceRun(writer);
      writer.close();
      const reader = await openCaseFile(file, { readOnly: true });
      return { store: reader, done: () => (reader.close(), rmSync(dir, { recursive: true, force: true })) };
    },
  },
];

for (const { name, open } of stores) {
  describe(`Inspector view model from ${name}`, () => {
    let store: CaseStore;
    let done: () => void;

    before(async () => {
      ({ store, done } = await open());
      if (store instanceof MemoryStore) commitInvoiceRun(store);
    });
    after(() => done());

    it("is valid against the schema the webview parses with", () => {
      const vm = buildInspectorViewModel(store, { caseFile, runId: INVOICE_RUN, canRun: { ok: true } });
      assert.doesNotThrow(() => InspectorViewModelSchema.parse(vm));
      assert.deepEqual(JSON.parse(JSON.stringify(vm)), vm, "plain JSON, nothing lost in postMessage");
    });

    it("lays out supersteps in order with their steps, and the branch tree parent first", () => {
      const vm = buildInspectorViewModel(store, { caseFile, runId: INVOICE_RUN, canRun: { ok: true } });
      assert.deepEqual(
        new TimelineRows(TimelineSchema.parse(vm.timeline)).all().map((s) => [s.superstep, s.checkpointId, s.steps.map((x) => x.executor)]),
        [
          [0, `${INVOICE_RUN}-cp0`, ["loadInvoice", "loadSupplier"]],
          [1, `${INVOICE_RUN}-cp1`, ["triage"]],
          [2, `${INVOICE_RUN}-cp2`, ["decide"]],
          [3, `${INVOICE_RUN}-cp3`, ["postPayment"]],
        ],
      );
      assert.deepEqual(
        vm.branches.map((b) => [b.runId, b.parentRunId]),
        [
          [INVOICE_RUN, null],
          [INVOICE_BRANCH, INVOICE_RUN],
        ],
      );
    });

    it("links the agent's proposal to the commit's verdict, rules and diff on both steps", () => {
      const vm = buildInspectorViewModel(store, { caseFile, runId: INVOICE_RUN, canRun: { ok: true } });
      assert.deepEqual(
        new TimelineRows(TimelineSchema.parse(vm.timeline)).all().map((s) => s.steps.map((x) => x.verdict)),
        [[null, null], ["accepted"], ["accepted"], [null]],
        "the timeline knows each step's verdict",
      );
      for (const [n, ex] of [
        [1, "triage"],
        [2, "decide"],
      ] as const) {
        const d = detail(store, INVOICE_RUN, n, ex).decision;
        assert.ok(!("absent" in d), `${ex} shows the decision`);
        assert.equal(d.verdict, "accepted");
        assert.deepEqual(d.proposedBy, { executor: "triage", agentCallId: `${INVOICE_RUN}-call-triage-1` });
        assert.deepEqual((d.proposal as { action: string }).action, "approve");
        assert.deepEqual(
          d.rules.map((r) => [r.name, r.ok]),
          [
            ["cites-known-facts", true],
            ["iban-matches-supplier", true],
            ["amount-under-auto-limit", true],
          ],
        );
        assert.deepEqual(d.diff, [
          { key: "decision", before: null, hadBefore: false, after: { status: "approved", approvedAmount: 1840.5 } },
        ]);
      }
    });

    it("gives the agent step its exact context, with per-message counts only when a counter is given", () => {
      const without = detail(store, INVOICE_RUN, 1, "triage").context;
      assert.ok(!("absent" in without), 'expected: !("absent" in without)');
      assert.deepEqual(
        without.messages.map((m) => [m.role, m.tokens]),
        [
          ["system", null],
          ["user", null],
        ],
      );
      assert.deepEqual(without.tokens, { count: 118, soft: 2000, hard: 4000, tokenizer: "o200k_base" });
      const counted = detail(store, INVOICE_RUN, 1, "triage", { countMessageTokens: (m) => m.content.length }).context;
      assert.ok(!("absent" in counted), 'expected: !("absent" in counted)');
      assert.deepEqual(
        counted.messages.map((m) => m.tokens),
        counted.messages.map((m) => m.content.length),
      );
    });

    it("gives another step's context alone, as the Context tab diffs it, the same as in its superstep's details", () => {
      const opts: DetailOptions = { countMessageTokens: (m) => m.content.length };
      const shown = detail(store, INVOICE_RUN, 1, "triage", opts).context;
      assert.ok(!("absent" in shown), 'expected: !("absent" in shown)');
      const alone = buildContextView(store, INVOICE_RUN, 1, shown.agentCallId, opts);
      assert.ok(!("absent" in alone), 'expected: !("absent" in alone)');
      assert.deepEqual({ ...alone, compareWith: shown.compareWith, compareMore: shown.compareMore }, shown);
      assert.match(
        (buildContextView(store, INVOICE_RUN, 2, shown.agentCallId) as { absent: string }).absent,
        /No model call .* was recorded in superstep 2 of /,
      );
      assert.ok(
        "absent" in buildContextView(store, INVOICE_RUN, 1, "no-such-call"),
        'expected: "absent" in buildContextView(store, INVOICE_RUN, 1, "no-such-call")',
      );
    });

    it("says why a section is empty instead of filling it", () => {
      const loader = detail(store, INVOICE_RUN, 0, "loadInvoice");
      assert.deepEqual(loader.context, { absent: "Only agent steps give a model a context; this is a loader step." });
      assert.deepEqual(loader.intents, { absent: "Only effect steps record intents; this is a loader step." });
      const effect = detail(store, INVOICE_RUN, 3, "postPayment");
      assert.ok(Array.isArray(effect.intents), "expected: Array.isArray(effect.intents)");
      assert.deepEqual(
        effect.intents.map((i) => [i.id, i.status, i.reference]),
        [["invoice:INV-1042:postPayment", "done", { paymentId: "PAY-88213" }]],
      );
    });

    it("shows state at a checkpoint with facts' provenance and what changed since the checkpoint before", () => {
      const state = buildStateView(store, INVOICE_RUN, 2);
      assert.ok("entries" in state, 'expected: "entries" in state');
      assert.equal(state.checkpointId, `${INVOICE_RUN}-cp2`);
      assert.deepEqual(state.comparedWith, { runId: INVOICE_RUN, superstep: 1 });
      assert.deepEqual(
        state.entries.map((e) => [e.key, e.change, e.version, e.provenance?.source ?? null]),
        [
          ["decision", "new", 1, null],
          ["invoice", null, 1, "erp:invoices/INV-1042"],
          ["proposal", null, 1, null],
          ["supplier", null, 1, "erp:suppliers/S-77"],
        ],
      );
      const first = buildStateView(store, INVOICE_RUN, 0);
      assert.ok("entries" in first, 'expected: "entries" in first');
      assert.equal(first.comparedWith, null);
      assert.ok(
        first.entries.every((e) => e.change === null),
        "nothing to compare the first checkpoint with",
      );
      assert.deepEqual(buildStateView(store, INVOICE_RUN, 9), { absent: "No checkpoint was recorded after superstep 9." });
    });

    it("compares a branch's first checkpoint with its fork point, and finds inherited facts' provenance", () => {
      const vm = buildInspectorViewModel(store, { caseFile, runId: INVOICE_BRANCH, canRun: { ok: true } });
      assert.equal(vm.run.parentCheckpointId, `${INVOICE_RUN}-cp1`);
      const state = buildStateView(store, INVOICE_BRANCH, 2);
      assert.ok("entries" in state, 'expected: "entries" in state');
      assert.deepEqual(state.comparedWith, { runId: INVOICE_RUN, superstep: 1 });
      const invoice = state.entries.find((e) => e.key === "invoice")!;
      assert.equal(invoice.writtenBy, INVOICE_RUN, "inherited from the parent run");
      assert.deepEqual(invoice.provenance, {
        source: "erp:invoices/INV-1042",
        sourceVersion: 'etag-"a9f1"',
        readAt: "2026-11-30T10:00:00.000Z",
      });
      const proposal = state.entries.find((e) => e.key === "proposal")!;
      assert.deepEqual([proposal.change, proposal.version, proposal.writtenBy, proposal.provenance], ["changed", 2, INVOICE_BRANCH, null]);
      assert.equal(state.entries.find((e) => e.key === "decision")!.change, "new");
      const d = detail(store, INVOICE_BRANCH, 2, "decide").decision;
      assert.ok(!("absent" in d), 'expected: !("absent" in d)');
      assert.equal(d.verdict, "escalated");
      assert.equal(d.proposedBy, null, "the edited proposal came from a patch, not a model call");
    });

    it("gives a superstep with no records nothing but the reason, and refuses an unknown run", () => {
      assert.deepEqual(buildSuperstepDetail(store, INVOICE_RUN, 9), {
        runId: INVOICE_RUN,
        superstep: 9,
        steps: [],
        state: { absent: "No checkpoint was recorded after superstep 9." },
        requests: [],
      });
      assert.throws(() => buildSuperstepDetail(store, "nope", 0), UnknownRunError);
    });

    it("defaults to the most recently updated run and refuses unknown runs by name", () => {
      assert.equal(buildInspectorViewModel(store, { caseFile, canRun: { ok: true } }).run.id, INVOICE_BRANCH);
      assert.throws(() => buildInspectorViewModel(store, { caseFile, runId: "nope", canRun: { ok: true } }), UnknownRunError);
    });

    it("carries Restricted Mode's reason to the webview", () => {
      const vm = buildInspectorViewModel(store, { caseFile, runId: INVOICE_RUN, canRun: { ok: false, reason: "untrusted" } });
      assert.deepEqual(vm.canRun, { ok: false, reason: "untrusted" });
    });
  });
}

/** Two runs of 60 supersteps, each an agent step `decide` (two calls: a retry) and, every third, an agent step `triage`. */
function commitLongRuns(store: CaseStore): void {
  store.commit({ runs: [run("main"), run("fork", { parentRunId: "main" })] });
  for (const r of ["main", "fork"]) {
    for (let n = 0; n < 60; n++) {
      const executors = n % 3 === 0 ? ["decide", "triage"] : ["decide"];
      store.commit({
        steps: executors.map((executor) => step(`${r}-s${n}-${executor}`, r, n, { executor, kind: "agent" })),
        agentCalls: executors.flatMap((executor) => [
          agentCall(`${r}-a${n}-${executor}`, r, { superstep: n, executor, tokens: { count: n, tokenizer: "o200k_base" } }),
          agentCall(`${r}-a${n}-${executor}-retry`, r, { superstep: n, executor }),
        ]),
        // The verdict on superstep n's decision is recorded in superstep n + 1.
        verdicts: [
          verdict(`${r}-v${n}`, r, {
            superstep: n + 1,
            executor: "commit",
            agentCallId: `${r}-a${n}-decide`,
            verdict: n % 2 ? "accepted" : "rejected",
          }),
        ],
      });
    }
  }
}

for (const { name, open } of [
  { name: "MemoryStore", open: async () => ({ store: new MemoryStore() as CaseStore, done: () => undefined }) },
  {
    name: "SqlJsStore",
    open: async () => {
      const dir = mkdtempSync(path.join(os.tmpdir(), "casefile-vm-long-"));
      const file = path.join(dir, "long.casefile");
      const writer = await openCaseFile(file, { create: true });
      commitLongRuns(writer);
      writer.close();
      const reader = await openCaseFile(file, { readOnly: true });
      return { store: reader as CaseStore, done: () => (reader.close(), rmSync(dir, { recursive: true, force: true })) };
    },
  },
]) {
  describe(`Inspector view model of long runs from ${name}`, () => {
    let store: CaseStore;
    let done: () => void;
    before(async () => {
      ({ store, done } = await open());
      if (store instanceof MemoryStore) commitLongRuns(store);
    });
    after(() => done());

    it("offers the nearest steps to compare with, the same step in the other branch first, and counts the rest", () => {
      const context = detail(store, "main", 30, "decide").context;
      assert.ok(!("absent" in context), `a context is shown: ${JSON.stringify(context)}`);
      const picked = context.compareWith.map((c) => `${c.relation} ${c.runId} ${c.superstep} ${c.executor}`);
      const branch = picked.filter((p) => p.startsWith("branch"));
      assert.equal(branch.length, 25);
      assert.deepEqual(branch.slice(0, 5), [
        "branch fork 30 decide",
        "branch fork 29 decide",
        "branch fork 31 decide",
        "branch fork 28 decide",
        "branch fork 32 decide",
      ]);
      const inRun = picked.filter((p) => p.startsWith("run"));
      assert.equal(inRun.length, 25);
      assert.deepEqual(inRun.slice(0, 4), ["run main 30 triage", "run main 29 decide", "run main 31 decide", "run main 28 decide"]);
      // The fork has 60 decide steps; main has 79 other agent steps (59 decide, 20 triage).
      assert.equal(context.compareMore, 60 - 25 + (59 + 20 - 25));
      const first = context.compareWith[0]!;
      assert.deepEqual(first, {
        relation: "branch",
        runId: "fork",
        superstep: 30,
        executor: "decide",
        agentCallId: "fork-a30-decide",
        hash: "sha256:fork-a30-decide",
        tokens: 30,
      });
    });

    it("finds the verdict recorded a superstep later, on the timeline and in the details", () => {
      const vm = buildInspectorViewModel(store, { caseFile, runId: "main", canRun: { ok: true } });
      const rows = new TimelineRows(TimelineSchema.parse(vm.timeline)).all();
      assert.deepEqual(
        rows.slice(0, 4).map((r) => r.steps.map((x) => [x.executor, x.verdict])),
        [
          [
            ["decide", "rejected"],
            ["triage", null],
          ],
          [["decide", "accepted"]],
          [["decide", "rejected"]],
          [
            ["decide", "accepted"],
            ["triage", null],
          ],
        ],
      );
      const d = detail(store, "main", 7, "decide").decision;
      assert.ok(!("absent" in d), `a decision is shown: ${JSON.stringify(d)}`);
      assert.equal(d.verdictId, "main-v7");
      assert.deepEqual(d.proposedBy, { executor: "decide", agentCallId: "main-a7-decide" });
      const c = detail(store, "main", 7, "decide").context;
      assert.ok(!("absent" in c), `a context is shown: ${JSON.stringify(c)}`);
      assert.equal(c.agentCallId, "main-a7-decide", "a step's context is its first model call");
    });
  });
}

describe("Inspector view model from an empty case file", () => {
  it("says the case file holds no runs", () => {
    assert.throws(() => buildInspectorViewModel(new MemoryStore(), { caseFile, canRun: { ok: true } }), NoRunsError);
  });
});

describe("Inspector view model: extracts from long documents", () => {
  it("labels an extract in the state with the document and the version it was taken from", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "casefile-vm-extract-"));
    const file = path.join(dir, "contract.casefile");
    const wf = defineWorkflow({
      name: "contract",
      version: 1,
      state: {
        contract: fact(z.object({ text: z.string() })),
        terms: extract(z.object({ noticeDays: z.number() }), {
          from: "contract",
          run: (doc: { text: string }) => ({ noticeDays: Number(/(\d+) days/.exec(doc.text)?.[1]) }),
        }),
        notice: z.number(),
      },
      input: z.object({}),
      start: "load",
      executors: {
        load: loader({
          owns: ["contract"],
          run(ctx) {
            ctx.fact(
              "contract",
              { text: "Clause 9. Price changes need 30 days' notice." },
              { source: "erp://contracts/C-7", sourceVersion: "v3" },
            );
            return "loaded";
          },
        }),
        read: code({ reads: ["terms"], owns: ["notice"], run: (ctx) => ctx.write("notice", ctx.state.terms.value.noticeDays) }),
      },
      edges: [edge("load", "read")],
    });
    const writer = await openCaseFile(file, { create: true });
    let runId: string;
    try {
      const result = await new Engine(wf, writer).run({});
      assert.equal(result.status, "completed");
      runId = result.runId;
    } finally {
      writer.close();
    }
    const store = await openCaseFile(file, { readOnly: true });
    try {
      const state = buildStateView(store, runId, store.latestCheckpoint(runId)!.superstep);
      assert.ok(!("absent" in state), "the checkpoint has state");
      const terms = state.entries.find((e) => e.key === "terms");
      assert.ok(terms, "the extract is in the state at the checkpoint");
      assert.equal(terms.provenance?.source, "extract of erp://contracts/C-7@v3");
      assert.equal(terms.provenance?.sourceVersion, "v3");
      const contract = state.entries.find((e) => e.key === "contract");
      assert.equal(contract?.provenance?.source, "erp://contracts/C-7", "the document itself keeps its fact's provenance");
    } finally {
      store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
