import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { openCaseFile } from "../../../src/casefile/index";
import { loadSqlJs } from "../../../src/casefile/sqlite";
import { main } from "../../../src/cli/main";
import { parseOwnJson } from "../../../src/engine/evalCase";
import type { AgentCallRecord, VerdictRecord } from "../../../src/engine/records";
import { buildSuperstepDetail } from "../../../src/extension/viewModel";
import { InspectOutputSchema } from "../../../src/protocol/inspect";
import { SuperstepDetailSchema } from "../../../src/protocol/webview";

/**
 * The business rules a step saw stay with the step: recorded whole with its agent call, so an
 * eval case exported later, a recorded replay and the commit step all use them, whatever the rule
 * book says now. Everything through the CLI, on case files and rule books reopened from disk.
 */

const fixtures = path.resolve(__dirname, "../../fixtures/rules");
const workflow = path.join(fixtures, "pallets.ts");

describe("business rules recorded with the step", function () {
  this.timeout(60_000);
  let dir: string;
  let book: string;
  let env: NodeJS.ProcessEnv;

  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "casefile-rules-rec-"));
    book = path.join(dir, "book.casefile");
    env = { USER: "tester", CASEFILE_RULES: book };
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  async function cli(args: string[]): Promise<{ code: number; out: string; err: string }> {
    const out: string[] = [];
    const err: string[] = [];
    const code = await main(args, { out: (l) => out.push(l), err: (l) => err.push(l), env });
    return { code, out: out.join("\n"), err: err.join("\n") };
  }

  async function ok(args: string[]): Promise<string> {
    const r = await cli(args);
    assert.equal(r.code, 0, `casefile ${args.join(" ")}: ${r.err}`);
    return r.out;
  }

  async function records(file: string): Promise<{ calls: AgentCallRecord[]; verdicts: VerdictRecord[] }> {
    const store = await openCaseFile(file, { readOnly: true });
    try {
      return { calls: store.listAgentCalls(), verdicts: store.listVerdicts() };
    } finally {
      store.close();
    }
  }

  /** A confirmed rule "40 cartons per pallet", proposed by the agent's reviewer and confirmed by maria. */
  async function palletRule(): Promise<string> {
    const added = await ok([
      "rules",
      book,
      "add",
      "--statement",
      "Supplier 3 invoices per pallet of 40 cartons",
      "--value",
      '{"cartonsPerPallet":40}',
      "--source-case",
      "run-42",
      "--expires",
      "2099-12-31",
      "--by",
      "agent:review",
    ]);
    const id = /added (rule-[0-9a-f]+)/.exec(added)![1]!;
    await ok(["rules", book, "confirm", id, "--by", "maria"]);
    return id;
  }

  async function runOnce(): Promise<{ caseFile: string; call: AgentCallRecord }> {
    const caseFile = path.join(dir, "case.casefile");
    await ok(["run", workflow, "--case-file", caseFile]);
    const { calls } = await records(caseFile);
    return { caseFile, call: calls[0]! };
  }

  it("records the rules whole with the call, and the export stays byte-identical after the rule is edited, deleted and another added", async () => {
    const id = await palletRule();
    const { caseFile, call } = await runOnce();
    const rule = call.rulesInForce![0]!;
    assert.deepEqual(Object.keys(rule).sort(), [
      "confirmedAt",
      "confirmedBy",
      "expiresAt",
      "id",
      "proposedBy",
      "sourceCase",
      "statement",
      "value",
    ]);
    assert.deepEqual(
      [rule.id, rule.statement, rule.value, rule.sourceCase, rule.proposedBy, rule.confirmedBy, rule.expiresAt],
      [
        id,
        "Supplier 3 invoices per pallet of 40 cartons",
        { cartonsPerPallet: 40 },
        "run-42",
        "agent:review",
        "maria",
        "2099-12-31T00:00:00.000Z",
      ],
    );

    const out = path.join(dir, "evals", "case.eval.json");
    const first = await cli(["export-eval", caseFile, "--step", call.id, "--out", out]);
    assert.equal(first.code, 0, first.err);
    assert.equal(first.err, "", "a call with its rules recorded needs no fallback note");
    const bytes = readFileSync(out);
    const exported = parseOwnJson(bytes.toString("utf8"), out);
    assert.equal(exported.rulesFrom, "agent call");
    assert.deepEqual(exported.rules, call.rulesInForce);

    await ok([
      "rules",
      book,
      "edit",
      id,
      "--statement",
      "Supplier 3 invoices per pallet of 48 cartons",
      "--value",
      '{"cartonsPerPallet":48}',
      "--by",
      "li",
    ]);
    await ok(["rules", book, "confirm", id, "--by", "maria"]);
    await ok(["rules", book, "edit", id, "--expires", "2098-01-01T12:00:00+01:00", "--by", "li"]);
    await ok(["rules", book, "delete", id, "--by", "li"]);
    const other = /added (rule-[0-9a-f]+)/.exec(
      await ok(["rules", book, "add", "--statement", "Pallets are EUR pallets", "--by", "li"]),
    )![1]!;
    await ok(["rules", book, "confirm", other, "--by", "maria"]);

    assert.equal((await cli(["export-eval", caseFile, "--step", call.id, "--out", out])).code, 0);
    assert.ok(readFileSync(out).equals(bytes), "the second export is byte for byte the first");
    // inspect shows the rule as the context got it, not as the book holds it now
    const shown = await cli(["inspect", caseFile]);
    assert.match(
      shown.out,
      new RegExp(
        `${id}: "Supplier 3 invoices per pallet of 40 cartons" = \\{"cartonsPerPallet":40\\} \\(proposed by agent:review from case run-42, confirmed by maria at `,
      ),
    );

    // eval gives the commit rules the case's rules: with today's book (the rule deleted) the
    // commit would escalate; with the recorded one it accepts, as when the step ran.
    const evaluated = await cli(["eval", out]);
    assert.equal(evaluated.code, 0, evaluated.out + evaluated.err);
    assert.match(evaluated.out, /PASS .* book \/ accepted +book \/ accepted/);
  });

  it("gives commit rules and apply the rules the context got, and the verdict records which it used", async () => {
    const id = await palletRule();
    const { caseFile } = await runOnce();
    const { verdicts } = await records(caseFile);
    const v = verdicts[0]!;
    assert.equal(v.verdict, "accepted");
    assert.equal(v.businessRules!.from, "agent call");
    assert.deepEqual(
      v.businessRules!.given.map((r) => r.id),
      [id],
    );
    assert.deepEqual(v.businessRules!.used, [id]);
    assert.deepEqual(v.businessRules!.byApply, [id], "apply read the value too, to compute the cartons");
    assert.deepEqual(v.rules[0]!.businessRules, [id], "the commit rule that read the value names it");
    assert.equal(v.diff.cartons!.after, 120, "apply computed 3 pallets x 40 cartons from the rule's value");

    // inspect says it too: the rules the verdict was given, which it read, and by which commit rule.
    const json = InspectOutputSchema.parse(JSON.parse(await ok(["inspect", caseFile, "--json"])));
    const seen = json.runs[0]!.verdicts[0]!;
    assert.deepEqual(
      [seen.businessRules?.from, seen.businessRules?.given.map((r) => r.id), seen.businessRules?.used, seen.rules[0]!.businessRules],
      ["agent call", [id], [id], [id]],
      "inspect --json keeps the verdict's business rules",
    );
    assert.deepEqual(json.runs[0]!.agentCalls[0]!.rulesFrom, { from: "in force" });
    const text = await ok(["inspect", caseFile]);
    assert.match(text, new RegExp(`rule perPalletRuleKnown: ok: cartons per pallet from ${id}  \\(read ${id}\\)`));
    assert.match(
      text,
      new RegExp(`business rules given \\(as its agent call recorded them\\): ${id}; read: ${id} \\(by apply: ${id}\\)\n`),
    );

    // The Run Inspector shows which business rules the verdict used, parsed as the webview parses it.
    const store = await openCaseFile(caseFile, { readOnly: true });
    try {
      const d = SuperstepDetailSchema.parse(buildSuperstepDetail(store, v.runId, v.superstep));
      const decision = d.steps.find((x) => !("absent" in x.decision))!.decision;
      assert.ok(!("absent" in decision), 'expected: !("absent" in decision)');
      assert.deepEqual(decision.businessRules, {
        from: "agent call",
        given: [
          {
            id,
            statement: "Supplier 3 invoices per pallet of 40 cartons",
            value: { cartonsPerPallet: 40 },
            confirmedBy: "maria",
            confirmedAt: v.businessRules!.given[0]!.confirmedAt,
            expiresAt: "2099-12-31T00:00:00.000Z",
            used: true,
            usedBy: ["perPalletRuleKnown", "apply"],
          },
        ],
      });
    } finally {
      store.close();
    }
  });

  it("replays a step with the recorded rules after an expiry-only edit; a live replay uses today's and says so", async () => {
    const id = await palletRule();
    const { caseFile, call } = await runOnce();
    await ok(["rules", book, "edit", id, "--expires", "2098-06-30", "--by", "li"]);

    const recorded = await cli(["replay", caseFile, "--step", call.id, "--mode", "recorded"]);
    assert.equal(recorded.code, 0, recorded.out + recorded.err);
    assert.match(recorded.out, /: completed at superstep/);
    assert.match(
      recorded.out,
      new RegExp(`replay  : .* -> ACCEPTED  1 business rule \\(${id}\\) recorded with ${call.id.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}`),
    );

    await ok(["rules", book, "delete", id, "--by", "li"]);
    const none = await cli(["replay", caseFile, "--step", call.id, "--mode", "live"]);
    assert.equal(none.code, 0, none.out + none.err);
    assert.match(none.out, /replay  : .* -> ESCALATED  0 business rules in force when it ran/);

    // A live replay names the rules it used: today's, not the recorded call's.
    const added = await ok([
      "rules",
      book,
      "add",
      "--statement",
      "48 cartons a pallet now",
      "--value",
      '{"cartonsPerPallet":48}',
      "--by",
      "li",
    ]);
    const id2 = /added (rule-[0-9a-f]+)/.exec(added)![1]!;
    await ok(["rules", book, "confirm", id2, "--by", "maria"]);
    const live = await cli(["replay", caseFile, "--step", call.id, "--mode", "live"]);
    assert.equal(live.code, 0, live.out + live.err);
    assert.match(live.out, new RegExp(`original: .*  1 business rule \\(${id}\\) in force when it ran`), "the original names its rule");
    assert.match(
      live.out,
      new RegExp(`replay  : .* -> ACCEPTED  1 business rule \\(${id2}\\) in force when it ran`),
      "the live replay names today's",
    );

    const { calls, verdicts } = await records(caseFile);
    const branches = calls.filter((c) => c.id !== call.id);
    assert.deepEqual(
      branches.map((c) => [c.mode, c.rulesFrom, c.rulesInForce!.length]),
      [
        ["recorded", { from: "recorded", agentCallId: call.id }, 1],
        ["live", { from: "in force" }, 0],
        ["live", { from: "in force" }, 1],
      ],
    );
    assert.equal(branches[0]!.hash, call.hash, "the recorded replay rebuilt the very same context");
    assert.deepEqual(
      verdicts.map((v) => [v.verdict, v.businessRules!.given.length]),
      [
        ["accepted", 1],
        ["accepted", 1],
        ["escalated", 0],
        ["accepted", 1],
      ],
    );
  });

  it("falls back to the rule table for a call recorded before rules were kept whole, and says so in the export and in eval", async () => {
    // A case file whose rule table is the book itself (no separate book), as older runs used.
    env = { USER: "tester" };
    const caseFile = path.join(dir, "case.casefile");
    book = caseFile;
    const id = await palletRule();
    await ok(["run", workflow, "--case-file", caseFile]);
    const call = (await records(caseFile)).calls[0]!;

    // Rewrite the call as an older Casefile recorded it: rule ids and confirmation times only.
    const SQL = await loadSqlJs();
    const db = new SQL.Database(readFileSync(caseFile));
    const legacy: AgentCallRecord = { ...call, rules: [{ id, confirmedAt: call.rulesInForce![0]!.confirmedAt }] };
    delete legacy.rulesInForce;
    delete legacy.rulesFrom;
    db.run("UPDATE agent_calls SET data = ? WHERE id = ?", [JSON.stringify(legacy), call.id]);
    writeFileSync(caseFile, db.export());
    db.close();

    const out = path.join(dir, "legacy.eval.json");
    const exported = await cli(["export-eval", caseFile, "--step", call.id, "--out", out]);
    assert.equal(exported.code, 0, exported.err);
    assert.match(exported.err, /recorded before its business rules were kept whole; its rules are rebuilt from .* rule table/);
    const c = parseOwnJson(readFileSync(out, "utf8"), out);
    assert.equal(c.rulesFrom, "rule table");
    assert.deepEqual(c.rules, [{ id, statement: "Supplier 3 invoices per pallet of 40 cartons", value: { cartonsPerPallet: 40 } }]);
    const evaluated = await cli(["eval", out]);
    assert.match(evaluated.out, /business rules rebuilt from the case file's rule table at export/);
  });
});

describe("casefile rules: expiry, confirmation and refusals that leave nothing behind", function () {
  this.timeout(30_000);
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "casefile-rules-ref-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  async function cli(args: string[]): Promise<{ code: number; out: string; err: string }> {
    const out: string[] = [];
    const err: string[] = [];
    const code = await main(args, { out: (l) => out.push(l), err: (l) => err.push(l), env: { USER: "tester" } });
    return { code, out: out.join("\n"), err: err.join("\n") };
  }

  /** The directory's files with their sizes and times: what a refusal must leave as it was. */
  const listing = (): string[] =>
    readdirSync(dir)
      .sort()
      .map((f) => {
        const s = statSync(path.join(dir, f));
        return `${f} ${s.size} ${s.mtimeMs}`;
      });

  it("accepts ISO 8601 dates and date-times, stored as UTC instants, and refuses anything else naming the value", async () => {
    const book = path.join(dir, "book.casefile");
    for (const given of ["2027-02-28", "2027-02-28T12:00:00Z", "2027-02-28T12:00+01:00", "2028-02-29T23:59:59.5Z"]) {
      const r = await cli(["rules", book, "add", "--statement", `expires ${given}`, "--expires", given, "--by", "li"]);
      assert.equal(r.code, 0, r.err);
    }
    const store = await openCaseFile(book, { readOnly: true });
    const stored = store.listRules().map((r) => r.expiresAt);
    store.close();
    assert.deepEqual(stored, [
      "2027-02-28T00:00:00.000Z",
      "2027-02-28T12:00:00.000Z",
      "2027-02-28T11:00:00.000Z",
      "2028-02-29T23:59:59.500Z",
    ]);

    const id = await store0(stored.length);
    const before = listing();
    for (const [value, why] of [
      ["7", /expiry "7" is not an ISO 8601 date/],
      ["2027-02-30", /expiry "2027-02-30" names a day that does not exist \(2027-02 has 28 days\)/],
      ["tomorrow", /expiry "tomorrow" is not an ISO 8601 date/],
      ["2027-13-01", /expiry "2027-13-01" has no month 13/],
      ["2027-02-28T12:00:00", /expiry "2027-02-28T12:00:00" has no time zone/],
      ["2027-02-28T24:00:00Z", /names a time that does not exist/],
      ["Feb 28 2027", /expiry "Feb 28 2027" is not an ISO 8601 date/],
      // ISO 8601's basic and week forms, and an offset without its colon: refused saying which form is taken.
      ["20270228", /expiry "20270228" is not an ISO 8601 date in the form taken here \(YYYY-MM-DD, or YYYY-MM-DDThh:mm/],
      ["2027-W09-1", /expiry "2027-W09-1" is not an ISO 8601 date in the form taken here/],
      ["2027-02-28T10:00+0100", /expiry "2027-02-28T10:00\+0100" is not an ISO 8601 date in the form taken here .* with Z or ±hh:mm\)/],
      ["2001-01-01", /expiry "2001-01-01" is already past/],
    ] as const) {
      const r = await cli(["rules", book, "add", "--statement", "s", "--expires", value, "--by", "li"]);
      assert.equal(r.code, 3, `${value}: ${r.out}`);
      assert.match(r.err, /^casefile: INVALID_INPUT: /);
      assert.match(r.err, why);
      // An edit takes the same dates, except that one in the past is how a person retires a rule now.
      if (value === "2001-01-01") continue;
      const e = await cli(["rules", book, "edit", id, "--expires", value, "--by", "li"]);
      assert.equal(e.code, 3, `edit ${value}`);
      assert.match(e.err, why);
    }
    assert.deepEqual(listing(), before, "no refusal touched the book");

    async function store0(n: number): Promise<string> {
      const s = await openCaseFile(book, { readOnly: true });
      try {
        assert.equal(s.listRules().length, n);
        return s.listRules()[0]!.id;
      } finally {
        s.close();
      }
    }
  });

  it("refuses confirming an expired rule, and the proposer confirming their own rule unless --self-confirm, which the history records", async () => {
    const book = path.join(dir, "book.casefile");
    const id = /added (rule-[0-9a-f]+)/.exec((await cli(["rules", book, "add", "--statement", "s", "--by", "li"])).out)![1]!;

    const self = await cli(["rules", book, "confirm", id, "--by", "li"]);
    assert.equal(self.code, 3);
    assert.match(
      self.err,
      new RegExp(`^casefile: SELF_CONFIRMATION: rule "${id}" was proposed by li, who cannot also confirm it; .*--self-confirm`),
    );
    const allowed = await cli(["rules", book, "confirm", id, "--by", "li", "--self-confirm"]);
    assert.equal(allowed.code, 0, allowed.err);
    assert.match(allowed.out, /self-confirmed/);
    const history = await cli(["rules", book, "history", id]);
    assert.match(history.out, new RegExp(`${id}  confirmed by li \\(self-confirmed\\)`));
    const events = JSON.parse((await cli(["rules", book, "history", id, "--json"])).out) as {
      events: { data: { op: string; selfConfirmed?: boolean } }[];
    };
    assert.deepEqual(
      events.events.map((e) => [e.data.op, e.data.selfConfirmed ?? false]),
      [
        ["added", false],
        ["confirmed", true],
      ],
    );

    // Retire it now (an expiry in the past), then confirming it again is refused.
    assert.equal((await cli(["rules", book, "edit", id, "--expires", "2001-01-01", "--by", "li"])).code, 0);
    const expired = await cli(["rules", book, "confirm", id, "--by", "maria"]);
    assert.equal(expired.code, 3);
    assert.match(expired.err, new RegExp(`^casefile: RULE_EXPIRED: rule "${id}" expired at 2001-01-01T00:00:00.000Z`));
    const reopened = await openCaseFile(book, { readOnly: true });
    const rule = reopened.listRules()[0]!;
    reopened.close();
    assert.equal(rule.confirmedBy, "li", "the refused confirmation changed nothing");
  });

  it("leaves no book behind when a rules add to a missing book is refused, and makes unknown ids errors", async () => {
    const book = path.join(dir, "new.casefile");
    for (const args of [
      ["--statement", "s", "--expires", "7"],
      ["--statement", "s", "--value", "{not json"],
      ["--statement", "   "],
      ["--statement", "s", "--expires", "2001-01-01"],
    ]) {
      const r = await cli(["rules", book, "add", ...args, "--by", "li"]);
      assert.notEqual(r.code, 0, args.join(" "));
      assert.deepEqual(readdirSync(dir), [], `after the refused add ${args.join(" ")}, the folder is empty`);
    }
    for (const sub of ["confirm", "edit", "delete", "history"]) {
      const r = await cli(["rules", book, sub, "rule-00000000", ...(sub === "edit" ? ["--statement", "t"] : [])]);
      assert.notEqual(r.code, 0, sub);
      assert.deepEqual(readdirSync(dir), [], `${sub} on a missing book creates none`);
    }

    assert.equal((await cli(["rules", book, "add", "--statement", "s", "--by", "li"])).code, 0);
    const before = listing();
    for (const sub of ["confirm", "edit", "delete", "history"]) {
      const r = await cli(["rules", book, sub, "rule-00000000", ...(sub === "edit" ? ["--statement", "t"] : [])]);
      assert.equal(r.code, 3, sub);
      assert.match(r.err, /^casefile: UNKNOWN_RULE: no rule "rule-00000000" in this rule book; rules: rule-/);
    }
    assert.deepEqual(listing(), before, "the refusals left the book's folder as it was");
  });
});
