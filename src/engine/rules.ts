import { randomUUID } from "node:crypto";
import { CasefileError } from "./errors";
import type { EventRecord, Json, RuleInForce, RuleRecord } from "./records";

export type { RuleInForce } from "./records";
import type { CaseStore } from "./store";

/**
 * Business-rule memory. A rule is something learned that changes decisions ("supplier X
 * invoices per pallet; its POs count cartons"): a statement for people, a structured value for
 * code, the case it came from, who proposed it, who confirmed it and when, and when it expires.
 * Only confirmed, unexpired, undeleted rules enter a context; every change is an audit event.
 *
 * Rules live in a rule book: a case file used for rules only (the runner passes it to the
 * engine as `ruleBook`; without one, the case file's own rules table is read). A shared book,
 * not one per case file, because a rule learned in one case has to change the decisions of the
 * next cases, each of which has its own case file. Being a case file, the book gets the same
 * journal, fsync, lock and event log as any case.
 */

/** Anything that lists rules: a CaseStore (the rule book or the case file itself). */
export interface RuleSource {
  listRules(includeDeleted?: boolean): RuleRecord[];
}

export type RuleState = "proposed" | "in_force" | "expired" | "deleted";

/** Rule audit events are kept under this pseudo-run id in the rule book's event log. */
export const RULE_EVENTS_RUN = "rules";

export function ruleState(rule: RuleRecord, now: string): RuleState {
  if (rule.deleted) return "deleted";
  if (rule.expiresAt !== undefined && Date.parse(rule.expiresAt) <= Date.parse(now)) return "expired";
  if (!rule.confirmedBy || !rule.confirmedAt) return "proposed";
  return "in_force";
}

/**
 * The rules that may enter a context at `now`. The engine calls this for every agent step, so a
 * rule confirmed, edited or expired between two steps is seen by the next one.
 */
export function rulesInForce(rules: readonly RuleRecord[], now: string): RuleInForce[] {
  return rules
    .filter((r) => ruleState(r, now) === "in_force")
    .map((r) => {
      const out: RuleInForce = {
        id: r.id,
        statement: r.statement,
        value: r.value,
        proposedBy: r.proposedBy,
        confirmedBy: r.confirmedBy!,
        confirmedAt: r.confirmedAt!,
      };
      if (r.sourceCase !== undefined) out.sourceCase = r.sourceCase;
      if (r.expiresAt !== undefined) out.expiresAt = r.expiresAt;
      return out;
    });
}

export interface NewRule {
  statement: string;
  value: Json;
  sourceCase?: string;
  proposedBy: string;
  expiresAt?: string;
}

/**
 * Checks a new rule before anything is written (the CLI calls it before it opens, or creates, the
 * book, so a refused rule leaves nothing behind) and returns it with its expiry normalised.
 */
export function checkNewRule(input: NewRule, now: string = new Date().toISOString()): NewRule {
  if (!input.statement.trim()) throw new CasefileError("USAGE", "a rule needs a statement");
  if (!input.proposedBy.trim()) throw new CasefileError("USAGE", "a rule needs who proposed it");
  if (input.expiresAt === undefined) return input;
  const expiresAt = parseExpiry(input.expiresAt);
  if (Date.parse(expiresAt) <= Date.parse(now))
    throw new CasefileError(
      "INVALID_INPUT",
      `expiry "${input.expiresAt}" is already past (now is ${now}): the rule could never be in force`,
      {
        expires: input.expiresAt,
      },
    );
  return { ...input, expiresAt };
}

/** Proposes a rule: stored, but outside every context until a person confirms it. */
export function addRule(store: CaseStore, proposed: NewRule, now: string = new Date().toISOString()): RuleRecord {
  const input = checkNewRule(proposed, now);
  const rule: RuleRecord = {
    id: `rule-${randomUUID().slice(0, 8)}`,
    statement: input.statement,
    value: input.value,
    proposedBy: input.proposedBy,
    createdAt: now,
    updatedAt: now,
  };
  if (input.sourceCase !== undefined) rule.sourceCase = input.sourceCase;
  if (input.expiresAt !== undefined) rule.expiresAt = input.expiresAt;
  save(store, "added", input.proposedBy, undefined, rule, now);
  return rule;
}

export interface ConfirmOptions {
  /**
   * Lets the person who proposed the rule confirm it too (a team of one). Refused without it: a
   * second person is the check. The audit event records `selfConfirmed: true`.
   */
  selfConfirm?: boolean;
}

/**
 * A person confirms a rule: from now until it expires, it enters contexts. Refused for a rule
 * already expired (it would enter no context: extend its expiry first), for a rule already
 * confirmed (RULE_CONFIRMED, naming who and when: a re-confirmation would re-stamp confirmedAt
 * for a rule whose meaning has not changed), and for the rule's own proposer unless `selfConfirm`.
 */
export function confirmRule(
  store: CaseStore,
  id: string,
  by: string,
  now: string = new Date().toISOString(),
  options: ConfirmOptions = {},
): RuleRecord {
  if (!by.trim()) throw new CasefileError("USAGE", `confirming rule "${id}" needs who confirms it`);
  const before = existing(store, id);
  if (before.expiresAt !== undefined && Date.parse(before.expiresAt) <= Date.parse(now)) {
    throw new CasefileError(
      "RULE_EXPIRED",
      `rule "${id}" expired at ${before.expiresAt}: confirming it would put nothing in force; give it a new expiry first (rules edit ${id} --expires DATE|never)`,
      { rule: id, expiresAt: before.expiresAt },
    );
  }
  // editRule withdraws the confirmation when the statement or value changes, so a confirmed rule
  // still says what was confirmed: confirming it again would only move confirmedAt (and who).
  if (before.confirmedBy !== undefined) {
    throw new CasefileError(
      "RULE_CONFIRMED",
      `rule "${id}" is already confirmed by ${before.confirmedBy} at ${before.confirmedAt ?? "an unrecorded time"}, and its statement and value have not changed since; nothing to confirm`,
      { rule: id, confirmedBy: before.confirmedBy, confirmedAt: before.confirmedAt },
    );
  }
  const self = before.proposedBy === by;
  if (self && !options.selfConfirm) {
    throw new CasefileError(
      "SELF_CONFIRMATION",
      `rule "${id}" was proposed by ${by}, who cannot also confirm it; ask someone else, or pass --self-confirm (recorded in the audit trail)`,
      { rule: id, by },
    );
  }
  const after: RuleRecord = { ...before, confirmedBy: by, confirmedAt: now, updatedAt: now };
  save(store, "confirmed", by, before, after, now, self ? { selfConfirmed: true } : {});
  return after;
}

export interface RuleChanges {
  statement?: string;
  value?: Json;
  /** An ISO time, or null to remove the expiry. */
  expiresAt?: string | null;
}

/**
 * Edits a rule. A changed statement or value is a different rule in effect, so it drops out of
 * contexts until confirmed again; a changed expiry alone keeps the confirmation.
 */
export function editRule(
  store: CaseStore,
  id: string,
  changes: RuleChanges,
  by: string,
  now: string = new Date().toISOString(),
): RuleRecord {
  if (!by.trim()) throw new CasefileError("USAGE", `editing rule "${id}" needs who edits it`);
  const before = existing(store, id);
  const after: RuleRecord = { ...before, updatedAt: now };
  if (changes.statement !== undefined) {
    if (!changes.statement.trim()) throw new CasefileError("USAGE", `rule "${id}" cannot be edited to an empty statement`);
    after.statement = changes.statement;
  }
  if (changes.value !== undefined) after.value = changes.value;
  if (changes.expiresAt === null) delete after.expiresAt;
  else if (changes.expiresAt !== undefined) after.expiresAt = parseExpiry(changes.expiresAt);
  const meaningChanged = after.statement !== before.statement || JSON.stringify(after.value) !== JSON.stringify(before.value);
  if (meaningChanged) {
    delete after.confirmedBy;
    delete after.confirmedAt;
  }
  save(store, "edited", by, before, after, now);
  return after;
}

/** Deletes a rule: it leaves every context, and stays in the book (marked deleted) for the audit trail. */
export function deleteRule(store: CaseStore, id: string, by: string, now: string = new Date().toISOString()): RuleRecord {
  if (!by.trim()) throw new CasefileError("USAGE", `deleting rule "${id}" needs who deletes it`);
  const before = existing(store, id);
  const after: RuleRecord = { ...before, deleted: true, updatedAt: now };
  save(store, "deleted", by, before, after, now);
  return after;
}

/** The audit trail of one rule (deleted ones too; an id the book never held is UNKNOWN_RULE), or of every rule, oldest first. */
export function ruleHistory(store: CaseStore, id?: string): EventRecord[] {
  if (id !== undefined && !store.listRules(true).some((r) => r.id === id)) throw unknownRule(store, id);
  return (
    store
      // Stryker disable next-line ObjectLiteral: equivalent, listing every run's events: only save() (below) writes "rule" events, all under RULE_EVENTS_RUN
      .listEvents({ runId: RULE_EVENTS_RUN })
      .filter((e) => e.type === "rule" && (id === undefined || (e.data as { rule?: string }).rule === id))
  );
}

function existing(store: CaseStore, id: string): RuleRecord {
  const rule = store.listRules(true).find((r) => r.id === id);
  if (!rule) throw unknownRule(store, id);
  if (rule.deleted) throw new CasefileError("UNKNOWN_RULE", `rule "${id}" was deleted on ${rule.updatedAt}`, { rule: id });
  return rule;
}

function unknownRule(store: CaseStore, id: string): CasefileError {
  const known = store.listRules().map((r) => r.id);
  return new CasefileError(
    "UNKNOWN_RULE",
    `no rule "${id}" in this rule book` + (known.length ? `; rules: ${known.join(", ")}` : "; it holds no rules"),
    { rule: id },
  );
}

const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const ISO_DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(Z|[+-](\d{2}):(\d{2}))$/;

/**
 * An expiry is an ISO 8601 date (`2027-02-28`: the rule leaves contexts at 00:00 UTC that day)
 * or date-time with a zone (`2027-02-28T12:00:00Z`, `...+01:00`); anything else (`7`,
 * `tomorrow`, `2027-02-30`, a time without a zone) is refused naming the value, where
 * `Date.parse` would store a guess. Returns the instant as a UTC ISO string, the form stored.
 */
export function parseExpiry(text: string): string {
  const refuse = (why: string) =>
    new CasefileError(
      "INVALID_INPUT",
      `expiry "${text}" ${why}; use an ISO 8601 date or date-time with a zone, e.g. 2027-02-28 or 2027-02-28T12:00:00Z`,
      { expires: text },
    );
  const m = ISO_DATE.exec(text) ?? ISO_DATE_TIME.exec(text);
  if (!m) {
    if (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/.test(text)) throw refuse("has no time zone (add Z or an offset such as +01:00)");
    // Basic (20270228), week, ordinal and hour-only forms are ISO 8601 too, but not taken: say which form is.
    throw refuse("is not an ISO 8601 date in the form taken here (YYYY-MM-DD, or YYYY-MM-DDThh:mm[:ss[.fff]] with Z or ±hh:mm)");
  }
  const [, y, mo, d, h = "00", mi = "00", sec = "00"] = m;
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  const daysIn = new Date(Date.UTC(year, month, 0)).getUTCDate();
  if (month < 1 || month > 12) throw refuse(`has no month ${mo}`);
  if (day < 1 || day > daysIn) throw refuse(`names a day that does not exist (${y}-${mo} has ${daysIn} days)`);
  if (Number(h) > 23 || Number(mi) > 59 || Number(sec) > 59) throw refuse(`names a time that does not exist (${h}:${mi}:${sec})`);
  if (m[8] !== undefined && (Number(m[8]) > 23 || Number(m[9]) > 59)) throw refuse(`has an offset that does not exist (${m[7]})`);
  // A date alone is 00:00 UTC that day: ECMAScript's Date.parse reads a date-only form as UTC, whatever TZ is.
  return new Date(Date.parse(text)).toISOString();
}

/** The rule and its audit event go in one batch: there is no change without its trace. */
function save(
  store: CaseStore,
  op: string,
  by: string,
  before: RuleRecord | undefined,
  after: RuleRecord,
  now: string,
  extra: Record<string, Json> = {},
): void {
  store.commit({
    rules: [after],
    events: [
      {
        runId: RULE_EVENTS_RUN,
        superstep: 0,
        type: "rule",
        at: now,
        data: { op, rule: after.id, by, ...extra, before: (before ?? null) as unknown as Json, after: after as unknown as Json },
      },
    ],
  });
}
