import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { openCaseFile } from "../../../src/casefile/index";
import { isCasefileError } from "../../../src/engine/errors";
import type { RuleRecord } from "../../../src/engine/records";
import { addRule, checkNewRule, confirmRule, deleteRule, editRule, ruleHistory } from "../../../src/engine/rules";

/**
 * What `casefile rules ... --json` gives a script for each refusal (code, message and details,
 * the fields at fault), and the rules a book on disk holds once reopened: each test names the slip
 * in rules.ts it catches (details emptied, a field written as undefined, a refusal's wording).
 */

const NOW = "2027-01-10T09:00:00.000Z";
const proposal = { statement: "Supplier 3 invoices per pallet", value: { cartonsPerPallet: 40 }, proposedBy: "agent:review" };

/** Asserts `f` throws this code, this message and these details. */
function refuses(f: () => unknown, code: string, message: string, details: Record<string, unknown>): void {
  assert.throws(f, (e: unknown) => {
    assert.ok(isCasefileError(e), `a CasefileError: ${String(e)}`);
    assert.equal(e.code, code, `code of: ${e.message}`);
    assert.equal(e.message, message);
    assert.deepEqual(e.details, details, `details of ${code}, for --json`);
    return true;
  });
}

let dir: string;
let file: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), "s18e-rules-"));
  file = path.join(dir, "rules.casefile");
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** Runs `f` on the book on disk, closing it after. */
async function withBook<T>(f: (book: Awaited<ReturnType<typeof openCaseFile>>) => T): Promise<T> {
  const book = await openCaseFile(file);
  try {
    return f(book);
  } finally {
    book.close();
  }
}

describe("rule book: each refusal's details, and rules as a reopened book holds them", () => {
  it("a rule proposed without a source case or expiry is returned exactly as the reopened book holds it (no undefined fields)", async () => {
    const added = await withBook((book) => addRule(book, proposal, NOW));
    const withBoth = await withBook((book) => addRule(book, { ...proposal, sourceCase: "run-7", expiresAt: "2027-03-01" }, NOW));
    const held = await withBook((book) => book.listRules(true));
    assert.deepEqual(
      held.find((r) => r.id === added.id),
      added,
      "addRule gave back what was stored",
    );
    assert.ok(!("sourceCase" in added) && !("expiresAt" in added), "no sourceCase or expiresAt key on a rule that has neither");
    assert.deepEqual([withBoth.sourceCase, withBoth.expiresAt], ["run-7", "2027-03-01T00:00:00.000Z"]);
  });

  it("an expiry already past names the value given", () => {
    refuses(
      () => checkNewRule({ ...proposal, expiresAt: "2027-01-01" }, NOW),
      "INVALID_INPUT",
      `expiry "2027-01-01" is already past (now is ${NOW}): the rule could never be in force`,
      { expires: "2027-01-01" },
    );
  });

  it("confirming an expired rule, a confirmed rule or one's own rule names the rule and what is in the way", async () => {
    const later = "2027-01-12T00:00:00.000Z";
    await withBook((book) => {
      const expiring = addRule(book, { ...proposal, expiresAt: "2027-01-11" }, NOW);
      refuses(
        () => confirmRule(book, expiring.id, "maria", later),
        "RULE_EXPIRED",
        `rule "${expiring.id}" expired at 2027-01-11T00:00:00.000Z: confirming it would put nothing in force; give it a new expiry first (rules edit ${expiring.id} --expires DATE|never)`,
        { rule: expiring.id, expiresAt: "2027-01-11T00:00:00.000Z" },
      );
      const r = addRule(book, proposal, NOW);
      refuses(
        () => confirmRule(book, r.id, "agent:review", NOW),
        "SELF_CONFIRMATION",
        `rule "${r.id}" was proposed by agent:review, who cannot also confirm it; ask someone else, or pass --self-confirm (recorded in the audit trail)`,
        { rule: r.id, by: "agent:review" },
      );
      confirmRule(book, r.id, "maria", NOW);
      refuses(
        () => confirmRule(book, r.id, "li", later),
        "RULE_CONFIRMED",
        `rule "${r.id}" is already confirmed by maria at ${NOW}, and its statement and value have not changed since; nothing to confirm`,
        { rule: r.id, confirmedBy: "maria", confirmedAt: NOW },
      );
      assert.equal(book.listRules().find((x) => x.id === r.id)?.confirmedAt, NOW, "the refused re-confirmation moved nothing");
    });
  });

  it("a rule whose confirmation lost its time (edited by hand) is already confirmed 'at an unrecorded time'", async () => {
    const rule: RuleRecord = { id: "rule-hand", ...proposal, confirmedBy: "maria", createdAt: NOW, updatedAt: NOW };
    await withBook((book) => book.commit({ rules: [rule] }));
    await withBook((book) =>
      refuses(
        () => confirmRule(book, "rule-hand", "li", NOW),
        "RULE_CONFIRMED",
        `rule "rule-hand" is already confirmed by maria at an unrecorded time, and its statement and value have not changed since; nothing to confirm`,
        { rule: "rule-hand", confirmedBy: "maria", confirmedAt: undefined },
      ),
    );
  });

  it("a deleted rule and an unknown one are UNKNOWN_RULE naming the rule, the deleted one with when", async () => {
    const deletedAt = "2027-01-10T10:00:00.000Z";
    const r = await withBook((book) => addRule(book, proposal, NOW));
    await withBook((book) => deleteRule(book, r.id, "li", deletedAt));
    await withBook((book) => {
      refuses(() => editRule(book, r.id, { value: 2 }, "li", NOW), "UNKNOWN_RULE", `rule "${r.id}" was deleted on ${deletedAt}`, {
        rule: r.id,
      });
      refuses(() => confirmRule(book, "rule-none", "li", NOW), "UNKNOWN_RULE", `no rule "rule-none" in this rule book; it holds no rules`, {
        rule: "rule-none",
      });
      refuses(() => ruleHistory(book, "rule-none"), "UNKNOWN_RULE", `no rule "rule-none" in this rule book; it holds no rules`, {
        rule: "rule-none",
      });
    });
  });

  it("an edit by someone whose name is only spaces is refused; a name with spaces around it is a name", async () => {
    await withBook((book) => {
      const r = addRule(book, proposal, NOW);
      refuses(() => editRule(book, r.id, { value: 2 }, "   ", NOW), "USAGE", `editing rule "${r.id}" needs who edits it`, {});
      refuses(() => deleteRule(book, r.id, "\t", NOW), "USAGE", `deleting rule "${r.id}" needs who deletes it`, {});
      refuses(() => confirmRule(book, r.id, "  ", NOW), "USAGE", `confirming rule "${r.id}" needs who confirms it`, {});
      assert.equal(editRule(book, r.id, { value: 2 }, " li ", NOW).value, 2, "a padded name is still a name");
    });
  });
});
