import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { z } from "zod";
import { MemoryStore } from "../../../src/casefile/memoryStore";
import type { AgentReplay } from "../../../src/engine/task";
import { RunControl } from "../../../src/engine/control";
import { Engine, type EngineOptions } from "../../../src/engine/engine";
import { checkProposal, describeContextChange } from "../../../src/engine/agentStep";
import { agent, code, commit, edge, fact, loader, type AgentSpec } from "../../../src/engine/executors";
import { ScriptedProvider } from "../../../src/engine/providers/scripted";
import type { AgentCallRecord, ChatMessage, Json } from "../../../src/engine/records";
import { defineWorkflow, type Workflow } from "../../../src/engine/workflow";

/**
 * The agent step end to end through the engine: a loader reads a claim (a fact with provenance),
 * the agent proposes, the commit step applies a limit rule. Each test writes the scripted
 * fixture the model's answers come from into a temp folder and runs on a MemoryStore.
 */

const Proposal = z.object({ action: z.enum(["pay", "refuse"]), reason: z.string().min(1), facts: z.array(z.string()) });
const LIMIT = 100;

interface Options {
  /** The agent's budget; default none. */
  budget?: AgentSpec["budget"];
  /** Changes the context's wording, as an edited workflow would. */
  wording?: string;
}

function claimWorkflow(opts: Options = {}): Workflow {
  return defineWorkflow({
    name: "claims",
    version: 1,
    state: {
      claim: fact(z.object({ id: z.string(), amount: z.number() })),
      decision: z.object({ action: z.string(), verdict: z.string(), reason: z.string() }),
    },
    input: z.object({ amount: z.number() }),
    start: "load",
    executors: {
      load: loader({
        owns: ["claim"],
        run(ctx) {
          const { amount } = ctx.message as { amount: number };
          ctx.fact("claim", { id: "C-1", amount }, { source: "crm://claims/C-1", sourceVersion: '"v3"' });
          return "loaded";
        },
      }),
      propose: agent({
        reads: ["claim"],
        proposal: Proposal,
        model: { model: "gpt-4o-mini", params: { temperature: 0 } },
        budget: opts.budget,
        context: (s) => [
          { role: "system", content: `${opts.wording ?? "Decide whether to pay the claim."} Answer JSON {action, reason, facts}.` },
          { role: "user", content: `Fact "claim" (${s.claim.provenance.source}): ${JSON.stringify(s.claim.value)}` },
        ],
      }),
      decide: commit({
        reads: ["claim"],
        owns: ["decision"],
        rules: {
          underLimit: ({ proposal, state }) =>
            proposal.action !== "pay" || state.claim.value.amount <= LIMIT
              ? { ok: true, message: "within the limit" }
              : { ok: false, message: `${state.claim.value.amount} is above the payment limit of ${LIMIT}` },
        },
        apply(outcome, ctx) {
          const action = outcome.verdict === "accepted" ? String(outcome.proposal!.action) : "escalate";
          ctx.write("decision", { action, verdict: outcome.verdict, reason: outcome.reason });
        },
      }),
    },
    edges: [edge("load", "propose"), edge("propose", "decide")],
  });
}

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), "casefile-agent-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

let fixtures = 0;
/** A scripted provider answering `propose` with each response in turn (by call index). */
function scripted(...responses: (string | Record<string, Json>)[]): ScriptedProvider {
  const file = path.join(dir, `fixture-${++fixtures}.json`);
  writeFileSync(file, JSON.stringify({ responses: responses.map((response, call) => ({ step: "propose", call, response })) }));
  return new ScriptedProvider(file);
}

/** A provider that cannot answer: a test using it shows the model was never called. */
function unreachable(): ScriptedProvider {
  return new ScriptedProvider(path.join(dir, "no-such-fixture.json"));
}

async function runClaim(amount: number, answer: string | Record<string, Json>, opts: Options = {}, engine: EngineOptions = {}) {
  const store = new MemoryStore();
  const result = await new Engine(claimWorkflow(opts), store, { provider: scripted(answer), ...engine }).run({ amount });
  const call = store.listAgentCalls(result.runId)[0];
  const verdict = store.listVerdicts(result.runId)[0];
  return { store, result, call, verdict };
}

const good = { action: "pay", reason: "The claim is small and documented.", facts: ["claim"] };

describe("agent step: the model proposes, code commits", () => {
  const rejections: [string, string | Record<string, Json>, string, RegExp][] = [
    ["invalid JSON", "Sure! I would pay it.", "BAD_JSON", /model answer is not valid JSON/],
    ["a schema violation", { action: "pay", facts: ["claim"] }, "SCHEMA_VIOLATION", /proposal does not match its schema at "reason"/],
    ["an unknown action", { ...good, action: "pay_double" }, "UNKNOWN_ACTION", /proposed action "pay_double" is not one of pay, refuse/],
    [
      "a fact that does not exist",
      { ...good, facts: ["claim", "bank_balance"] },
      "UNKNOWN_FACT",
      /cites "bank_balance", not among the facts it was given \(claim\)/,
    ],
  ];
  for (const [what, answer, code, message] of rejections) {
    it(`rejects ${what} (${code}), escalates the case and records the raw answer and the reason`, async () => {
      const { result, call, verdict, store } = await runClaim(50, answer);
      assert.equal(result.status, "completed");
      assert.equal(call!.raw, typeof answer === "string" ? answer : JSON.stringify(answer));
      assert.equal(call!.rejection?.code, code);
      assert.match(call!.rejection!.message, message);
      assert.equal(call!.proposal, undefined, "a rejected answer is no proposal");
      assert.equal(verdict!.verdict, "escalated");
      assert.equal(verdict!.agentCallId, call!.id);
      assert.match(verdict!.reason, new RegExp(`^proposal rejected \\(${code}\\): `));
      assert.deepEqual(verdict!.rules, [], "no rule runs on a rejected proposal");
      const decision = store.readValues(store.latestCheckpoint(result.runId)!.keys).decision as { action: string; verdict: string };
      assert.deepEqual([decision.action, decision.verdict], ["escalate", "escalated"]);
    });
  }

  it("escalates a proposal that fails a commit rule, with each rule's result and the reason", async () => {
    const { call, verdict } = await runClaim(250, good);
    assert.deepEqual(call!.proposal, good);
    assert.equal(call!.rejection, undefined);
    assert.equal(verdict!.verdict, "escalated");
    assert.deepEqual(verdict!.rules, [{ name: "underLimit", ok: false, message: "250 is above the payment limit of 100" }]);
    assert.equal(verdict!.reason, "underLimit: 250 is above the payment limit of 100");
    assert.deepEqual(verdict!.diff.decision!.after, { action: "escalate", verdict: "escalated", reason: verdict!.reason });
  });

  it("accepts a proposal every rule passes, and the diff shows what the commit step applied", async () => {
    const { verdict } = await runClaim(40, good);
    assert.equal(verdict!.verdict, "accepted");
    assert.deepEqual(Object.keys(verdict!.diff), ["decision"]);
    assert.equal(verdict!.diff.decision!.before, undefined);
    assert.deepEqual(verdict!.diff.decision!.after, { action: "pay", verdict: "accepted", reason: "every rule passed" });
  });

  it("records the request with the model and parameters the step declares", async () => {
    // Kills agentStep.ts's `spec.model.params ?? {}` as `&&` (the parameters dropped).
    const { call } = await runClaim(40, good);
    assert.equal(call!.request.model, "gpt-4o-mini");
    assert.deepEqual(call!.request.params, { temperature: 0 });
  });

  it("never lets model output write state: the agent's superstep changes no key, whatever the answer says", async () => {
    // The answer tries to set the decision and to overwrite the claim fact.
    const answer = { ...good, decision: { action: "pay", verdict: "accepted", reason: "model says so" }, claim: { id: "C-1", amount: 1 } };
    const { store, result, call } = await runClaim(250, answer);
    const agentStep = store.listSteps(result.runId).find((s) => s.executor === "propose")!;
    assert.deepEqual(agentStep.writes, []);
    const before = store.getCheckpoint(`${result.runId}:${call!.superstep - 1}`)!;
    const after = store.getCheckpoint(`${result.runId}:${call!.superstep}`)!;
    assert.deepEqual(after.keys, before.keys, "the agent's superstep committed no key");
    assert.deepEqual(call!.proposal, good, "fields outside the proposal schema are dropped");
    const state = store.readValues(store.latestCheckpoint(result.runId)!.keys) as { claim: { value: Json }; decision: { verdict: string } };
    assert.deepEqual(state.claim.value, { id: "C-1", amount: 250 });
    assert.equal(state.decision.verdict, "escalated", "the limit rule decided, not the answer");
  });
});

describe("agent step: token budget", () => {
  it("records a warning event above the soft budget and still calls the model", async () => {
    const { store, result, call } = await runClaim(50, good, { budget: { soft: 20, hard: 10_000 } });
    assert.equal(result.status, "completed");
    assert.ok(call!.tokens!.count > 20, "expected: call!.tokens!.count > 20");
    assert.deepEqual([call!.tokens!.soft, call!.tokens!.hard, call!.tokens!.tokenizer], [20, 10_000, "o200k_base"]);
    const warnings = store.listEvents({ runId: result.runId }).filter((e) => e.type === "warning");
    assert.equal(warnings.length, 1);
    assert.deepEqual(warnings[0]!.data, {
      executor: "propose",
      message: `step "propose": context is ${call!.tokens!.count} tokens, above the soft budget of 20 tokens`,
    });
  });

  it("refuses the step above the hard budget before the model is called, naming both numbers", async () => {
    const store = new MemoryStore();
    const result = await new Engine(claimWorkflow({ budget: { hard: 20 } }), store, { provider: unreachable() }).run({ amount: 50 });
    assert.equal(result.status, "failed");
    assert.equal(
      result.error?.code,
      "TOKEN_BUDGET_EXCEEDED",
      "the refusal came before the provider, which would fail with MODEL_RESPONSE_MISSING",
    );
    assert.equal(result.error?.executor, "propose");
    assert.match(result.error!.message, /context is \d+ tokens, above the hard budget of 20 tokens; the model was not called/);
    assert.deepEqual(store.listVerdicts(result.runId), []);
  });
});

describe("agent step: no provider", () => {
  it("fails the step as MODEL_CALL_FAILED, and keeps the attempt naming provider none", async () => {
    // Kills agentStep.ts's `input.provider?.name ?? "none"` mutants and the missing-provider refusal's.
    const store = new MemoryStore();
    const result = await new Engine(claimWorkflow(), store, {}).run({ amount: 50 });
    assert.equal(result.status, "failed");
    assert.equal(result.error?.code, "MODEL_CALL_FAILED");
    assert.match(result.error?.message ?? "", /agent step "propose" has no model provider configured$/);
    assert.deepEqual(
      store.listAgentCalls(result.runId).map((c) => [c.provider, c.mode]),
      [["none", "live"]],
      "the attempt is kept and says no provider answered",
    );
  });
});

describe("agent step: replay", () => {
  /** A finished run and the agent call it recorded. */
  async function recordedRun(amount = 50, answer: Record<string, Json> = good) {
    const store = new MemoryStore();
    const result = await new Engine(claimWorkflow(), store, { provider: scripted(answer) }).run({ amount });
    const call = store.listAgentCalls(result.runId)[0]!;
    return { store, result, call, before: `${result.runId}:${call.superstep - 1}` };
  }

  function replayOf(call: AgentCallRecord, mode: AgentReplay["mode"], messages?: ChatMessage[]): AgentReplay {
    return { executor: call.executor, mode, recorded: call, ...(messages ? { messages } : {}) };
  }

  it("recorded: reuses the recorded answer when the context hash matches, without calling the model", async () => {
    const { store, result, call, before } = await recordedRun();
    const branch = await new Engine(claimWorkflow(), store, { provider: unreachable(), replay: replayOf(call, "recorded") }).resume(
      before,
      { branch: true },
    );
    assert.equal(branch.status, "completed");
    assert.notEqual(branch.runId, result.runId);
    const again = store.listAgentCalls(branch.runId)[0]!;
    assert.deepEqual([again.mode, again.hash, again.raw, again.provider], ["recorded", call.hash, call.raw, "scripted"]);
    assert.equal(store.listVerdicts(branch.runId)[0]!.verdict, "accepted");
  });

  it("recorded: a recorded call without an answer is MODEL_RESPONSE_MISSING, naming the step", async () => {
    const { store, call, before } = await recordedRun();
    const { raw: _raw, ...unanswered } = call;
    const branch = await new Engine(claimWorkflow(), store, {
      provider: unreachable(),
      replay: replayOf(unanswered as AgentCallRecord, "recorded"),
    }).resume(before, { branch: true });
    assert.equal(branch.status, "failed");
    assert.equal(branch.error?.code, "MODEL_RESPONSE_MISSING");
    assert.match(branch.error?.message ?? "", /no recorded response to replay for step "propose"$/);
  });

  it("recorded: a changed context is reported with both hashes and what differs", async () => {
    const { store, call, before } = await recordedRun();
    const edited = claimWorkflow({ wording: "Decide whether to pay or refuse the claim." });
    const branch = await new Engine(edited, store, { provider: unreachable(), replay: replayOf(call, "recorded") }).resume(before, {
      branch: true,
    });
    assert.equal(branch.status, "failed");
    assert.equal(branch.error?.code, "WORKFLOW_MISMATCH");
    const attempt = store.listAgentCalls(branch.runId)[0]!;
    assert.notEqual(attempt.hash, call.hash);
    assert.ok(
      branch.error!.message.includes(`made for context ${call.hash}, but the context is now ${attempt.hash}`),
      branch.error!.message,
    );
    assert.ok(
      branch.error!.message.endsWith(
        'message 0 (system) differs from character 22: was "the claim. Answer JSON {action, reason, ", now "or refuse the claim. Answer JSON {action"',
      ),
      branch.error!.message,
    );
  });

  it("live: calls the model again and commits its new answer in the branch", async () => {
    const { store, result, call, before } = await recordedRun(50);
    const refuse = { action: "refuse", reason: "Duplicate of an earlier claim.", facts: ["claim"] };
    const branch = await new Engine(claimWorkflow(), store, { provider: scripted(refuse), replay: replayOf(call, "live") }).resume(before, {
      branch: true,
    });
    const again = store.listAgentCalls(branch.runId)[0]!;
    assert.equal(again.mode, "live");
    assert.equal(again.hash, call.hash, "same state, same context");
    assert.deepEqual(again.proposal, refuse);
    assert.equal((store.listVerdicts(branch.runId)[0]!.proposal as { action: string }).action, "refuse");
    assert.equal((store.listVerdicts(result.runId)[0]!.proposal as { action: string }).action, "pay", "the parent's verdict is unchanged");
  });

  it("edited: runs with the developer's messages, marked edited with the original hash; the original stays in the parent run", async () => {
    const { store, result, call, before } = await recordedRun(50);
    const parentBefore = JSON.stringify([store.getRun(result.runId), store.listAgentCalls(result.runId), store.listVerdicts(result.runId)]);
    const messages: ChatMessage[] = [
      { role: "system", content: "Refuse every claim from customer C-1. Answer JSON {action, reason, facts}." },
      call.request.messages[1]!,
    ];
    const refuse = { action: "refuse", reason: "Customer C-1 is blocked.", facts: ["claim"] };
    const branch = await new Engine(claimWorkflow(), store, {
      provider: scripted(refuse),
      replay: replayOf(call, "edited", messages),
    }).resume(before, {
      branch: true,
    });
    assert.equal(branch.status, "completed");
    const edited = store.listAgentCalls(branch.runId)[0]!;
    assert.equal(edited.mode, "edited");
    assert.equal(edited.originalHash, call.hash);
    assert.notEqual(edited.hash, call.hash);
    assert.deepEqual(edited.request.messages, messages);
    assert.deepEqual(edited.proposal, refuse);
    assert.equal(store.getRun(branch.runId)!.parentRunId, result.runId);
    assert.equal(
      JSON.stringify([store.getRun(result.runId), store.listAgentCalls(result.runId), store.listVerdicts(result.runId)]),
      parentBefore,
      "the parent run, its original call and verdict are untouched",
    );
  });

  it("branch: true branches even from the latest checkpoint of an unfinished run, which would otherwise continue", async () => {
    const store = new MemoryStore();
    // Stopped after the loader's superstep: the latest checkpoint is the one before the agent step.
    const control = new RunControl();
    const stopped = await new Engine(claimWorkflow(), store, {
      provider: unreachable(),
      control,
      onEvent: (e) => e.type === "checkpoint" && control.stop(),
    }).run({ amount: 50 });
    assert.equal(stopped.status, "stopped");
    const latest = store.latestCheckpoint(stopped.runId)!.id;
    const branched = await new Engine(claimWorkflow(), store, { provider: scripted(good) }).resume(latest, { branch: true });
    assert.notEqual(branched.runId, stopped.runId);
    assert.equal(branched.status, "completed");
    assert.equal(store.getRun(branched.runId)!.parentCheckpointId, latest);
    assert.equal(store.getRun(stopped.runId)!.status, "stopped", "the parent stays as it was");
    assert.deepEqual(store.listAgentCalls(stopped.runId), []);
    const continued = await new Engine(claimWorkflow(), store, { provider: scripted(good) }).resume(latest);
    assert.equal(continued.runId, stopped.runId, "without the flag the same run continues");
  });

  it("applies only to the replayed step: later calls of the same agent in a loop run normally", async () => {
    // The agent reviews three items in turn; its context (the item number) changes every time.
    const loop = defineWorkflow({
      name: "loop",
      version: 1,
      state: { n: z.number() },
      start: "next",
      executors: {
        next: code({ owns: ["n"], reads: ["n"], run: (ctx) => (ctx.write("n", (ctx.state.n ?? 0) + 1), "go") }),
        propose: agent({
          reads: ["n"],
          proposal: Proposal,
          model: { model: "gpt-4o-mini" },
          context: (s) => [{ role: "user", content: `Item ${s.n}: pay or refuse?` }],
        }),
        decide: commit({ rules: {}, apply: () => "done" }),
      },
      edges: [edge("next", "propose"), edge("propose", "decide"), edge("decide", "next", { when: (_m, s) => (s.n as number) < 3 })],
    });
    const store = new MemoryStore();
    const first = await new Engine(loop, store, { provider: scripted(good, good, good) }).run();
    const calls = store.listAgentCalls(first.runId);
    assert.equal(calls.length, 3);
    const before = `${first.runId}:${calls[0]!.superstep - 1}`;
    const branch = await new Engine(loop, store, { provider: scripted(good, good, good), replay: replayOf(calls[0]!, "recorded") }).resume(
      before,
      {
        branch: true,
      },
    );
    assert.equal(branch.status, "completed", branch.error?.message);
    assert.deepEqual(
      store.listAgentCalls(branch.runId).map((c) => c.mode),
      ["recorded", "scripted", "scripted"],
    );
  });

  it("applies only to the replayed step: another agent in the same superstep asks its model", async () => {
    // Kills the mutant that gives the replay to every agent of the superstep (agentStep.ts, `replay`).
    const twin = (name: string) =>
      agent({ proposal: Proposal, model: { model: "gpt-4o-mini" }, context: () => [{ role: "user", content: `${name}: pay or refuse?` }] });
    const fan = defineWorkflow({
      name: "fan",
      version: 1,
      state: {},
      start: "start",
      executors: {
        start: code({ run: () => "go" }),
        left: twin("left"),
        right: twin("right"),
        decideLeft: commit({ rules: {}, apply: () => undefined }),
        decideRight: commit({ rules: {}, apply: () => undefined }),
      },
      edges: [edge("start", "left"), edge("start", "right"), edge("left", "decideLeft"), edge("right", "decideRight")],
    });
    const both = (): ScriptedProvider => {
      const file = path.join(dir, `fixture-${++fixtures}.json`);
      writeFileSync(file, JSON.stringify({ responses: ["left", "right"].map((step) => ({ step, response: good })) }));
      return new ScriptedProvider(file);
    };
    const store = new MemoryStore();
    const first = await new Engine(fan, store, { provider: both() }).run();
    assert.equal(first.status, "completed", first.error?.message);
    const left = store.listAgentCalls(first.runId).find((c) => c.executor === "left")!;
    const branch = await new Engine(fan, store, { provider: both(), replay: replayOf(left, "recorded") }).resume(
      `${first.runId}:${left.superstep - 1}`,
      { branch: true },
    );
    assert.equal(branch.status, "completed", branch.error?.message);
    assert.deepEqual(
      store
        .listAgentCalls(branch.runId)
        .map((c) => [c.executor, c.mode])
        .sort(),
      [
        ["left", "recorded"],
        ["right", "scripted"],
      ],
    );
  });

  it("a branch continues its run's call count: a fixture keyed by call index answers it as it answered the run", async () => {
    // Three items; the fixture pays the first two and refuses the third, by call index.
    const pay = { action: "pay", reason: "The item is covered.", facts: [] };
    const refuse = { action: "refuse", reason: "The third item is not covered.", facts: [] };
    const loop = defineWorkflow({
      name: "loop",
      version: 1,
      state: { n: z.number(), paid: z.array(z.number()) },
      start: "next",
      executors: {
        next: code({ owns: ["n"], reads: ["n"], run: (ctx) => (ctx.write("n", (ctx.state.n ?? 0) + 1), "go") }),
        propose: agent({
          reads: ["n"],
          proposal: Proposal,
          model: { model: "gpt-4o-mini" },
          context: (s) => [{ role: "user", content: `Item ${s.n}: pay or refuse?` }],
        }),
        decide: commit({
          reads: ["n", "paid"],
          owns: ["paid"],
          rules: {},
          apply: (o, ctx) => {
            if (o.proposal?.action === "pay") ctx.write("paid", [...((o.state.paid as number[]) ?? []), o.state.n as number]);
            return "done";
          },
        }),
      },
      edges: [edge("next", "propose"), edge("propose", "decide"), edge("decide", "next", { when: (_m, s) => (s.n as number) < 3 })],
    });
    const store = new MemoryStore();
    const fixture = scripted(pay, pay, refuse);
    const first = await new Engine(loop, store, { provider: fixture }).run();
    const calls = store.listAgentCalls(first.runId);
    assert.deepEqual(
      calls.map((c) => (c.proposal as { action: string }).action),
      ["pay", "pay", "refuse"],
    );
    // Forked after the first item's decision: the branch's first call is the run's second.
    const afterFirst = store.listVerdicts(first.runId)[0]!.superstep;
    const branch = await new Engine(loop, store, { provider: fixture }).resume(`${first.runId}:${afterFirst}`, { branch: true });
    assert.equal(branch.status, "completed", branch.error?.message);
    assert.deepEqual(
      store.listAgentCalls(branch.runId).map((c) => (c.proposal as { action: string }).action),
      ["pay", "refuse"],
    );
    // Forked at the checkpoint of the first call's own superstep: that call is in it, so counts
    // (kills lineage.ts's `c.superstep <= upTo` as `<`).
    const atFirstCall = await new Engine(loop, store, { provider: fixture }).resume(`${first.runId}:${calls[0]!.superstep}`, {
      branch: true,
    });
    assert.deepEqual(
      store.listAgentCalls(atFirstCall.runId).map((c) => (c.proposal as { action: string }).action),
      ["pay", "refuse"],
    );
    // And a branch of the branch, forked after its first call, goes on counting from there.
    const branchCalls = store.listAgentCalls(branch.runId);
    const twice = await new Engine(loop, store, { provider: fixture }).resume(`${branch.runId}:${branchCalls[0]!.superstep + 1}`, {
      branch: true,
    });
    assert.deepEqual(
      store.listAgentCalls(twice.runId).map((c) => (c.proposal as { action: string }).action),
      ["refuse"],
    );
  });
});

// Kills the mutant "every state key is citable" (agentStep.ts checkProposal, `known` without its
// fact/extract filter): the table above only cites a name that is no key at all.
describe("agent step: only facts of record are citable", () => {
  it("rejects a proposal citing a workflow-state key (not a fact) as UNKNOWN_FACT, naming it and the facts it was given", () => {
    const state = {
      claim: { value: { id: "C-1", amount: 50 }, provenance: { source: "crm://claims/C-1", sourceVersion: '"v3"', readAt: "t" } },
      decision: { action: "pay", verdict: "accepted", reason: "an earlier decision, written by code" },
    } as unknown as Record<string, Json>;
    assert.deepEqual(checkProposal({ proposal: Proposal }, JSON.stringify({ ...good, facts: ["claim", "decision"] }), state), {
      rejection: { code: "UNKNOWN_FACT", message: 'proposal cites "decision", not among the facts it was given (claim)' },
    });
    assert.deepEqual(
      checkProposal({ proposal: Proposal }, JSON.stringify({ ...good, facts: ["claim.amount"] }), state),
      { proposal: { ...good, facts: ["claim.amount"] } },
      "a fact's field is citable by its dotted name",
    );
  });
});

// Kills describeContextChange's message mutants: a replay's hash mismatch says how the context differs.
describe("agent step: how a context changed, for a replay's hash mismatch", () => {
  const sys = { role: "system" as const, content: "Decide whether to pay." };
  const user = (content: string) => ({ role: "user" as const, content });

  it("names a changed message count, the first differing message and character, or that only the rest changed", () => {
    assert.equal(describeContextChange([sys], [sys, user("x")]), "message count changed from 1 to 2");
    assert.equal(
      describeContextChange([sys, user("Claim 50 EUR")], [sys, user("Claim 500 EUR")]),
      'message 1 (user) differs from character 8: was " EUR", now "0 EUR"',
    );
    assert.equal(describeContextChange([sys], [sys]), "messages are equal; model, parameters or response schema changed");
  });
});
