import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { openCaseFile } from "../../../src/casefile/index";
import { main } from "../../../src/cli/main";
import { judge } from "../../../src/engine/commitStep";
import { commitStepAfter, evalSourceOf } from "../../../src/engine/evalSource";
import { CasefileError } from "../../../src/engine/errors";
import type { RuleFn } from "../../../src/engine/executors";
import type { Json, RuleInForce } from "../../../src/engine/records";
import { loadWorkflow } from "../../../src/runner/bundle";

/**
 * `judge` is the commit step's decision without its effects: the rule results, the verdict and
 * its reason, and which business rules the rules read. The commit step and `casefile eval` both
 * call it, so what it returns here is the verdict a run records and the one eval compares.
 */

const book: RuleInForce[] = [
  {
    id: "r-cartons",
    statement: "40 cartons per pallet",
    value: { cartonsPerPallet: 40 },
    proposedBy: "reviewer",
    confirmedBy: "maria",
    confirmedAt: "2025-01-02T09:00:00.000Z",
  },
  {
    id: "r-cutoff",
    statement: "orders after 15:00 ship tomorrow",
    value: "15:00",
    proposedBy: "reviewer",
    confirmedBy: "maria",
    confirmedAt: "2025-01-02T09:00:00.000Z",
  },
];

const proposal = { action: "ship", pallets: 3, cartons: 120 };
const state = { order: { id: "o-1", cartons: 120 } };

describe("judge: the commit rules' decision, computed and not applied", () => {
  const rules: Record<string, RuleFn> = {
    positive: ({ proposal: p }) => (p.pallets as number) > 0,
    fitsPallets: ({ proposal: p, businessRules }) => {
      const per = (businessRules.find((r) => r.id === "r-cartons")!.value as { cartonsPerPallet: number }).cartonsPerPallet;
      const ok = (p.pallets as number) * per >= (p.cartons as number);
      return { ok, message: ok ? "fits" : `${p.cartons as number} cartons do not fit ${p.pallets as number} pallets`, onFail: "reject" };
    },
  };

  it("gives the same results, verdict and reason for the same input, and changes neither input", () => {
    const before = structuredClone({ proposal, state, book });
    const a = judge(rules, proposal, state, { businessRules: book, executor: "commit" });
    const b = judge(rules, proposal, state, { businessRules: book, executor: "commit" });
    assert.deepEqual(a, b);
    assert.deepEqual(a, {
      results: [
        { name: "positive", ok: true, message: "pass" },
        { name: "fitsPallets", ok: true, message: "fits", businessRules: ["r-cartons"] },
      ],
      verdict: "accepted",
      reason: "every rule passed",
      businessRulesRead: ["r-cartons"],
    });
    assert.deepEqual({ proposal, state, book }, before);
  });

  it("records which business rules were read: reading statement or value counts, finding by id does not", () => {
    const j = judge(
      {
        looksUp: ({ businessRules }) => businessRules.some((r) => r.id === "r-cutoff"),
        readsStatement: ({ businessRules }) => businessRules[1]!.statement.length > 0,
      },
      proposal,
      state,
      { businessRules: book },
    );
    assert.deepEqual(
      j.results.map((r) => [r.name, r.businessRules]),
      [
        ["looksUp", undefined],
        ["readsStatement", ["r-cutoff"]],
      ],
    );
    assert.deepEqual(j.businessRulesRead, ["r-cutoff"]);
  });

  it("gives the rules frozen copies: a rule that tries to change the book fails, and the book is unchanged", () => {
    const before = structuredClone(book);
    const edits: RuleFn = ({ businessRules }) => {
      (businessRules[0] as { value: unknown }).value = { cartonsPerPallet: 1 };
      return true;
    };
    assert.throws(
      () => judge({ edits }, proposal, state, { businessRules: book, executor: "commit" }),
      (e: unknown) => e instanceof CasefileError && e.code === "RULE_FAILED" && e.message.startsWith(`rule "edits" threw: `),
    );
    assert.deepEqual(book, before);
  });

  // Kills deepFreeze's mutants in commitStep.ts (its condition, freeze and recursion): a nested
  // value of a business rule is frozen too, not only the rule object.
  it("a rule that changes a nested value of a business rule fails, and the book is unchanged", () => {
    const before = structuredClone(book);
    const nested: RuleFn = ({ businessRules }) => {
      (businessRules[0]!.value as { cartonsPerPallet: number }).cartonsPerPallet = 1;
      return true;
    };
    assert.throws(
      () => judge({ nested }, proposal, state, { businessRules: book, executor: "commit" }),
      (e: unknown) =>
        e instanceof CasefileError &&
        e.code === "RULE_FAILED" &&
        /^rule "nested" threw: Cannot assign to read only property 'cartonsPerPallet'/.test(e.message),
    );
    assert.deepEqual(book, before, "the book changed");
  });

  // Kills `businessRulesRead: []` on a failed verdict: the rules read count when a rule fails too.
  it("records the business rules read when the verdict is not accepted", () => {
    const j = judge(
      { fits: ({ businessRules }) => ({ ok: businessRules[0]!.statement === "never", message: "does not fit", onFail: "reject" }) },
      proposal,
      state,
      { businessRules: book },
    );
    assert.equal(j.verdict, "rejected");
    assert.deepEqual(j.businessRulesRead, ["r-cartons"], "the rule read r-cartons's statement");
  });

  // Kills the mutant "a rule that throws counted as passed" (commitStep.ts judge).
  it("a rule that throws is a RULE_FAILED error naming the rule and the step, not a failed rule", () => {
    const throwing: Record<string, RuleFn> = {
      positive: () => true,
      broken: () => {
        throw new TypeError("cannot read properties of undefined (reading 'pallets')");
      },
      never: () => assert.fail("a rule after the one that threw ran"),
    };
    assert.throws(
      () => judge(throwing, proposal, state, { executor: "commit" }),
      (e: unknown) =>
        e instanceof CasefileError &&
        e.code === "RULE_FAILED" &&
        e.message === `rule "broken" threw: cannot read properties of undefined (reading 'pallets')` &&
        (e.details as { executor?: string; rule?: string }).executor === "commit" &&
        (e.details as { rule?: string }).rule === "broken",
    );
  });

  // Kills commitStep.ts isRuleReturn's mutants (recorded lines 200, 203-205: the object test, ok
  // and message both required, onFail one of two words) and the details of its RULE_FAILED (line
  // 71 ObjectLiteral): an answer that is almost `{ ok, message, onFail? }` is a bug in the rule,
  // never a verdict; --json shows the step and the rule in the error's details.
  it("a rule returning what is not true, false or { ok, message, onFail? } is a RULE_FAILED error naming the rule and the step", () => {
    const okAndMessageOnAFunction = Object.assign(() => false, { ok: false, message: "a function that looks like an answer" });
    for (const [returned, shown] of [
      [null, "null"],
      [{ ok: true }, '{"ok":true}'],
      [{ ok: "yes", message: "fits" }, '{"ok":"yes","message":"fits"}'],
      [{ message: "fits" }, '{"message":"fits"}'],
      [{ ok: false, message: 7 }, '{"ok":false,"message":7}'],
      [{ ok: false, message: "too many", onFail: "ignore" }, '{"ok":false,"message":"too many","onFail":"ignore"}'],
      [okAndMessageOnAFunction, "a function"],
    ] as const) {
      assert.throws(
        () => judge({ positive: () => true, odd: () => returned as never }, proposal, state, { executor: "commit" }),
        (e: unknown) => {
          assert.ok(e instanceof CasefileError, `${shown}: a typed error, not ${String(e)}`);
          assert.equal(e.code, "RULE_FAILED", shown);
          assert.equal(
            e.message,
            `rule "odd" returned ${shown}: a rule returns true, false or { ok: boolean, message: string, onFail?: "reject" | "escalate" }`,
          );
          assert.deepEqual(e.details, { executor: "commit", rule: "odd" }, `${shown}: the details name the step and the rule`);
          return true;
        },
        `a rule returning ${shown} judged the proposal`,
      );
    }
    // The answers it takes, for contrast: each judges.
    assert.equal(judge({ r: () => ({ ok: false, message: "no", onFail: "reject" }) }, proposal, state).verdict, "rejected");
    assert.equal(judge({ r: () => ({ ok: false, message: "no", onFail: "escalate" }) }, proposal, state).verdict, "escalated");
    assert.equal(judge({ r: () => ({ ok: true, message: "fine" }) }, proposal, state).verdict, "accepted");
  });

  // Kills the mutant "reject and escalate in the other precedence" (commitStep.ts judge).
  it("escalates when any failing rule escalates, rejects when every failing rule says reject", () => {
    const fail =
      (onFail?: "reject" | "escalate"): RuleFn =>
      () => ({ ok: false, message: `fails (${onFail ?? "default"})`, ...(onFail ? { onFail } : {}) });
    const rejectOnly = judge({ a: fail("reject"), b: () => true, c: fail("reject") }, proposal, state);
    assert.equal(rejectOnly.verdict, "rejected");
    assert.equal(rejectOnly.reason, "a: fails (reject); c: fails (reject)");

    const mixed = judge({ a: fail("reject"), b: fail("escalate") }, proposal, state);
    assert.equal(mixed.verdict, "escalated");
    assert.equal(mixed.reason, "a: fails (reject); b: fails (escalate)");

    // A plain `false` and a failure without onFail escalate.
    assert.equal(judge({ a: fail("reject"), b: () => false }, proposal, state).verdict, "escalated");
    assert.equal(judge({ a: fail("reject"), b: fail() }, proposal, state).verdict, "escalated");
    assert.equal(judge({ b: () => false }, proposal, state).reason, "b: fail");
  });

  it("escalates no proposal with the agent step's reason, running no rule", () => {
    const none: Record<string, RuleFn> = { never: () => assert.fail("a rule ran without a proposal") };
    assert.deepEqual(judge(none, undefined, state, { rejection: { code: "BAD_JSON", message: "model answer is not valid JSON" } }), {
      results: [],
      verdict: "escalated",
      reason: "proposal rejected (BAD_JSON): model answer is not valid JSON",
      businessRulesRead: [],
    });
    assert.equal(judge(none, undefined, state).reason, "no proposal was received");
  });

  it("hands the rules the proposal, the state and the message as given", () => {
    const seen: unknown[] = [];
    const message = { agentCallId: "call-1", proposal };
    judge(
      {
        sees: (input) => {
          seen.push({ proposal: input.proposal, state: input.state, message: input.message, rules: input.businessRules.length });
          return true;
        },
      },
      proposal,
      state,
      { message, businessRules: book },
    );
    assert.deepEqual(seen, [{ proposal, state, message, rules: 2 }]);
  });
});

describe("judge gives the verdict a run records", function () {
  this.timeout(60_000);
  let dir: string;
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("the commit step's recorded rule results, verdict, reason and business rules read are judge's on what the step saw", async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "casefile-judge-"));
    const env = { USER: "tester", CASEFILE_RULES: path.join(dir, "book.casefile") };
    const out: string[] = [];
    const cli = async (args: string[]) => {
      const err: string[] = [];
      const code = await main(args, { out: (l) => out.push(l), err: (l) => err.push(l), env });
      assert.equal(code, 0, `casefile ${args.join(" ")}: ${err.join("\n")}`);
    };
    const workflowFile = path.resolve(__dirname, "../../fixtures/rules/pallets.ts");
    await cli([
      "rules",
      env.CASEFILE_RULES,
      "add",
      "--statement",
      "40 cartons per pallet",
      "--value",
      '{"cartonsPerPallet":40}',
      "--by",
      "agent:review",
    ]);
    const id = /added (rule-[0-9a-f]+)/.exec(out.join("\n"))![1]!;
    await cli(["rules", env.CASEFILE_RULES, "confirm", id, "--by", "maria"]);
    const caseFile = path.join(dir, "case.casefile");
    await cli(["run", workflowFile, "--case-file", caseFile]);

    const store = await openCaseFile(caseFile, { readOnly: true });
    try {
      const call = store.listAgentCalls()[0]!;
      const recorded = store.listVerdicts()[0]!;
      const { workflow } = await loadWorkflow(workflowFile);
      const seen = evalSourceOf(store, caseFile, call, workflow);
      const { target, spec } = commitStepAfter(workflow, call.executor, "the test");
      const proposal = recorded.proposal as Json & Record<string, Json>;
      const j = judge(spec.rules, proposal, seen.commitState!, {
        message: { agentCallId: call.id, proposal },
        businessRules: call.rulesInForce!,
        executor: target,
      });
      assert.deepEqual(j.results, recorded.rules);
      assert.equal(j.verdict, "accepted");
      assert.deepEqual([j.verdict, j.reason], [recorded.verdict, recorded.reason]);
      assert.deepEqual(j.businessRulesRead, [id]);
      assert.deepEqual(recorded.businessRules!.used, [id]);
    } finally {
      store.close();
    }
  });
});
