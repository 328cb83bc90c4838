import { z } from "zod";
import { CasefileError, describeReturned, errorMessage } from "./errors";
import { stableHash } from "./hash";
import type { ModelRequest } from "./model";
import type { ChatMessage, Json } from "./records";

/**
 * Turns what an agent step's `context(state)` returned into the exact request that is recorded,
 * hashed, token-counted and sent. Called by the agent step once per model call, before anything
 * else happens with the request, so the record, the hash and the provider all see one value.
 */

export interface BuildModelRequestInput {
  /** Executor id of the agent step; named in every error. */
  step: string;
  messages: readonly ChatMessage[];
  model: string;
  params?: Record<string, Json>;
  /** The step's proposal schema; sent to the model as JSON Schema. */
  responseSchema: z.ZodType;
  callIndex: number;
}

const roles = new Set<ChatMessage["role"]>(["system", "user", "assistant"]);

/**
 * Builds the request. The hash covers messages, model, params and the JSON Schema (not the step
 * or call index), so the same state gives the same hash in any run, process or machine; it is
 * computed over canonical JSON, so key order in params or in the schema never matters.
 *
 * Messages and params are copied through JSON: the request holds only what will actually be
 * sent and recorded, and a caller mutating its own objects later cannot change it.
 */
export function buildModelRequest(input: BuildModelRequestInput): ModelRequest {
  const { step, model, callIndex } = input;
  if (typeof model !== "string" || model.length === 0) {
    throw new CasefileError("INVALID_WORKFLOW", `step "${step}": no model given for the request`, { step });
  }
  if (!Array.isArray(input.messages)) {
    throw new CasefileError(
      "INVALID_WORKFLOW",
      `step "${step}": context returned ${describeReturned(input.messages)}, not an array of { role, content } messages`,
      { step },
    );
  }
  const messages = input.messages.map((m, i) => checkMessage(step, m, i));
  const params = copyJson(step, "params", input.params ?? {}) as Record<string, Json>;
  const responseSchema = toResponseSchema(step, input.responseSchema);
  const hash = requestHash({ messages, model, params, responseSchema });
  return { step, messages, model, params, responseSchema, hash, callIndex };
}

/**
 * The hash of a request's content. Exported so replay can recompute the hash of a recorded
 * request (AgentCallRecord.request) and compare it with a new one.
 */
export function requestHash(request: {
  messages: readonly ChatMessage[];
  model: string;
  params: Record<string, Json>;
  responseSchema: Json;
}): string {
  return stableHash({
    messages: request.messages,
    model: request.model,
    params: request.params,
    responseSchema: request.responseSchema,
  });
}

/**
 * JSON Schema for a proposal schema, with zod 4's own converter. Output types are used (the
 * default): a plain z.object then gives `additionalProperties: false`, which OpenAI's strict
 * structured output requires. A schema zod cannot express (transforms, dates) is a workflow
 * definition fault, reported with the step.
 */
export function toResponseSchema(step: string, schema: z.ZodType): Json {
  try {
    return z.toJSONSchema(schema) as Json;
  } catch (e) {
    throw new CasefileError(
      "INVALID_WORKFLOW",
      `step "${step}": the response schema cannot be expressed as JSON Schema: ${errorMessage(e)}`,
      { step },
    );
  }
}

function checkMessage(step: string, m: ChatMessage, index: number): ChatMessage {
  if (!m || typeof m !== "object" || !roles.has(m.role)) {
    throw new CasefileError(
      "INVALID_WORKFLOW",
      `step "${step}": context message ${index} has role ${JSON.stringify((m as { role?: unknown })?.role)}; expected system, user or assistant`,
      { step, index },
    );
  }
  if (typeof m.content !== "string") {
    throw new CasefileError("INVALID_WORKFLOW", `step "${step}": context message ${index} content is not a string`, {
      step,
      index,
    });
  }
  return { role: m.role, content: m.content };
}

/**
 * A JSON copy that refuses values JSON would silently change (NaN, Infinity, functions,
 * undefined inside arrays, class instances such as Date): a hash over a silently altered
 * value would hide a real difference between two requests.
 */
function copyJson(step: string, path: string, value: unknown): Json {
  const fail = (at: string, what: string): never => {
    throw new CasefileError("INVALID_WORKFLOW", `step "${step}": ${at} is ${what}, which is not JSON`, {
      step,
      path: at,
    });
  };
  const walk = (v: unknown, at: string): Json => {
    if (v === null || typeof v === "string" || typeof v === "boolean") return v;
    if (typeof v === "number") return Number.isFinite(v) ? v : fail(at, String(v));
    if (Array.isArray(v)) return v.map((x, i) => walk(x, `${at}[${i}]`));
    if (typeof v === "object") {
      const proto = Object.getPrototypeOf(v);
      if (proto !== Object.prototype && proto !== null) return fail(at, `a ${proto.constructor?.name ?? "class"} instance`);
      const out: { [k: string]: Json } = {};
      for (const [k, x] of Object.entries(v)) {
        if (x === undefined) continue; // dropped, as JSON.stringify and canonicalJson do
        out[k] = walk(x, `${at}.${k}`);
      }
      return out;
    }
    return fail(at, typeof v);
  };
  return walk(value, path);
}
