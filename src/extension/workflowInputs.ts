import { existsSync, readFileSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import type { Json } from "../engine/records";

/**
 * The inputs kept beside a workflow, `<workflow>.inputs.json` (committed with it): the last input
 * a run was started with and named inputs, offered first by the input form (inputForm.ts) that
 * Run, Step and F5 share. And the form's fields, read from the workflow's input JSON Schema (zod
 * 4's, from the describe child process). Pure (no `vscode`): the unit tests call these directly.
 *
 *   { "last": { "invoiceId": "INV-1002" },
 *     "named": { "INV-1001 (9% variance: escalated)": { "invoiceId": "INV-1001" } } }
 */

export interface KeptInputs {
  last?: Json;
  named: Record<string, Json>;
}

/** `examples/invoice/workflow.ts` -> `examples/invoice/workflow.inputs.json`. */
export function inputsFileFor(workflowPath: string): string {
  return path.join(path.dirname(workflowPath), path.basename(workflowPath).replace(/\.[cm]?[tj]s$/, "") + ".inputs.json");
}

/**
 * What the file keeps; none when it is missing. A file that is not JSON, or not of this shape,
 * is reported (`problem`) and read as empty: the form still works, and the next save rewrites
 * only what it owns once the person fixes the file.
 */
export function readKeptInputs(workflowPath: string): { kept: KeptInputs; problem?: string } {
  const file = inputsFileFor(workflowPath);
  if (!existsSync(file)) return { kept: { named: {} } };
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(file, "utf8"));
  } catch (e) {
    return { kept: { named: {} }, problem: `${path.basename(file)} is not JSON: ${(e as Error).message}` };
  }
  if (typeof value !== "object" || value === null || Array.isArray(value))
    return { kept: { named: {} }, problem: `${path.basename(file)} is not an object { "last": ..., "named": { ... } }` };
  const v = value as { last?: Json; named?: unknown };
  const named = v.named;
  if (named !== undefined && (typeof named !== "object" || named === null || Array.isArray(named)))
    return { kept: { named: {} }, problem: `${path.basename(file)}: "named" is not an object of name -> input` };
  return { kept: { ...(v.last !== undefined ? { last: v.last } : {}), named: (named ?? {}) as Record<string, Json> } };
}

/**
 * Keeps `input` as the last one used (and under `name`, when given), leaving the other named
 * inputs as they were. Called by the input form once the input passed its checks, before the run starts.
 */
export function keepInput(workflowPath: string, input: Json, name?: string): void {
  const { kept, problem } = readKeptInputs(workflowPath);
  if (problem) throw new Error(`cannot keep the input: ${problem}`);
  const next: KeptInputs = { last: input, named: { ...kept.named, ...(name ? { [name]: input } : {}) } };
  writeFileSync(inputsFileFor(workflowPath), JSON.stringify(next, null, 2) + "\n");
}

/** The choices the form offers first: named inputs, then the last one (unless it is one of them). */
export function keptChoices(kept: KeptInputs): { label: string; input: Json; last: boolean }[] {
  const same = (a: Json, b: Json | undefined): boolean => JSON.stringify(a) === JSON.stringify(b);
  const out = Object.entries(kept.named).map(([label, input]) => ({ label, input, last: same(input, kept.last) }));
  if (kept.last !== undefined && !out.some((c) => c.last)) out.unshift({ label: "Last used", input: kept.last, last: true });
  else out.sort((a, b) => Number(b.last) - Number(a.last));
  return out;
}

type JsonSchema = {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  enum?: unknown[];
  const?: unknown;
  default?: unknown;
  description?: string;
  examples?: unknown[];
  format?: string;
  minLength?: number;
  anyOf?: JsonSchema[];
};

/** One field of the form: a property of the input object. */
export interface FormField {
  key: string;
  /** How it is asked: a choice (enum, boolean) or typed text parsed as this kind. */
  kind: "choice" | "string" | "number" | "integer" | "boolean" | "json";
  required: boolean;
  description?: string;
  choices?: Json[];
  default?: Json;
  format?: string;
  minLength?: number;
}

/**
 * The form for an input schema, one field per property in the schema's order; undefined when
 * the input is not an object with properties (the form then falls back to the JSON editor).
 */
export function formFields(schema: Record<string, unknown> | undefined): FormField[] | undefined {
  const s = schema as JsonSchema | undefined;
  if (!s || s.type !== "object" || !s.properties || Object.keys(s.properties).length === 0) return undefined;
  const required = new Set(s.required ?? []);
  return Object.entries(s.properties).map(([key, p0]) => {
    // zod 4 writes an optional-with-null property as anyOf [T, null]: ask for T.
    const p = p0.anyOf?.find((a) => a.type !== "null") ?? p0;
    const type = Array.isArray(p.type) ? p.type.find((t) => t !== "null") : p.type;
    const choices = p.enum ?? (type === "boolean" ? [true, false] : undefined);
    const kind: FormField["kind"] = p.enum
      ? "choice"
      : type === "string" || type === "number" || type === "integer" || type === "boolean"
        ? type
        : "json";
    return {
      key,
      kind,
      required: required.has(key),
      ...((p0.description ?? p.description) ? { description: p0.description ?? p.description } : {}),
      ...(choices ? { choices: choices as Json[] } : {}),
      ...(p0.default !== undefined ? { default: p0.default as Json } : p.default !== undefined ? { default: p.default as Json } : {}),
      ...(p.format ? { format: p.format } : {}),
      ...(p.minLength !== undefined ? { minLength: p.minLength } : {}),
    };
  });
}

/**
 * A typed text read as the field's value: `{ value }`, `{ omit: true }` for an optional field
 * left empty, or `{ problem }` saying what is wrong, shown under the box as the person types.
 */
export function fieldValue(field: FormField, text: string): { value: Json } | { omit: true } | { problem: string } {
  const t = text.trim();
  if (t === "" && field.kind !== "string") return field.required ? { problem: `${field.key} is required.` } : { omit: true };
  if (t === "" && field.kind === "string" && !field.required) return { omit: true };
  switch (field.kind) {
    case "string":
      if (field.minLength !== undefined && text.length < field.minLength)
        return {
          problem: field.minLength === 1 ? `${field.key} is required.` : `${field.key} needs at least ${field.minLength} characters.`,
        };
      if (field.format === "uri" && !/^[a-z][a-z0-9+.-]*:\/\/\S+$/i.test(t))
        return { problem: `${field.key} is a URL, e.g. http://127.0.0.1:4310.` };
      return { value: text };
    case "number":
    case "integer": {
      const n = Number(t);
      if (!Number.isFinite(n)) return { problem: `${field.key} is a number.` };
      if (field.kind === "integer" && !Number.isInteger(n)) return { problem: `${field.key} is a whole number.` };
      return { value: n };
    }
    case "boolean":
      return t === "true" || t === "false" ? { value: t === "true" } : { problem: `${field.key} is true or false.` };
    case "choice": {
      const hit = field.choices?.find((c) => String(c) === t || JSON.stringify(c) === t);
      return hit !== undefined
        ? { value: hit }
        : { problem: `${field.key} is one of ${(field.choices ?? []).map((c) => JSON.stringify(c)).join(", ")}.` };
    }
    case "json":
      try {
        return { value: JSON.parse(t) as Json };
      } catch (e) {
        return { problem: `${field.key} is JSON: ${(e as Error).message}` };
      }
    default: {
      const never: never = field.kind;
      return { problem: `unknown field kind ${String(never)}` };
    }
  }
}

/** The text a field's box starts with: the value given last time, else its default. */
export function fieldStart(field: FormField, previous: Json | undefined): string {
  const v = previous !== undefined ? previous : field.default;
  if (v === undefined) return "";
  return typeof v === "string" ? v : JSON.stringify(v);
}

/** `KEY=VALUE` lines (an env file, as the ERP stand-in task writes one): blank lines and `#` comments skipped, quotes taken off. */
export function parseEnvFile(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split(/\r?\n/)) {
    const m = /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$/.exec(line);
    if (!m || line.trim().startsWith("#")) continue;
    out[m[1]!] = m[2]!.replace(/^(['"])(.*)\1$/, "$2");
  }
  return out;
}
