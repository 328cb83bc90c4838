export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/**
 * Any JSON value, checked by one recursive walk. A `z.lazy` union says the same thing but costs
 * ~100x more on a 10,000-superstep view model (seconds instead of milliseconds in the webview).
 * Plain objects and arrays only, finite numbers, no cycles, at most 64 levels deep. A module of
 * its own, no zod: the webview's schemas and `casefile inspect`'s (protocol/inspect.ts) use it,
 * and inspect then builds none of the webview's.
 */
export function isJsonValue(value: unknown, depth = 0): value is JsonValue {
  if (value === null || typeof value === "string" || typeof value === "boolean") return true;
  if (typeof value === "number") return Number.isFinite(value);
  if (typeof value !== "object" || depth >= 64) return false;
  if (Array.isArray(value)) {
    for (const v of value) if (!isJsonValue(v, depth + 1)) return false;
    return true;
  }
  const proto = Object.getPrototypeOf(value) as unknown;
  if (proto !== Object.prototype && proto !== null) return false;
  for (const k in value) if (!isJsonValue((value as Record<string, unknown>)[k], depth + 1)) return false;
  return true;
}
