import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { z } from "zod";
import { MemoryStore, openCaseFile } from "../../../src/casefile/index";
import { main } from "../../../src/cli/main";
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

describe("business rules: casefile rules CLI and the runner's rule book", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "casefile-rules-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  async function cli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; out: string; err: string }> {
    const out: string[] = [];
    const err: string[] = [];
    const code = await main(args, { out: (l) => out.push(l), err: (l) => err.push(l), env: { USER: "tester", ...env } });
    return { code, out: out.join("\n"), err: err.join("\n") };
  }

  it("adds, confirms, edits and deletes rules, each change an audit event, and `run` reads the book", async () => {
    const book = path.join(dir, "rules.casefile");
    const added = await cli([
      "rules",
      book,
      "add",
      "--statement",
      "Supplier 3 invoices per pallet",
      "--value",
      '{"cartonsPerPallet":40}',
      "--source-case",
      "run-42",
      "--by",
      "agent:review",
    ]);
    assert.equal(added.code, 0, added.err);
    const id = /added (rule-[0-9a-f]+)/.exec(added.out)![1]!;

    const listed = await cli(["rules", book, "list", "--json"]);
    const rules = (JSON.parse(listed.out) as { rules: (RuleRecord & { state: string })[] }).rules;
    assert.deepEqual(
      rules.map((r) => [r.id, r.state, r.proposedBy, r.sourceCase]),
      [[id, "proposed", "agent:review", "run-42"]],
    );

    const workflow = path.join(fixtures, "advisor.ts");
    const caseFile = path.join(dir, "a.casefile");
    const before = await cli(["run", workflow, "--case-file", caseFile], { CASEFILE_RULES: book });
    assert.equal(before.code, 0, before.err);

    assert.equal((await cli(["rules", book, "confirm", id])).code, 0);
    const caseFile2 = path.join(dir, "b.casefile");
    assert.equal((await cli(["run", workflow, "--case-file", caseFile2], { CASEFILE_RULES: book })).code, 0);

    const edited = await cli(["rules", book, "edit", id, "--statement", "Supplier 3 invoices per pallet of 48 cartons", "--by", "li"]);
    assert.match(edited.out, /confirm it again/);
    assert.equal((await cli(["rules", book, "delete", id, "--by", "li"])).code, 0);
    assert.match((await cli(["rules", book, "list"])).out, /no rules in/);
    assert.match(
      (await cli(["rules", book, "list", "--all"])).out,
      new RegExp(`${id}  \\[deleted\\]  Supplier 3 invoices per pallet of 48 cartons`),
    );

    const history = JSON.parse((await cli(["rules", book, "history", id, "--json"])).out) as {
      events: { data: { op: string; by: string } }[];
    };
    assert.deepEqual(
      history.events.map((e) => `${e.data.op} by ${e.data.by}`),
      ["added by agent:review", "confirmed by tester", "edited by li", "deleted by li"],
    );

    // What each run's agent was given: nothing before the confirmation, the rule after it.
    const contextOf = async (file: string): Promise<string> => {
      const store = await openCaseFile(file, { readOnly: true });
      try {
        return store.listAgentCalls()[0]!.request.messages[0]!.content;
      } finally {
        store.close();
      }
    };
    assert.equal(await contextOf(caseFile), "Rules in force:\n");
    assert.equal(await contextOf(caseFile2), `Rules in force:\n- [${id}] Supplier 3 invoices per pallet {"cartonsPerPallet":40}`);
  });

  it("refuses a rules command without a subcommand, and an unknown rule, with the usual exit codes", async () => {
    const book = path.join(dir, "rules.casefile");
    const usage = await cli(["rules", book]);
    assert.equal(usage.code, 2);
    assert.match(usage.err, /rules needs a rule book and a subcommand/);
    await cli(["rules", book, "add", "--statement", "x"]);
    const unknown = await cli(["rules", book, "confirm", "rule-00000000"]);
    assert.equal(unknown.code, 3);
    assert.match(unknown.err, /UNKNOWN_RULE: no rule "rule-00000000"/);
  });
});
