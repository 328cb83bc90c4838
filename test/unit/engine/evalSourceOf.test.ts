import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { z } from "zod";
import { SqlJsStore } from "../../../src/casefile/sqlJsStore";
import { Engine } from "../../../src/engine/engine";
import { isCasefileError } from "../../../src/engine/errors";
import { agentInputsAt, evalSourceOf, stateAt } from "../../../src/engine/evalSource";
import { agent, commit, edge, extract, fact, loader, type AgentSpec } from "../../../src/engine/executors";
import { ScriptedProvider } from "../../../src/engine/providers/scripted";
import type { AgentCallRecord, RuleRecord } from "../../../src/engine/records";
import { defineWorkflow } from "../../../src/engine/workflow";
import { agentCall, checkpoint, ref, run as runRecord } from "../casefile/builders";

/**
 * What `casefile export-eval` and `casefile experiment` read back of an agent step from its case
 * file (issue 18: the mutants of evalSource.ts, which only the CLI's tests reached): the facts and
 * extracts the step saw, the business rules its context got, the state its commit step judged,
 * and the message and state its context was called with. A run of two rounds is written to disk
 * and reopened; the second round's call is the one read, so a record of the first round (its
 * verdict, its extract, its state) taken for it shows.
 *
 * The claim workflow: `load` reads the claim and the policy (facts) from a stand-in ERP; `terms`
 * is an extract of the policy; `propose` reads the claim, the terms, the decision so far (plain
 * state) and `history` (a fact never loaded); `decide` reads the claim and owns the decision.
 */
const T_RULE = "2026-01-01T00:00:00.000Z";
const rule = (id: string, over: Partial<RuleRecord> = {}): RuleRecord => ({
  id,
  statement: `rule ${id}`,
  value: { limit: 500 },
  proposedBy: "reviewer",
  confirmedBy: "maria",
  confirmedAt: T_RULE,
  createdAt: T_RULE,
  updatedAt: T_RULE,
  ...over,
});

const erp = { claim: { amount: 120 }, policyVersion: "p1", policy: "Claims up to 500 EUR are paid." };
const Proposal = z.object({ action: z.enum(["pay", "refuse"]), reason: z.string(), facts: z.array(z.string()) });
const propose = agent({
  reads: ["claim", "terms", "decision", "history"],
  proposal: Proposal,
  model: { model: "gpt-4o-mini" },
  context: (s) => [{ role: "user", content: `pay ${JSON.stringify(s.claim)} under ${JSON.stringify(s.terms)}?` }],
});
const workflow = defineWorkflow({
  name: "claims",
  version: 4,
  state: {
    claim: fact(z.object({ amount: z.number() })),
    history: fact(z.array(z.string())),
    policy: fact(z.object({ text: z.string() })),
    terms: extract(z.object({ limit: z.number() }), {
      from: "policy",
      run: (doc: { text: string }) => ({ limit: Number(/up to (\d+)/.exec(doc.text)![1]) }),
    }),
    decision: z.object({ round: z.number(), action: z.string() }),
  },
  input: z.object({}),
  start: "load",
  executors: {
    load: loader({
      owns: ["claim", "policy"],
      run(ctx) {
        ctx.fact("claim", erp.claim, { source: "erp://claims/CLM-7", sourceVersion: "c1" });
        ctx.fact("policy", { text: erp.policy }, { source: "erp://policies/P-1", sourceVersion: erp.policyVersion });
        return { go: true };
      },
    }),
    propose,
    decide: commit({
      reads: ["claim"],
      owns: ["decision"],
      rules: {},
      apply(outcome, ctx) {
        const round = ((ctx.state.decision as { round: number } | undefined)?.round ?? 0) + 1;
        ctx.write("decision", { round, action: String(outcome.proposal?.action ?? "escalate") });
        return { round };
      },
    }),
  },
  edges: [
    edge("load", "propose"),
    edge("propose", "decide"),
    edge("decide", "load", { when: (m) => (m as { round: number }).round < 2, label: "again" }),
  ],
});

describe("eval source: what an agent step saw, read back from its case file", () => {
  let dir: string;
  let file: string;
  let store: SqlJsStore;
  let runId: string;
  let first: AgentCallRecord;
  let second: AgentCallRecord;

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "casefile-s18d-evalsource-"));
    file = path.join(dir, "CLM-7.casefile");
    const responses = path.join(dir, "responses.json");
    writeFileSync(
      responses,
      JSON.stringify({ responses: [{ step: "propose", response: { action: "pay", reason: "within the limit", facts: ["claim"] } }] }),
    );
    const writer = await SqlJsStore.open(file, { create: true });
    // In force when the run starts; one deleted and one unconfirmed are never given to a context.
    writer.commit({
      rules: [rule("r-limit"), rule("r-old", { deleted: true }), rule("r-draft", { confirmedBy: undefined, confirmedAt: undefined })],
    });
    const engine = new Engine(workflow, writer, {
      provider: new ScriptedProvider(responses),
      log: () => {
        /* the run's log is not what is tested here */
      },
    });
    const result = await engine.run({});
    assert.equal(result.status, "completed", result.error?.message);
    runId = result.runId;
    writer.close();
    store = await SqlJsStore.open(file, { readOnly: true });
    [first, second] = store.listAgentCalls(runId);
    assert.ok(first && second, "two rounds, two agent calls");
  });
  after(() => {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("names the run's workflow and the verdict on this call, not the first round's", () => {
    const seen = evalSourceOf(store, file, second, workflow);
    assert.equal(seen.caseFile, file);
    assert.deepEqual(seen.workflow, { name: "claims", version: 4 });
    assert.equal(seen.call, second, "the call itself");
    const verdicts = store.listVerdicts(runId);
    assert.equal(verdicts.length, 2, "one verdict a round");
    assert.equal(seen.verdict?.agentCallId, second.id, "the verdict judging the second call");
    assert.equal(seen.verdict?.id, verdicts[1]!.id);
  });

  it("gives the facts the step read as they were, the extract it was given cited as its document, and no plain state or unloaded fact", () => {
    const seen = evalSourceOf(store, file, second, workflow);
    assert.deepEqual(Object.keys(seen.facts).sort(), ["claim", "terms"], "decision is plain state, history was never loaded");
    assert.deepEqual(seen.facts.claim!.value, { amount: 120 });
    assert.equal(seen.facts.claim!.provenance.source, "erp://claims/CLM-7");
    assert.equal(seen.facts.claim!.provenance.sourceVersion, "c1");
    assert.deepEqual(seen.facts.terms!.value, { limit: 500 });
    assert.equal(seen.facts.terms!.provenance.source, "extract of erp://policies/P-1@p1", "cited as the extract of its document");
    assert.equal(seen.facts.terms!.provenance.sourceVersion, "p1");
  });

  it("cites an extract only when the call records being given that extract at that version", () => {
    const given = (key: string, sourceVersion: string) => ({ key, from: "policy", source: "erp://policies/P-1", sourceVersion });
    const factKeys = (extracts: AgentCallRecord["extracts"]) =>
      Object.keys(evalSourceOf(store, file, { ...second, extracts }, workflow).facts).sort();
    assert.deepEqual(factKeys(undefined), ["claim"], "a call recorded before extracts were: none cited");
    assert.deepEqual(factKeys([given("terms", "p0")]), ["claim"], "given another version of the document");
    assert.deepEqual(factKeys([given("other", "p1")]), ["claim"], "given another extract of that version");
    assert.deepEqual(factKeys([given("other", "p0"), given("terms", "p1")]), ["claim", "terms"], "given it among others");
  });

  it("gives the business rules recorded with the call, or, for a call recorded before they were kept, the rule table's in force then", () => {
    const seen = evalSourceOf(store, file, second, workflow);
    assert.equal(seen.rulesFrom, "agent call");
    assert.deepEqual(
      seen.rules.map((r) => r.id),
      ["r-limit"],
      "the one rule in force",
    );
    const older = { ...second, rulesInForce: undefined };
    const fallback = evalSourceOf(store, file, older, workflow);
    assert.equal(fallback.rulesFrom, "rule table");
    assert.deepEqual(fallback.rules, [{ id: "r-limit", statement: "rule r-limit", value: { limit: 500 } }], "id, statement and value");
  });

  it("gives the commit step's read and owned keys as they were at the call, and leaves out a key not yet written", () => {
    assert.deepEqual(
      evalSourceOf(store, file, second, workflow).commitState,
      { claim: store.readValues(store.latestCheckpoint(runId)!.keys).claim, decision: { round: 1, action: "pay" } },
      "the claim fact and the first round's decision",
    );
    assert.deepEqual(
      Object.keys(evalSourceOf(store, file, first, workflow).commitState!),
      ["claim"],
      "no decision before the first verdict",
    );
  });

  it("refuses a call whose run is not in the case file, naming both", () => {
    assert.throws(
      () => evalSourceOf(store, file, { ...second, runId: "gone" }, workflow),
      (e: unknown) =>
        isCasefileError(e) && e.code === "UNKNOWN_RUN" && e.message === `agent call ${second.id} names run "gone", which is not in ${file}`,
    );
  });

  it("reads state as of the last checkpoint at or before a superstep, and names the run when there is none", () => {
    const cps = store.listCheckpoints(runId);
    const at = second.superstep;
    assert.deepEqual(
      stateAt(store, runId, at),
      store.readValues(store.getCheckpoint(cps.find((c) => c.superstep === at)!.id)!.keys),
      "at the superstep itself",
    );
    assert.deepEqual(
      stateAt(store, runId, 1000),
      store.readValues(store.latestCheckpoint(runId)!.keys),
      "the last one before a later superstep",
    );
    assert.throws(
      () => stateAt(store, runId, -1),
      (e: unknown) =>
        isCasefileError(e) && e.code === "UNKNOWN_CHECKPOINT" && e.message === `run "${runId}" has no checkpoint at or before superstep -1`,
    );
  });

  it("gives the message and the state an agent step's context was called with, extracts as made in its own superstep", () => {
    const inputs = agentInputsAt(store, runId, second.superstep, "propose", propose as AgentSpec);
    assert.ok("state" in inputs, `inputs found: ${JSON.stringify(inputs)}`);
    assert.deepEqual(inputs.message, { go: true }, "what load sent to propose");
    assert.deepEqual(Object.keys(inputs.state).sort(), ["claim", "decision", "terms"], "the keys it reads that were set");
    assert.deepEqual((inputs.state.terms as { value: unknown }).value, { limit: 500 }, "the extract made for the step");
    assert.deepEqual(inputs.state.decision, { round: 1, action: "pay" }, "the first round's decision");
    // Reaches agentInputsAt's `reads ?? []` (evalSource.ts:94); its ArrayDeclaration mutant is equivalent (an unheld key is skipped).
    const ownsOnly = agentInputsAt(store, runId, second.superstep, "propose", {
      ...(propose as AgentSpec),
      reads: undefined,
      owns: ["decision"],
    });
    assert.deepEqual(
      "state" in ownsOnly && ownsOnly.state,
      { decision: { round: 1, action: "pay" } },
      "a step that reads nothing: its own keys",
    );
    // The first call's extract is made in its own superstep: the checkpoint before has none.
    const firstInputs = agentInputsAt(store, runId, first.superstep, "propose", propose as AgentSpec);
    assert.ok("state" in firstInputs, `inputs found: ${JSON.stringify(firstInputs)}`);
    assert.deepEqual(Object.keys(firstInputs.state).sort(), ["claim", "terms"], "the extract made for it, no decision yet");
    assert.deepEqual(
      Object.keys(evalSourceOf(store, file, first, workflow).facts).sort(),
      ["claim", "terms"],
      "the first call saw the extract too",
    );
  });

  it("says why there are no inputs when no message to the step is pending before the superstep", () => {
    assert.deepEqual(agentInputsAt(store, runId, second.superstep, "decide", propose as AgentSpec), {
      missing: `no message to "decide" at a checkpoint of run ${runId} before superstep ${second.superstep}`,
    });
    assert.deepEqual(agentInputsAt(store, runId, 0, "propose", propose as AgentSpec), {
      missing: `no message to "propose" at a checkpoint of run ${runId} before superstep 0`,
    });
  });
});

/**
 * A claim fact reloaded while the step ran and again after it (a loader beside it, then the next
 * round's), in a case file written record by record: the exported case must give the value the
 * step's context was built from, the one at the checkpoint before its superstep.
 */
describe("eval source: a fact reloaded while or after the step ran", () => {
  let dir: string;
  let file: string;
  let store: SqlJsStore;
  const claimAt = (amount: number) => ({
    value: { amount },
    provenance: { source: "erp://claims/CLM-7", sourceVersion: `c${amount}`, readAt: "2026-01-01T00:00:00.000Z" },
  });
  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "casefile-s18d-reloaded-"));
    file = path.join(dir, "CLM-7.casefile");
    const writer = await SqlJsStore.open(file, { create: true });
    writer.commit({
      runs: [runRecord("H", { workflow: { name: "claims", version: 4, graphHash: workflow.graphHash } })],
      values: [1, 2, 3].map((version) => ({ run: "H", key: "claim", version, value: claimAt(version * 100) })),
      checkpoints: [1, 2, 3].map((ss) => checkpoint(`H:${ss}`, "H", ss, { keys: { claim: ref("H", ss) } })),
      agentCalls: [agentCall("call-h", "H", { executor: "propose", superstep: 2 })],
    });
    writer.close();
    store = await SqlJsStore.open(file, { readOnly: true });
  });
  after(() => {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  // kills evalSource.ts:117 ArithmeticOperator call.superstep + 1 (line 116 in the recorded run): factsSeen would read the checkpoint after the step's
  it("gives the fact as at the checkpoint before the step's superstep, not as reloaded beside it or after it", () => {
    const seen = evalSourceOf(store, file, store.getAgentCall("call-h")!, workflow);
    assert.deepEqual(seen.facts.claim, claimAt(100), "the claim of superstep 1, not superstep 2's (200) or 3's (300)");
    assert.deepEqual(seen.commitState, { claim: claimAt(200) }, "the commit step judges with the state as of the step's own superstep");
  });
});
