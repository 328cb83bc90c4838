/**
 * The input F5 asks for when a workflow is debugged with no launch.json: a JSON text prefilled
 * from the workflow's input schema (the JSON Schema describe reports), checked against the same
 * schema's outline before the session starts. Pure (no `vscode`): debugConfig.ts shows the box,
 * the unit tests call these directly.
 */

import { article } from "../engine/errors";

type JsonSchema = {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  enum?: unknown[];
  const?: unknown;
  default?: unknown;
  examples?: unknown[];
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  items?: JsonSchema;
  format?: string;
};

/**
 * A value to start from: every required property with its default, its first example, its first
 * choice, or an empty value of its type; optional properties left out (the prompt names them).
 */
export function inputSkeleton(schema: Record<string, unknown> | undefined): unknown {
  return schema ? valueOf(schema as JsonSchema) : {};
}

function valueOf(s: JsonSchema): unknown {
  if (s.default !== undefined) return s.default;
  if (s.const !== undefined) return s.const;
  if (s.examples?.length) return s.examples[0];
  if (s.enum?.length) return s.enum[0];
  const alt = s.anyOf?.[0] ?? s.oneOf?.[0];
  if (alt) return valueOf(alt);
  const type = Array.isArray(s.type) ? s.type[0] : s.type;
  switch (type) {
    case "object": {
      const out: Record<string, unknown> = {};
      for (const key of s.required ?? []) {
        const prop = s.properties?.[key];
        out[key] = prop ? valueOf(prop) : null;
      }
      return out;
    }
    case "array":
      return [];
    case "string":
      return "";
    case "number":
    case "integer":
      return 0;
    case "boolean":
      return false;
    case "null":
      return null;
    default:
      return {};
  }
}

/** One line describing the fields, for the prompt under the box: `invoiceId: string (required), erpUrl: string uri`. */
export function inputOutline(schema: Record<string, unknown> | undefined): string {
  const s = schema as JsonSchema | undefined;
  if (!s?.properties) return "Any JSON value.";
  const required = new Set(s.required ?? []);
  return Object.entries(s.properties)
    .map(([key, p]) => {
      const type = p.enum ? p.enum.map((v) => JSON.stringify(v)).join(" | ") : [p.type ?? "any", p.format].filter(Boolean).join(" ");
      return `${key}: ${type}${required.has(key) ? " (required)" : ""}`;
    })
    .join(", ");
}

/**
 * Why a text is not an acceptable input, or undefined when it is: not JSON, or missing a required
 * property, or a property of the wrong JSON type. The runner parses the input with the workflow's
 * zod schema anyway; this catches the mistakes a person makes in the box, before a process starts.
 */
export function inputProblem(text: string, schema: Record<string, unknown> | undefined): string | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    return `Not JSON: ${(e as Error).message}`;
  }
  const s = schema as JsonSchema | undefined;
  if (!s || s.type !== "object") return undefined;
  if (typeof value !== "object" || value === null || Array.isArray(value)) return "The input is a JSON object: { ... }.";
  const record = value as Record<string, unknown>;
  for (const key of s.required ?? []) if (!(key in record)) return `Missing "${key}" (required).`;
  for (const [key, v] of Object.entries(record)) {
    const p = s.properties?.[key];
    const type = p && !Array.isArray(p.type) ? p.type : undefined;
    if (!type || v === undefined) continue;
    const actual = v === null ? "null" : Array.isArray(v) ? "array" : typeof v;
    const ok = type === "integer" ? Number.isInteger(v) : type === actual;
    if (!ok) return `"${key}" is ${article(type)}, not ${article(actual)}.`;
    if (p?.enum && !p.enum.some((e) => JSON.stringify(e) === JSON.stringify(v)))
      return `"${key}" is one of ${p.enum.map((e) => JSON.stringify(e)).join(", ")}.`;
  }
  return undefined;
}
