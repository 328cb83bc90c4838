import assert from "node:assert/strict";
import path from "node:path";
import { z } from "zod";
import { MemoryStore } from "../../../src/casefile/index";
import { Engine } from "../../../src/engine/engine";
import { agent } from "../../../src/engine/executors";
import { ScriptedProvider } from "../../../src/engine/providers/scripted";
import type { RuleRecord } from "../../../src/engine/records";
import { addRule, confirmRule, deleteRule, editRule, ruleHistory, rulesInForce, ruleState } from "../../../src/engine/rules";
import { defineWorkflow } from "../../../src/engine/workflow";

const fixtures = path.resolve(__dirname, "../../fixtures/rules");
const T0 = "2027-01-10T09:00:00.000Z";
const at = (minutes: number): string => new Date(Date.parse(T0) + minutes * 60_000).toISOString();

describe("business rules: lifecycle", () => {
  it("a rule enters contexts only once confirmed, leaves on a meaning change, expiry or deletion, and every step is audited", () => {
    const book = new MemoryStore();
    const rule = addRule(
      book,
      {
        statement: "Supplier 3 invoices per pallet; its POs count cartons",
        value: { supplier: "Supplier 3 GmbH", cartonsPerPallet: 40 },
        sourceCase: "run-1234",
        proposedBy: "agent:review",
        expiresAt: at(600),
      },
      at(0),
    );
    assert.equal(ruleState(rule, at(1)), "proposed");
    assert.deepEqual(rulesInForce(book.listRules(), at(1)), [], "an unconfirmed rule enters no context");

    confirmRule(book, rule.id, "maria", at(2));
    assert.deepEqual(
      rulesInForce(book.listRules(), at(3)).map((r) => [r.id, r.confirmedBy, r.confirmedAt, r.sourceCase]),
      [[rule.id, "maria", at(2), "run-1234"]],
    );

    const edited = editRule(book, rule.id, { value: { supplier: "Supplier 3 GmbH", cartonsPerPallet: 48 } }, "li", at(4));
    assert.equal(edited.confirmedBy, undefined, "a changed value must be confirmed again");
    assert.deepEqual(rulesInForce(book.listRules(), at(5)), []);

    confirmRule(book, rule.id, "maria", at(6));
    const extended = editRule(book, rule.id, { expiresAt: at(900) }, "maria", at(7));
    assert.equal(extended.confirmedBy, "maria", "a new expiry alone keeps the confirmation");
    assert.equal(rulesInForce(book.listRules(), at(800)).length, 1, "in force until the new expiry");
    assert.equal(ruleState(book.listRules()[0]!, at(900)), "expired");
    assert.deepEqual(rulesInForce(book.listRules(), at(901)), [], "an expired rule enters no context");

    deleteRule(book, rule.id, "li", at(8));
    assert.deepEqual(book.listRules(), [], "a deleted rule is not listed");
    assert.equal(book.listRules(true)[0]!.deleted, true, "but it stays in the book");
    assert.deepEqual(rulesInForce(book.listRules(true), at(9)), []);

    const history = ruleHistory(book, rule.id).map((e) => {
      const d = e.data as unknown as { op: string; by: string; before: RuleRecord | null; after: RuleRecord };
      return [d.op, d.by, e.at];
    });
    assert.deepEqual(history, [
      ["added", "agent:review", at(0)],
      ["confirmed", "maria", at(2)],
      ["edited", "li", at(4)],
      ["confirmed", "maria", at(6)],
      ["edited", "maria", at(7)],
      ["deleted", "li", at(8)],
    ]);
    const edit = ruleHistory(book, rule.id)[2]!.data as unknown as { before: RuleRecord; after: RuleRecord };
    assert.deepEqual(
      [edit.before.value, edit.after.value],
      [
        { supplier: "Supplier 3 GmbH", cartonsPerPallet: 40 },
        { supplier: "Supplier 3 GmbH", cartonsPerPallet: 48 },
      ],
    );
  });

  it("refuses changes to unknown or deleted rules, naming the rule", () => {
    const book = new MemoryStore();
    const r = addRule(book, { statement: "s", value: null, proposedBy: "p" }, at(0));
    assert.throws(
      () => confirmRule(book, "rule-nope", "maria"),
      (e: Error & { code?: string }) => e.code === "UNKNOWN_RULE" && /no rule "rule-nope" in this rule book; rules: rule-/.test(e.message),
    );
    deleteRule(book, r.id, "maria", at(1));
    assert.throws(
      () => editRule(book, r.id, { statement: "t" }, "maria"),
      (e: Error & { code?: string }) => e.code === "UNKNOWN_RULE" && e.message.includes(`rule "${r.id}" was deleted`),
    );
    assert.throws(
      () => addRule(book, { statement: "s", value: null, proposedBy: "p", expiresAt: "next tuesday" }),
      /"next tuesday" is not an ISO 8601 date/,
    );
  });
});

describe("business rules: filtered into agent contexts", () => {
  function advisorWorkflow() {
    return defineWorkflow({
      name: "rule-advisor",
      version: 1,
      state: { note: z.string() },
      start: "advise",
      executors: {
        advise: agent({
          proposal: z.object({ action: z.enum(["ok"]), reason: z.string(), facts: z.array(z.string()) }),
          model: { model: "gpt-4o-mini" },
          context: (_s, _m, rules) => [
            { role: "system", content: "Rules in force:\n" + rules.map((r) => `- [${r.id}] ${r.statement}`).join("\n") },
            { role: "user", content: "Advise." },
          ],
        }),
      },
      edges: [],
    });
  }

  /** A book with one rule in each state, as of T0 + 10 minutes. */
  function bookOfFour(): { book: MemoryStore; ids: Record<string, string> } {
    const book = new MemoryStore();
    const proposed = addRule(book, { statement: "proposed only", value: 1, proposedBy: "agent" }, at(0));
    const confirmed = addRule(book, { statement: "confirmed", value: 2, proposedBy: "agent" }, at(0));
    confirmRule(book, confirmed.id, "maria", at(1));
    const expired = addRule(book, { statement: "expired", value: 3, proposedBy: "agent", expiresAt: at(5) }, at(0));
    confirmRule(book, expired.id, "maria", at(1));
    const deleted = addRule(book, { statement: "deleted", value: 4, proposedBy: "agent" }, at(0));
    confirmRule(book, deleted.id, "maria", at(1));
    deleteRule(book, deleted.id, "maria", at(2));
    return { book, ids: { proposed: proposed.id, confirmed: confirmed.id, expired: expired.id, deleted: deleted.id } };
  }

  it("gives the agent's context only the confirmed, unexpired, undeleted rules of the rule book, recorded with the call", async () => {
    const { book, ids } = bookOfFour();
    const store = new MemoryStore();
    const provider = new ScriptedProvider(path.join(fixtures, "advisor.responses.json"));
    const result = await new Engine(advisorWorkflow(), store, { provider, ruleBook: book, now: () => new Date(at(10)) }).run();
    assert.equal(result.status, "completed");
    const call = store.listAgentCalls(result.runId)[0]!;
    assert.equal(call.request.messages[0]!.content, `Rules in force:\n- [${ids.confirmed}] confirmed`);
    assert.deepEqual(
      call.rulesInForce,
      [{ id: ids.confirmed, statement: "confirmed", value: 2, proposedBy: "agent", confirmedBy: "maria", confirmedAt: at(1) }],
      "the call records the rules it was given, whole",
    );
    assert.deepEqual(call.rulesFrom, { from: "in force" });
  });

  it("reads the case file's own rules when no rule book is given, at the run's clock", async () => {
    const { book } = bookOfFour();
    const store = new MemoryStore();
    store.commit({ rules: book.listRules(true) });
    const provider = new ScriptedProvider(path.join(fixtures, "advisor.responses.json"));
    // At T0 + 3 minutes the rule that expires at T0 + 5 is still in force.
    const result = await new Engine(advisorWorkflow(), store, { provider, now: () => new Date(at(3)) }).run();
    const system = store.listAgentCalls(result.runId)[0]!.request.messages[0]!.content;
    assert.deepEqual(
      system
        .split("\n")
        .slice(1)
        .map((l) => l.replace(/^- \[rule-[0-9a-f]+\] /, "")),
      ["confirmed", "expired"],
    );
  });
});
