import { canonicalJson, stableHash } from "./hash";
import type { EffectIntent, LiveRecord } from "./executors";
import type { IntentConflict, IntentRecord, IntentTerms, Json } from "./records";

/**
 * The pure parts of effects (effectStep.ts runs them): how a live record compares with what an
 * effect planned against, how two runs' intents for one idempotency key compare (a branch against
 * the run that holds the key), the keys and record ids intents are filed under, and the JSON
 * paths both comparisons report. Nothing here reads or writes the store.
 */

/** How the live record compares with what an effect planned against. */
export interface PreconditionResult {
  outcome: "unchanged" | "unrelated_change" | "relied_on_change";
  /** Field paths whose value differs between the basis and the live record. */
  changed: string[];
  /** Relied-on paths whose live value no longer matches: what it relied on, what is there now. */
  reliedOnChanged: { path: string; expected: Json; actual: Json | null }[];
}

/**
 * Compares a live record with an intent's `reliesOn` (and its `basis`, if any). Pure: the effect
 * step calls it before opening an intent and again before acting after a restart.
 */
export function comparePrecondition(intent: Pick<EffectIntent, "reliesOn" | "basis">, live: LiveRecord): PreconditionResult {
  const reliedOnChanged: PreconditionResult["reliedOnChanged"] = [];
  for (const [p, expected] of reliedPaths(intent.reliesOn)) {
    const actual = getPath(live.record, p);
    const same =
      typeof expected === "string" && expected.startsWith("sha256:")
        ? stableHash(actual ?? null) === expected || canonicalJson(actual) === canonicalJson(expected)
        : canonicalJson(actual ?? null) === canonicalJson(expected);
    if (!same) reliedOnChanged.push({ path: p, expected, actual: actual ?? null });
  }
  const changed = intent.basis ? diffPaths(intent.basis.record, live.record) : [];
  // A version that moved without a visible field change (a touch, a metadata update) still
  // counts as a change: the person reading the drift sees the two versions.
  const moved = intent.basis !== undefined && intent.basis.version !== live.version;
  const outcome = reliedOnChanged.length > 0 ? "relied_on_change" : moved || changed.length > 0 ? "unrelated_change" : "unchanged";
  return { outcome, changed, reliedOnChanged };
}

export function intentKey(caseId: string, executor: string, superstep: number, index = 0): string {
  // Index 0 keeps the key of the basic effect runner, so intents recorded before stay found.
  return `${caseId}:${executor}:${superstep}${index > 0 ? `#${index}` : ""}`;
}

/** The id of a run's record of a key: the key on the root run (as before branches had records), `key@run` on a branch. */
export function intentRecordId(key: string, runId: string, caseId: string): string {
  return runId === caseId ? key : `${key}@${runId}`;
}

/** The idempotency key an intent record was acted on with. */
export function keyOf(record: IntentRecord): string {
  return record.key ?? record.id;
}

/**
 * Compares two intents for one key on what the target would be asked to do: action, target,
 * payload and relied-on values (not the basis: a branch that read the record again at a new
 * version, relying on the same values, asks for the same thing). Pure; [] when identical.
 */
export function compareIntents(existing: IntentTerms, proposed: IntentTerms): IntentConflict["differs"] {
  const terms = (t: IntentTerms): Json => ({ action: t.action, target: t.target, payload: t.payload, reliesOn: t.reliesOn });
  const a = terms(existing);
  const b = terms(proposed);
  return diffPaths(a, b).map((p) => ({ path: p, existing: getPath(a, p) ?? null, proposed: getPath(b, p) ?? null }));
}

/**
 * What a run records when its intent differs from the one another run holds under the key: both
 * intents side by side, the fields that differ, and the EFFECT_CONFLICT message naming them
 * (`self` names the proposing run in it). Pure; the effect step commits the refused intent.
 */
export function intentConflict(
  holder: IntentRecord,
  proposed: IntentRecord,
  differs: IntentConflict["differs"],
  self: string,
  detectedAt: string,
): { conflict: IntentConflict; message: string } {
  const key = keyOf(holder);
  const conflict: IntentConflict = {
    key,
    existing: {
      run: holder.runId,
      intent: holder.id,
      status: holder.status,
      action: holder.action,
      target: holder.target,
      payload: holder.payload,
      reliesOn: holder.reliesOn,
      reference: holder.reference ?? null,
    },
    proposed: { action: proposed.action, target: proposed.target, payload: proposed.payload, reliesOn: proposed.reliesOn },
    differs,
    detectedAt,
  };
  const show = (v: Json | null): string => {
    const text = JSON.stringify(v);
    return text.length > 60 ? `${text.slice(0, 57)}...` : text;
  };
  const fields = differs.map((d) => `${d.path}: ${show(d.existing)} (run ${holder.runId}) vs ${show(d.proposed)} (${self})`).join("; ");
  const message =
    `effect "${proposed.executor}" (intent ${proposed.id}, ${proposed.action} on ${proposed.target}): idempotency key ${key} is held by ` +
    `run ${holder.runId}'s ${holder.status} intent ${holder.id} with a different intent: ${fields}; not acting and not reusing its reference`;
  return { conflict, message };
}

/**
 * The record that holds a key for the case, other than the given run's own: a done intent (the
 * effect happened), else an open or failed one (it may have). Records that only reused or refused
 * another's hold nothing; nor do intents stopped for replanning, which never acted.
 */
export function holderOf(held: IntentRecord[], runId: string): IntentRecord | undefined {
  const acted = held.filter((i) => i.runId !== runId && !i.reusedFrom && !i.conflict);
  return acted.find((i) => i.status === "done") ?? acted.find((i) => i.status === "open" || i.status === "failed");
}

function reliedPaths(reliesOn: Json): [string, Json][] {
  if (reliesOn === null || typeof reliesOn !== "object" || Array.isArray(reliesOn)) return [];
  return Object.entries(reliesOn);
}

/** Reads "a.b.0.c" from a JSON value; undefined when the path does not exist. */
export function getPath(value: Json, p: string): Json | undefined {
  let cur: Json | undefined = value;
  for (const part of p.split(".")) {
    if (cur === null || typeof cur !== "object") return undefined;
    cur = Array.isArray(cur) ? cur[Number(part)] : cur[part];
  }
  return cur;
}

/** The leaf paths at which two JSON values differ (objects compared member by member). */
export function diffPaths(a: Json | undefined, b: Json | undefined, prefix = ""): string[] {
  const isObj = (v: Json | undefined): v is { [k: string]: Json } => v !== null && typeof v === "object" && !Array.isArray(v);
  if (isObj(a) && isObj(b)) {
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
    return keys.flatMap((k) => diffPaths(a[k], b[k], prefix ? `${prefix}.${k}` : k));
  }
  return canonicalJson(a ?? null) === canonicalJson(b ?? null) ? [] : [prefix || "(root)"];
}
