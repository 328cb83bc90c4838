import assert from "node:assert/strict";
import { z } from "zod";
import { MemoryStore } from "../../../src/casefile/memoryStore";
import { Engine } from "../../../src/engine/engine";
import { code, commit, edge } from "../../../src/engine/executors";
import type { Json, RuleRecord, VerdictRecord } from "../../../src/engine/records";
import { defineWorkflow } from "../../../src/engine/workflow";

/**
 * The commit step as a run records it, fed by a code step (no model), with two business rules in
 * force of which the rules read one: what the verdict says was used, what the next step is sent,
 * what commit code sees of a rule, and what is not a proposal. Each test names the mutant it kills.
 */

const NOW = "2027-01-10T09:00:00.000Z";
const rule = (id: string, value: Json): RuleRecord => ({
  id,
  statement: `rule ${id}`,
  value,
  proposedBy: "agent:review",
  confirmedBy: "maria",
  confirmedAt: NOW,
  createdAt: NOW,
  updatedAt: NOW,
});

async function decide(
  proposal: Json,
  apply: (businessRules: readonly unknown[]) => Json | void = () => undefined,
): Promise<{ verdict: VerdictRecord; sent: Json }> {
  const book = new MemoryStore();
  book.commit({ rules: [rule("r-limit", 100), rule("r-unused", 1)] });
  let sent: Json = null;
  const wf = defineWorkflow({
    name: "commit-probe",
    version: 1,
    state: { note: z.string() },
    start: "propose",
    executors: {
      propose: code({ run: () => ({ proposal }) }),
      decide: commit({
        rules: {
          withinLimit: ({ proposal: p, businessRules }) => Number(p.amount) <= Number(businessRules.find((r) => r.id === "r-limit")!.value),
        },
        apply: (outcome) => apply(outcome.businessRules),
      }),
      after: code({
        run: (ctx) => {
          sent = ctx.message;
        },
      }),
    },
    edges: [edge("propose", "decide"), edge("decide", "after")],
  });
  const store = new MemoryStore();
  const result = await new Engine(wf, store, { ruleBook: book, now: () => new Date(NOW) }).run();
  assert.equal(result.status, "completed", result.error?.message);
  const verdicts = store.listVerdicts();
  assert.equal(verdicts.length, 1, "one verdict");
  return { verdict: verdicts[0]!, sent };
}

describe("commit step: what a run records and sends on", () => {
  it("the verdict's business rules used are the ones a rule read, not every rule given", async () => {
    const { verdict } = await decide({ action: "refund", amount: 60 });
    assert.equal(verdict.verdict, "accepted");
    assert.deepEqual(
      verdict.businessRules?.given.map((r) => r.id),
      ["r-limit", "r-unused"],
    );
    assert.deepEqual(verdict.businessRules?.used, ["r-limit"], "r-unused was given, never read");
  });

  it("an apply that returns nothing sends the verdict, its reason and the proposal's action on", async () => {
    const { sent } = await decide({ action: "refund", amount: 160 });
    assert.deepEqual(sent, { verdict: "escalated", reason: "withinLimit: fail", action: "refund" });
  });

  it("commit code sees each business rule whole: spread or serialised, its fields are there", async () => {
    let json = "";
    await decide({ action: "refund", amount: 60 }, (businessRules) => {
      json = JSON.stringify(businessRules);
    });
    const rules = JSON.parse(json) as { id: string; statement: string; value: Json }[];
    assert.deepEqual(
      rules.map((r) => [r.id, r.statement, r.value]),
      [
        ["r-limit", "rule r-limit", 100],
        ["r-unused", "rule r-unused", 1],
      ],
    );
  });

  for (const [what, notAProposal] of [
    ["a list", ["refund", 60]],
    ["a string", "refund 60"],
    ["null", null],
  ] as const) {
    it(`a proposal that is ${what}, not an object, is no proposal: escalated without running a rule`, async () => {
      const { verdict, sent } = await decide(notAProposal as Json);
      assert.equal(verdict.verdict, "escalated");
      assert.equal(verdict.reason, "no proposal was received");
      assert.deepEqual(verdict.rules, [], "no rule judged it");
      assert.equal(verdict.proposal, undefined);
      assert.deepEqual(sent, { verdict: "escalated", reason: "no proposal was received", action: null });
    });
  }
});
