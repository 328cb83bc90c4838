/** The Intents tab's view model: an effect step's intents, and a refused one beside the intent that holds its key. */
import type { IntentConflict, IntentRecord, IntentTerms, Json } from "../../engine/records";
import type { IntentConflictView, IntentView } from "../../protocol/webview";

export function intentView(i: IntentRecord): IntentView {
  return {
    id: i.id,
    key: i.key ?? i.id,
    reusedFrom: i.reusedFrom ? { run: i.reusedFrom.run, intent: i.reusedFrom.intent } : null,
    conflict: i.conflict ? conflictView(i.conflict) : null,
    executor: i.executor,
    superstep: i.superstep,
    action: i.action,
    target: i.target,
    status: i.status,
    payload: i.payload,
    reliesOn: i.reliesOn,
    reference: i.reference ?? null,
    error: i.error ? { code: i.error.code, message: i.error.message } : null,
    drift: i.drift ?? null,
    createdAt: i.createdAt,
    updatedAt: i.updatedAt,
  };
}

/** Both intents of a conflict as rows a person reads across: every leaf path of either side. */
function conflictView(c: IntentConflict): IntentConflictView {
  const differs = new Set(c.differs.map((d) => d.path));
  const sides = (t: IntentTerms): Json => ({ action: t.action, target: t.target, payload: t.payload, reliesOn: t.reliesOn });
  const a = leaves(sides(c.existing));
  const b = leaves(sides(c.proposed));
  const paths = [...new Set([...a.keys(), ...b.keys()])];
  return {
    key: c.key,
    existing: { run: c.existing.run, intent: c.existing.intent, status: c.existing.status, reference: c.existing.reference ?? null },
    rows: paths.map((path) => ({
      path,
      existing: a.get(path) ?? null,
      proposed: b.get(path) ?? null,
      differs: differs.has(path) || [...differs].some((d) => path.startsWith(`${d}.`)),
    })),
  };
}

/** Leaf values of a JSON value by dotted path (arrays and empty objects count as leaves). */
function leaves(value: Json, prefix = "", out = new Map<string, Json>()): Map<string, Json> {
  if (value !== null && typeof value === "object" && !Array.isArray(value) && Object.keys(value).length > 0) {
    for (const [k, v] of Object.entries(value)) leaves(v, prefix ? `${prefix}.${k}` : k, out);
  } else out.set(prefix, value);
  return out;
}
