import assert from "node:assert/strict";
import { MemoryStore } from "../../../src/casefile/index";
import type { RuleRecord } from "../../../src/engine/records";
import {
  addRule,
  checkNewRule,
  confirmRule,
  deleteRule,
  editRule,
  parseExpiry,
  ruleHistory,
  rulesInForce,
  ruleState,
} from "../../../src/engine/rules";

/**
 * The refusals and edge cases of the rule book, each as the person at `casefile rules` meets it:
 * an expiry that is a guess, a rule confirmed by its proposer, an edit that empties a statement,
 * an expiry at exactly now. Each assertion names the bug it catches.
 */

const NOW = "2027-01-10T09:00:00.000Z";
const HINT = "; use an ISO 8601 date or date-time with a zone, e.g. 2027-02-28 or 2027-02-28T12:00:00Z";

/** Asserts `f` throws a CasefileError with this code and exactly this message. */
function refuses(f: () => unknown, code: string, message: string): void {
  assert.throws(f, (e: Error & { code?: string }) => {
    assert.equal(e.code, code, `code of: ${e.message}`);
    assert.equal(e.message, message);
    return true;
  });
}

describe("rule book: an expiry is an ISO 8601 date or date-time with a zone, never a guess", () => {
  for (const [text, stored] of [
    ["2027-02-28", "2027-02-28T00:00:00.000Z"],
    ["2028-02-29", "2028-02-29T00:00:00.000Z"],
    ["2027-01-31", "2027-01-31T00:00:00.000Z"],
    ["2027-12-01", "2027-12-01T00:00:00.000Z"],
    ["2027-02-28T12:00:00Z", "2027-02-28T12:00:00.000Z"],
    ["2027-02-28T12:00+01:00", "2027-02-28T11:00:00.000Z"],
    ["2027-02-28T12:00:30.5Z", "2027-02-28T12:00:30.500Z"],
    ["2027-02-28T23:59:59+23:59", "2027-02-28T00:00:59.000Z"],
  ] as const)
    it(`stores ${text} as ${stored}`, () => assert.equal(parseExpiry(text), stored));

  for (const [text, why] of [
    ["7", "is not an ISO 8601 date in the form taken here (YYYY-MM-DD, or YYYY-MM-DDThh:mm[:ss[.fff]] with Z or ±hh:mm)"],
    ["tomorrow", "is not an ISO 8601 date in the form taken here (YYYY-MM-DD, or YYYY-MM-DDThh:mm[:ss[.fff]] with Z or ±hh:mm)"],
    ["2027-02-28T12:00", "has no time zone (add Z or an offset such as +01:00)"],
    ["2027-02-28T12:00:00.123", "has no time zone (add Z or an offset such as +01:00)"],
    // kills rules.ts:248 Regex (\.\d+) required: seconds without a fraction are a time without a zone too
    ["2027-02-28T12:00:00", "has no time zone (add Z or an offset such as +01:00)"],
    // kills rules.ts:231 Regex without ^ (Date.parse takes the expanded year: it was stored) and :248 without ^
    [
      "+002027-02-28T12:00:00Z",
      "is not an ISO 8601 date in the form taken here (YYYY-MM-DD, or YYYY-MM-DDThh:mm[:ss[.fff]] with Z or ±hh:mm)",
    ],
    ["+002027-02-28T12:00", "is not an ISO 8601 date in the form taken here (YYYY-MM-DD, or YYYY-MM-DDThh:mm[:ss[.fff]] with Z or ±hh:mm)"],
    // kills rules.ts:231 Regex without $ (a RangeError from Date.parse's NaN, not a refusal) and :248 without $
    // (a zone named after the time is not "no time zone": the form is not taken)
    [
      "2027-02-28T12:00:00Z[Europe/Berlin]",
      "is not an ISO 8601 date in the form taken here (YYYY-MM-DD, or YYYY-MM-DDThh:mm[:ss[.fff]] with Z or ±hh:mm)",
    ],
    [
      "2027-02-28T12:00 CET",
      "is not an ISO 8601 date in the form taken here (YYYY-MM-DD, or YYYY-MM-DDThh:mm[:ss[.fff]] with Z or ±hh:mm)",
    ],
    ["2027-13-01", "has no month 13"],
    ["2027-00-10", "has no month 00"],
    ["2027-02-29", "names a day that does not exist (2027-02 has 28 days)"],
    ["2027-04-00", "names a day that does not exist (2027-04 has 30 days)"],
    ["2027-02-28T24:00Z", "names a time that does not exist (24:00:00)"],
    ["2027-02-28T23:60Z", "names a time that does not exist (23:60:00)"],
    ["2027-02-28T23:59:60Z", "names a time that does not exist (23:59:60)"],
    ["2027-02-28T12:00+24:00", "has an offset that does not exist (+24:00)"],
    ["2027-02-28T12:00-01:60", "has an offset that does not exist (-01:60)"],
  ] as const)
    it(`refuses ${text}: it ${why}`, () =>
      assert.throws(
        () => parseExpiry(text),
        (e: Error & { code?: string; details?: unknown }) => {
          assert.equal(e.code, "INVALID_INPUT");
          assert.equal(e.message, `expiry "${text}" ${why}${HINT}`);
          assert.deepEqual(e.details, { expires: text }, "the value at fault, for --json");
          return true;
        },
      ));
});

describe("rule book: refusals name what is missing", () => {
  const proposal = { statement: "Supplier 3 invoices per pallet", value: { cartonsPerPallet: 40 }, proposedBy: "agent:review" };

  it("a rule needs a statement and who proposed it; blank is missing", () => {
    refuses(() => checkNewRule({ ...proposal, statement: "  " }, NOW), "USAGE", "a rule needs a statement");
    refuses(() => checkNewRule({ ...proposal, proposedBy: " " }, NOW), "USAGE", "a rule needs who proposed it");
  });

  it("an expiry at or before now is refused (the rule could never be in force); a later one is stored normalised", () => {
    refuses(
      () => checkNewRule({ ...proposal, expiresAt: NOW }, NOW),
      "INVALID_INPUT",
      `expiry "${NOW}" is already past (now is ${NOW}): the rule could never be in force`,
    );
    assert.deepEqual(checkNewRule({ ...proposal, expiresAt: "2027-01-11" }, NOW), { ...proposal, expiresAt: "2027-01-11T00:00:00.000Z" });
    assert.deepEqual(checkNewRule(proposal, NOW), proposal, "no expiry: unchanged");
  });

  it("confirming, editing and deleting each need who does it", () => {
    const book = new MemoryStore();
    const r = addRule(book, proposal, NOW);
    refuses(() => confirmRule(book, r.id, " ", NOW), "USAGE", `confirming rule "${r.id}" needs who confirms it`);
    refuses(() => editRule(book, r.id, { value: 1 }, " ", NOW), "USAGE", `editing rule "${r.id}" needs who edits it`);
    refuses(() => deleteRule(book, r.id, " ", NOW), "USAGE", `deleting rule "${r.id}" needs who deletes it`);
    refuses(() => editRule(book, r.id, { statement: " " }, "li", NOW), "USAGE", `rule "${r.id}" cannot be edited to an empty statement`);
    assert.equal(ruleHistory(book, r.id).length, 1, "no refused change left a trace");
  });

  it("its proposer cannot confirm a rule unless self-confirmation is asked for, and then the audit event says so", () => {
    const book = new MemoryStore();
    const r = addRule(book, proposal, NOW);
    refuses(
      () => confirmRule(book, r.id, "agent:review", NOW),
      "SELF_CONFIRMATION",
      `rule "${r.id}" was proposed by agent:review, who cannot also confirm it; ask someone else, or pass --self-confirm (recorded in the audit trail)`,
    );
    confirmRule(book, r.id, "agent:review", NOW, { selfConfirm: true });
    const other = addRule(book, proposal, NOW);
    confirmRule(book, other.id, "maria", NOW);
    const flags = ruleHistory(book).map((e) => [
      (e.data as { rule: string }).rule,
      (e.data as { op: string }).op,
      (e.data as { selfConfirmed?: boolean }).selfConfirmed,
    ]);
    assert.deepEqual(
      flags,
      [
        [r.id, "added", undefined],
        [r.id, "confirmed", true],
        [other.id, "added", undefined],
        [other.id, "confirmed", undefined],
      ],
      "every rule's events, oldest first; selfConfirmed only where it was",
    );
  });

  it("a rule expired at exactly now cannot be confirmed, and the message says how to extend it", () => {
    const book = new MemoryStore();
    const r = addRule(book, { ...proposal, expiresAt: "2027-01-11" }, NOW);
    const then = "2027-01-11T00:00:00.000Z";
    refuses(
      () => confirmRule(book, r.id, "maria", then),
      "RULE_EXPIRED",
      `rule "${r.id}" expired at ${then}: confirming it would put nothing in force; give it a new expiry first (rules edit ${r.id} --expires DATE|never)`,
    );
    assert.equal(ruleState(book.listRules()[0]!, then), "expired", "expired at the instant, not after it");
  });

  it("editing the expiry away (never) keeps the confirmation; the same statement and value again is no change of meaning", () => {
    const book = new MemoryStore();
    const r = addRule(book, { ...proposal, expiresAt: "2027-03-01" }, NOW);
    confirmRule(book, r.id, "maria", NOW);
    const never = editRule(book, r.id, { expiresAt: null, statement: proposal.statement, value: { cartonsPerPallet: 40 } }, "li", NOW);
    assert.equal(never.expiresAt, undefined, "no expiry");
    assert.equal(never.confirmedBy, "maria", "same meaning: still confirmed");
    assert.equal(ruleState(never, "2099-01-01T00:00:00.000Z"), "in_force");
    const reworded = editRule(book, r.id, { statement: "Supplier 3 invoices per pallet of 40" }, "li", NOW);
    assert.equal(reworded.confirmedBy, undefined, "a new statement is a new rule in effect");
    assert.equal(ruleState(reworded, NOW), "proposed");
  });

  it("a confirmation without its time is not in force; a rule in force carries only the fields it has", () => {
    const rule: RuleRecord = {
      id: "rule-1",
      statement: "s",
      value: 1,
      proposedBy: "p",
      confirmedBy: "maria",
      createdAt: NOW,
      updatedAt: NOW,
    };
    assert.equal(ruleState(rule, NOW), "proposed");
    const inForce = rulesInForce([{ ...rule, confirmedAt: NOW }], NOW);
    assert.deepEqual(inForce, [{ id: "rule-1", statement: "s", value: 1, proposedBy: "p", confirmedBy: "maria", confirmedAt: NOW }]);
    assert.ok(!("sourceCase" in inForce[0]!) && !("expiresAt" in inForce[0]!), "no undefined fields in the context's record");
    const later = "2027-02-01T00:00:00.000Z";
    const [withBoth] = rulesInForce([{ ...rule, confirmedAt: NOW, sourceCase: "run-1", expiresAt: later }], NOW);
    assert.deepEqual(
      [withBoth!.sourceCase, withBoth!.expiresAt],
      ["run-1", later],
      "the context says where a rule came from and when it ends",
    );
  });

  it("the history of an id the book never held is refused, saying the book is empty or listing its rules", () => {
    const book = new MemoryStore();
    refuses(() => ruleHistory(book, "rule-x"), "UNKNOWN_RULE", `no rule "rule-x" in this rule book; it holds no rules`);
    const a = addRule(book, proposal, NOW);
    const b = addRule(book, proposal, NOW);
    refuses(() => ruleHistory(book, "rule-x"), "UNKNOWN_RULE", `no rule "rule-x" in this rule book; rules: ${a.id}, ${b.id}`);
    deleteRule(book, a.id, "li", NOW);
    assert.deepEqual(
      ruleHistory(book, a.id).map((e) => (e.data as { op: string }).op),
      ["added", "deleted"],
      "a deleted rule keeps its history, and only its own",
    );
  });
});
