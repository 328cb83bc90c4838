import vm from "node:vm";
import type { Evaluation, EvaluationScope } from "../protocol/debug";

/**
 * JavaScript expressions over a checkpoint's state and message, for the debugger's breakpoint
 * conditions, logpoint `{…}` parts, hovers and Debug Console evaluate
 * (`state.lines.some(l => l.qty > 10)`, `message.amount * 1.2 > 100`). Evaluated in the runner's
 * debug helper process (debugHelper.ts), never in the editor: an expression is the user's code,
 * run where the workflow's own code runs (a trusted workspace only; the debugger starts no session
 * in Restricted Mode). Each request gets a fresh `vm` context holding copies of the values, parsed
 * from JSON inside the context (data, never live objects, and nothing an expression changes
 * outlives the request), and everything an expression does, down to describing its value, runs
 * under the time limit: `while (true) {}` is cut off, never hangs the session.
 */

/** The names an expression reads, besides each state key by its own name (`variance`, as hovers send it). */
const SCOPE_NAMES = ["state", "message", "messages"] as const;

// Runs inside the context: the value described as JSON text, a primitive that crosses realms.
const PRELUDE = `
(() => {
  const input = JSON.parse(globalThis.__casefileInput);
  delete globalThis.__casefileInput;
  const builtins = new Set(Object.getOwnPropertyNames(globalThis));
  for (const [k, v] of Object.entries(input.state || {})) if (!builtins.has(k)) globalThis[k] = v;
  for (const k of ${JSON.stringify(SCOPE_NAMES)}) globalThis[k] = input[k] === undefined ? null : input[k];
  globalThis.__casefileDescribe = (v) => {
    const type = v === null ? "null" : Array.isArray(v) ? "array" : typeof v;
    const out = { ok: true, type, truthy: !!v };
    if (type === "function") out.display = "function " + (v.name || "(anonymous)");
    else if (type === "symbol" || type === "undefined") out.display = String(v);
    else if (type === "bigint") out.display = v.toString() + "n";
    else if (type === "number" && !Number.isFinite(v)) out.display = String(v);
    else {
      try {
        const j = JSON.stringify(v);
        if (j === undefined) out.display = String(v);
        else out.value = JSON.parse(j);
      } catch (e) {
        out.display = Object.prototype.toString.call(v) + " (not JSON: " + String(e && e.message) + ")";
      }
    }
    return JSON.stringify(out);
  };
  globalThis.__casefileFailed = (e) => {
    let error;
    try {
      error = e && typeof e === "object" && "message" in e ? (e.name ? e.name + ": " : "") + String(e.message) : "threw " + String(e);
    } catch {
      error = "threw a value that cannot be shown";
    }
    return JSON.stringify({ ok: false, kind: "thrown", error });
  };
})();
`;

/** Why an expression does not parse as JavaScript (a syntax error, said as V8 says it), or undefined. Compiles only: runs nothing. */
export function syntaxProblem(expression: string): string | undefined {
  const compiles = (src: string): string | undefined => {
    try {
      new vm.Script(src, { filename: "expression" });
      return undefined;
    } catch (e) {
      return e instanceof Error ? e.message : String(e);
    }
  };
  if (compiles(`(${expression}\n)`) === undefined) return undefined;
  // Said for the text as written (the parentheses it is wrapped in are not the user's).
  return compiles(expression) ?? "not one expression (statements are not evaluated: write an expression)";
}

/**
 * Evaluates each expression over the scope, in order, in one fresh context; each one (and the
 * context's setup) may run for `timeoutMs` at most. Never throws: a syntax error, a throw or a
 * timeout is that expression's result.
 */
export function evaluateExpressions(expressions: readonly string[], scope: EvaluationScope, timeoutMs: number): Evaluation[] {
  const sandbox: Record<string, unknown> = { __casefileInput: JSON.stringify(scope) };
  const context = vm.createContext(sandbox, { name: "casefile expression", microtaskMode: "afterEvaluate" });
  const limit = { timeout: timeoutMs, breakOnSigint: false };
  try {
    new vm.Script(PRELUDE, { filename: "casefile-prelude" }).runInContext(context, limit);
  } catch (e) {
    const failed = timedOut(e, timeoutMs) ?? {
      ok: false as const,
      kind: "thrown" as const,
      error: `the values could not be read: ${String(e)}`,
    };
    return expressions.map(() => failed);
  }
  return expressions.map((expression): Evaluation => {
    const syntax = syntaxProblem(expression);
    if (syntax) return { ok: false, kind: "syntax", error: syntax };
    try {
      const script = new vm.Script(`try { __casefileDescribe((${expression}\n)) } catch (e) { __casefileFailed(e) }`, {
        filename: "expression",
      });
      const said: unknown = script.runInContext(context, limit);
      if (typeof said !== "string")
        return { ok: false, kind: "thrown", error: "the expression did not end where it should (is it one expression?)" };
      return JSON.parse(said) as Evaluation;
    } catch (e) {
      return timedOut(e, timeoutMs) ?? { ok: false, kind: "thrown", error: e instanceof Error ? e.message : String(e) };
    }
  });
}

function timedOut(e: unknown, timeoutMs: number): Evaluation | undefined {
  if ((e as { code?: string } | null)?.code !== "ERR_SCRIPT_EXECUTION_TIMEOUT") return undefined;
  return { ok: false, kind: "timeout", error: `it ran longer than ${timeoutMs} ms and was stopped` };
}
