import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { z } from "zod";
import { openCaseFile } from "../../../src/casefile/index";
import { Engine } from "../../../src/engine/engine";
import { agent, code, commit, edge } from "../../../src/engine/executors";
import { ScriptedProvider } from "../../../src/engine/providers/scripted";
import type { Json, RuleRecord, VerdictRecord } from "../../../src/engine/records";
import { defineWorkflow, type Workflow } from "../../../src/engine/workflow";

/**
 * Which business rules a verdict says were used, and by whom, and which rules a commit step
 * judges with, as the case file on disk records them (reopened): `apply` reading a rule counts as
 * using it and is listed apart; a proposal judged after an agent call is judged with the rules
 * that call was given. Each names the slip in commitStep.ts it catches.
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

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), "s18e-commit-"));
  sentTo.value = null;
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const limitRule = {
  withinLimit: ({ proposal, businessRules }: { proposal: Record<string, Json>; businessRules: readonly { id: string; value: Json }[] }) =>
    Number(proposal.amount) <= Number(businessRules.find((r) => r.id === "r-limit")!.value),
};

/** Runs `wf` with a book holding r-limit (100) and r-memo on a case file on disk; its verdict and agent call's rules, reopened. */
async function run(wf: Workflow, provider?: ScriptedProvider): Promise<{ verdict: VerdictRecord; callRules?: unknown }> {
  const book = await openCaseFile(path.join(dir, "rules.casefile"));
  book.commit({ rules: [rule("r-limit", 100), rule("r-memo", "refund within 30 days")] });
  const file = path.join(dir, "case.casefile");
  const store = await openCaseFile(file);
  try {
    const result = await new Engine(wf, store, { ruleBook: book, now: () => new Date(NOW), ...(provider ? { provider } : {}) }).run();
    assert.equal(result.status, "completed", result.error?.message);
  } finally {
    store.close();
    book.close();
  }
  const again = await openCaseFile(file, { readOnly: true });
  try {
    const [verdict] = again.listVerdicts();
    return { verdict: verdict!, callRules: again.listAgentCalls()[0]?.rulesInForce };
  } finally {
    again.close();
  }
}

/** What the step after the commit step was sent (a code step's message). */
const sentTo: { value: Json } = { value: null };

function codeWorkflow(proposal: Json, apply: (rules: readonly { id: string; value: Json }[]) => void): Workflow {
  return defineWorkflow({
    name: "commit-reads",
    version: 1,
    state: { note: z.string() },
    start: "propose",
    executors: {
      propose: code({ run: () => ({ proposal }) }),
      decide: commit({ rules: limitRule, apply: (outcome) => apply(outcome.businessRules) }),
      after: code({
        run: (ctx) => {
          sentTo.value = ctx.message;
        },
      }),
    },
    edges: [edge("propose", "decide"), edge("decide", "after")],
  });
}

describe("commit step: the business rules a verdict used, and whose rules it judged with", () => {
  it("a rule `apply` reads is used too, listed apart as read by apply, in the order the rules were given", async () => {
    const { verdict } = await run(
      codeWorkflow({ action: "refund", amount: 60 }, (rules) => {
        void rules.find((r) => r.id === "r-memo")!.value;
      }),
    );
    assert.deepEqual(verdict.businessRules?.from, "in force", "no agent call: the rules in force");
    assert.deepEqual(verdict.businessRules?.used, ["r-limit", "r-memo"], "one read by a rule, one by apply");
    assert.deepEqual(verdict.businessRules?.byApply, ["r-memo"], "only apply's read is apply's");
    assert.deepEqual(verdict.rules, [{ name: "withinLimit", ok: true, message: "pass", businessRules: ["r-limit"] }]);
  });

  it("looking a rule up by id without reading it is no use; apply reading nothing lists nothing", async () => {
    const { verdict } = await run(
      codeWorkflow({ action: "refund", amount: 60 }, (rules) => {
        void rules.map((r) => r.id);
      }),
    );
    assert.deepEqual(verdict.businessRules?.byApply, []);
    assert.deepEqual(verdict.businessRules?.used, ["r-limit"]);
  });

  it("a proposal without an action sends the verdict on with action null", async () => {
    await run(codeWorkflow({ amount: 60 }, () => undefined));
    assert.deepEqual(sentTo.value, { verdict: "accepted", reason: "every rule passed", action: null });
  });

  it("a proposal from an agent call is judged with the rules recorded with that call", async () => {
    const fixture = path.join(dir, "responses.json");
    writeFileSync(
      fixture,
      JSON.stringify({ responses: [{ step: "propose", response: { action: "refund", amount: 60, reason: "r", facts: [] } }] }),
    );
    const wf = defineWorkflow({
      name: "commit-reads-agent",
      version: 1,
      state: { note: z.string() },
      start: "propose",
      executors: {
        propose: agent({
          proposal: z.object({ action: z.enum(["refund"]), amount: z.number(), reason: z.string(), facts: z.array(z.string()) }),
          model: { model: "gpt-4o-mini" },
          context: (_s, _m, rules) => [{ role: "user", content: `Rules: ${rules.map((r) => r.id).join(", ")}` }],
        }),
        decide: commit({ rules: limitRule, apply: () => undefined }),
      },
      edges: [edge("propose", "decide")],
    });
    const { verdict, callRules } = await run(wf, new ScriptedProvider(fixture));
    assert.equal(verdict.businessRules?.from, "agent call");
    assert.deepEqual(verdict.businessRules?.given, callRules, "the very rules the call's context was built with");
    assert.deepEqual(
      verdict.businessRules?.given.map((r) => r.id),
      ["r-limit", "r-memo"],
    );
  });
});
