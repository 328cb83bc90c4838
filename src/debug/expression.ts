/**
 * What the adapter itself reads of breakpoints and logpoints: hit conditions (`3`, `>= 2`, `% 2`),
 * a logpoint's `{expression}` parts, and how a value reads in a line. The expressions themselves
 * are JavaScript, evaluated by the debug helper in the runner (src/runner/evaluate.ts,
 * src/debug/debugHelper.ts), never here.
 */

export class ExpressionError extends Error {}

/** How a value reads in a logpoint's message: strings as they are, anything else as JSON. */
export function text(v: unknown): string {
  if (typeof v === "string") return v;
  if (v === undefined) return "undefined";
  return JSON.stringify(v);
}

/**
 * A logpoint's message split into text and `{expression}` parts; braces inside an expression
 * nest (`{state.lines.map((l) => ({ sku: l.sku }))}`). An unclosed `{` is text.
 */
export function templateParts(template: string): (string | { expr: string })[] {
  const parts: (string | { expr: string })[] = [];
  let textSoFar = "";
  let i = 0;
  while (i < template.length) {
    const c = template[i]!;
    if (c !== "{") {
      textSoFar += c;
      i++;
      continue;
    }
    let depth = 0;
    let j = i;
    for (; j < template.length; j++) {
      if (template[j] === "{") depth++;
      else if (template[j] === "}" && --depth === 0) break;
    }
    const expr = template.slice(i + 1, j).trim();
    if (j >= template.length || !expr) {
      textSoFar += template.slice(i, j + 1);
      i = j + 1;
      continue;
    }
    if (textSoFar) parts.push(textSoFar);
    textSoFar = "";
    parts.push({ expr });
    i = j + 1;
  }
  if (textSoFar) parts.push(textSoFar);
  return parts;
}

/**
 * A breakpoint's hit condition (`3`, `>= 2`, `% 2`, `< 4`...): does the `hits`-th hit stop?
 * Throws ExpressionError for anything else.
 */
export function hitConditionMet(condition: string, hits: number): boolean {
  const m = /^\s*(>=|<=|==|>|<|%)?\s*(\d+)\s*$/.exec(condition);
  if (!m) throw new ExpressionError(`hit condition "${condition}" is not a count: use N, >= N, > N, == N, < N, <= N or % N`);
  const n = Number(m[2]);
  switch (m[1]) {
    case ">=":
      return hits >= n;
    case ">":
      return hits > n;
    case "<":
      return hits < n;
    case "<=":
      return hits <= n;
    case "%":
      return n > 0 && hits % n === 0;
    case "==":
      return hits === n;
    default:
      // A bare count ignores the hits before it, as js-debug's does: it stops from the Nth hit on.
      return hits >= n;
  }
}
