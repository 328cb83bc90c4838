import { randomUUID } from "node:crypto";
import { CasefileError } from "./errors";
import type { EventRecord, Json, RuleRecord } from "./records";
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

/** A rule as an agent step's context receives it: only what a rule in force can have. */
export interface RuleInForce {
  id: string;
  statement: string;
  value: Json;
  sourceCase?: string;
  proposedBy: string;
  confirmedBy: string;
  confirmedAt: string;
  expiresAt?: string;
}

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

/** Proposes a rule: stored, but outside every context until a person confirms it. */
export function addRule(store: CaseStore, input: NewRule, now: string = new Date().toISOString()): RuleRecord {
  if (!input.statement.trim()) throw new CasefileError("USAGE", "a rule needs a statement");
  if (!input.proposedBy.trim()) throw new CasefileError("USAGE", "a rule needs who proposed it");
  checkExpiry(input.expiresAt);
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

/** A person confirms a rule: from now until it expires, it enters contexts. */
export function confirmRule(store: CaseStore, id: string, by: string, now: string = new Date().toISOString()): RuleRecord {
  if (!by.trim()) throw new CasefileError("USAGE", `confirming rule "${id}" needs who confirms it`);
  const before = existing(store, id);
  const after: RuleRecord = { ...before, confirmedBy: by, confirmedAt: now, updatedAt: now };
  save(store, "confirmed", by, before, after, now);
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
  else if (changes.expiresAt !== undefined) {
    checkExpiry(changes.expiresAt);
    after.expiresAt = changes.expiresAt;
  }
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

/** The audit trail of one rule, or of every rule, oldest first. */
export function ruleHistory(store: CaseStore, id?: string): EventRecord[] {
  return store
    .listEvents({ runId: RULE_EVENTS_RUN })
    .filter((e) => e.type === "rule" && (id === undefined || (e.data as { rule?: string }).rule === id));
}

function existing(store: CaseStore, id: string): RuleRecord {
  const rule = store.listRules(true).find((r) => r.id === id);
  if (!rule) {
    const known = store.listRules().map((r) => r.id);
    throw new CasefileError(
      "UNKNOWN_RULE",
      `no rule "${id}" in this rule book` + (known.length ? `; rules: ${known.join(", ")}` : "; it holds no rules"),
      { rule: id },
    );
  }
  if (rule.deleted) throw new CasefileError("UNKNOWN_RULE", `rule "${id}" was deleted on ${rule.updatedAt}`, { rule: id });
  return rule;
}

function checkExpiry(at: string | undefined): void {
  if (at !== undefined && Number.isNaN(Date.parse(at)))
    throw new CasefileError("USAGE", `expiry "${at}" is not a date (use ISO 8601, e.g. 2027-06-30T00:00:00Z)`);
}

/** The rule and its audit event go in one batch: there is no change without its trace. */
function save(store: CaseStore, op: string, by: string, before: RuleRecord | undefined, after: RuleRecord, now: string): void {
  store.commit({
    rules: [after],
    events: [
      {
        runId: RULE_EVENTS_RUN,
        superstep: 0,
        type: "rule",
        at: now,
        data: { op, rule: after.id, by, before: (before ?? null) as unknown as Json, after: after as unknown as Json },
      },
    ],
  });
}
