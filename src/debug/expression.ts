/**
 * A small expression language over JSON, for the debugger's breakpoint conditions, logpoints,
 * hovers and Debug Console evaluate: `state.variance.pct > 5`, `message.verdict === "accepted"`,
 * `state.invoice.value.lines.length`. State is JSON data, so it is evaluated here, in the adapter,
 * by this interpreter rather than by running JavaScript: nothing the expression says can reach a
 * function, a prototype or the process (only own properties of plain data are read, `length` of
 * strings and arrays), and it needs no trusted workspace. Evaluated where the checkpoints are
 * read, the same expression means the same at a live boundary and at a checkpoint in history
 * (Reverse Continue: no runner holds that state), and it still answers while the runner is
 * paused in js-debug (a runner-side evaluator would wait on the paused thread). JavaScript
 * conditions belong on js-debug's breakpoints inside executor code. Called by the boundary
 * decision and the paused view (boundary.ts, breakpoints.ts, pausedView.ts).
 */

export class ExpressionError extends Error {}

type Token = { t: "num"; v: number } | { t: "str"; v: string } | { t: "id"; v: string } | { t: "op"; v: string } | { t: "end" };

const OPS = [
  "===",
  "!==",
  "?.",
  "??",
  "==",
  "!=",
  "<=",
  ">=",
  "&&",
  "||",
  "<",
  ">",
  "+",
  "-",
  "*",
  "/",
  "%",
  "!",
  "(",
  ")",
  "[",
  "]",
  ".",
  "?",
  ":",
  ",",
];

function tokenize(src: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i]!;
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    if (/[0-9]/.test(c) || (c === "." && /[0-9]/.test(src[i + 1] ?? ""))) {
      const m = /^(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?/.exec(src.slice(i))!;
      out.push({ t: "num", v: Number(m[0]) });
      i += m[0].length;
      continue;
    }
    if (c === '"' || c === "'") {
      let j = i + 1;
      let v = "";
      while (j < src.length && src[j] !== c) {
        if (src[j] === "\\") {
          const n = src[j + 1];
          v += n === "n" ? "\n" : n === "t" ? "\t" : (n ?? "");
          j += 2;
        } else v += src[j++];
      }
      if (j >= src.length) throw new ExpressionError(`unterminated string starting at column ${i + 1}`);
      out.push({ t: "str", v });
      i = j + 1;
      continue;
    }
    const id = /^[A-Za-z_$][\w$]*/.exec(src.slice(i));
    if (id) {
      out.push({ t: "id", v: id[0] });
      i += id[0].length;
      continue;
    }
    const op = OPS.find((o) => src.startsWith(o, i));
    if (!op) throw new ExpressionError(`unexpected "${c}" at column ${i + 1}`);
    out.push({ t: "op", v: op });
    i += op.length;
  }
  out.push({ t: "end" });
  return out;
}

type Node =
  | { k: "lit"; v: unknown }
  | { k: "id"; name: string }
  | { k: "member"; obj: Node; prop: Node; optional: boolean }
  | { k: "unary"; op: string; arg: Node }
  | { k: "binary"; op: string; left: Node; right: Node }
  | { k: "cond"; test: Node; then: Node; else: Node }
  | { k: "array"; items: Node[] };

const BINARY: string[][] = [["??"], ["||"], ["&&"], ["==", "!=", "===", "!=="], ["<", "<=", ">", ">="], ["+", "-"], ["*", "/", "%"]];

function parse(src: string): Node {
  const toks = tokenize(src);
  let p = 0;
  const peek = (): Token => toks[p]!;
  const isOp = (v: string): boolean => {
    const t = peek();
    return t.t === "op" && t.v === v;
  };
  const expect = (v: string): void => {
    if (!isOp(v)) throw new ExpressionError(`expected "${v}" ${where()}`);
    p++;
  };
  const where = (): string => {
    const t = peek();
    return t.t === "end" ? "at the end" : `before ${JSON.stringify(t.v)}`;
  };

  const cond = (): Node => {
    const test = binary(0);
    if (!isOp("?")) return test;
    p++;
    const then = cond();
    expect(":");
    return { k: "cond", test, then, else: cond() };
  };
  const binary = (level: number): Node => {
    if (level >= BINARY.length) return unary();
    let left = binary(level + 1);
    for (;;) {
      const t = peek();
      if (t.t !== "op" || !BINARY[level]!.includes(t.v)) return left;
      p++;
      left = { k: "binary", op: t.v, left, right: binary(level + 1) };
    }
  };
  const unary = (): Node => {
    const t = peek();
    if (t.t === "op" && (t.v === "!" || t.v === "-" || t.v === "+")) {
      p++;
      return { k: "unary", op: t.v, arg: unary() };
    }
    if (t.t === "id" && t.v === "typeof") {
      p++;
      return { k: "unary", op: "typeof", arg: unary() };
    }
    return postfix(primary());
  };
  const postfix = (node: Node): Node => {
    for (;;) {
      if (isOp(".") || isOp("?.")) {
        const optional = peek().t === "op" && (peek() as { v: string }).v === "?.";
        p++;
        if (isOp("[")) {
          p++;
          const prop = cond();
          expect("]");
          node = { k: "member", obj: node, prop, optional };
          continue;
        }
        const t = peek();
        if (t.t !== "id") throw new ExpressionError(`expected a property name ${where()}`);
        p++;
        node = { k: "member", obj: node, prop: { k: "lit", v: t.v }, optional };
      } else if (isOp("[")) {
        p++;
        const prop = cond();
        expect("]");
        node = { k: "member", obj: node, prop, optional: false };
      } else if (isOp("(")) {
        throw new ExpressionError("calls are not supported: expressions read the paused state, they run no code");
      } else return node;
    }
  };
  const primary = (): Node => {
    const t = peek();
    p++;
    if (t.t === "num" || t.t === "str") return { k: "lit", v: t.v };
    if (t.t === "id") {
      if (t.v === "true") return { k: "lit", v: true };
      if (t.v === "false") return { k: "lit", v: false };
      if (t.v === "null") return { k: "lit", v: null };
      if (t.v === "undefined") return { k: "lit", v: undefined };
      return { k: "id", name: t.v };
    }
    if (t.t === "op" && t.v === "(") {
      const e = cond();
      expect(")");
      return e;
    }
    if (t.t === "op" && t.v === "[") {
      const items: Node[] = [];
      while (!isOp("]")) {
        items.push(cond());
        if (!isOp(",")) break;
        p++;
      }
      expect("]");
      return { k: "array", items };
    }
    p--;
    throw new ExpressionError(t.t === "end" ? "the expression ends too early" : `unexpected ${JSON.stringify(t.v)}`);
  };

  const node = cond();
  if (peek().t !== "end") throw new ExpressionError(`unexpected ${where().replace("before ", "")}`);
  return node;
}

/** Reads a property of plain JSON data: own properties only, and `length` of strings and arrays. */
function member(obj: unknown, prop: unknown): unknown {
  if (obj === null || obj === undefined) return undefined;
  if ((typeof obj === "string" || Array.isArray(obj)) && prop === "length") return obj.length;
  if (typeof obj !== "object") return undefined;
  const key = typeof prop === "number" ? String(prop) : prop;
  if (typeof key !== "string") throw new ExpressionError(`a property name must be a string or a number, not ${typeof prop}`);
  return Object.hasOwn(obj, key) ? (obj as Record<string, unknown>)[key] : undefined;
}

function run(node: Node, scope: Record<string, unknown>): unknown {
  switch (node.k) {
    case "lit":
      return node.v;
    case "id":
      if (Object.hasOwn(scope, node.name)) return scope[node.name];
      // A bare state key reads that key (a hover over `variance` in the workflow file).
      if (scope.state && typeof scope.state === "object" && Object.hasOwn(scope.state, node.name))
        return (scope.state as Record<string, unknown>)[node.name];
      throw new ExpressionError(`"${node.name}" is not defined: use state, message${scope.state ? " or a state key" : ""}`);
    case "member": {
      const obj = run(node.obj, scope);
      if ((obj === null || obj === undefined) && node.optional) return undefined;
      if (obj === null || obj === undefined) {
        const prop = run(node.prop, scope);
        throw new ExpressionError(`cannot read "${String(prop)}" of ${obj === null ? "null" : "undefined"}`);
      }
      return member(obj, run(node.prop, scope));
    }
    case "unary": {
      const v = run(node.arg, scope);
      if (node.op === "!") return !v;
      if (node.op === "typeof") return v === null ? "null" : Array.isArray(v) ? "array" : typeof v;
      return node.op === "-" ? -(v as number) : +(v as number);
    }
    case "binary": {
      const l = run(node.left, scope);
      if (node.op === "&&") return l ? run(node.right, scope) : l;
      if (node.op === "||") return l ? l : run(node.right, scope);
      if (node.op === "??") return l ?? run(node.right, scope);
      const r = run(node.right, scope);
      switch (node.op) {
        case "==":
        case "===":
          return equal(l, r);
        case "!=":
        case "!==":
          return !equal(l, r);
        case "<":
          return (l as number) < (r as number);
        case "<=":
          return (l as number) <= (r as number);
        case ">":
          return (l as number) > (r as number);
        case ">=":
          return (l as number) >= (r as number);
        case "+":
          return typeof l === "string" || typeof r === "string" ? text(l) + text(r) : (l as number) + (r as number);
        case "-":
          return (l as number) - (r as number);
        case "*":
          return (l as number) * (r as number);
        case "/":
          return (l as number) / (r as number);
        case "%":
          return (l as number) % (r as number);
      }
      throw new ExpressionError(`unknown operator ${node.op}`);
    }
    case "cond":
      return run(node.test, scope) ? run(node.then, scope) : run(node.else, scope);
    case "array":
      return node.items.map((i) => run(i, scope));
    default: {
      const never: never = node;
      throw new ExpressionError(`unknown expression ${JSON.stringify(never)}`);
    }
  }
}

/** Strict equality for scalars; objects and arrays compare by their JSON. */
function equal(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a && b && typeof a === "object" && typeof b === "object") return JSON.stringify(a) === JSON.stringify(b);
  return false;
}

/** How a value reads in a logpoint's message: strings as they are, anything else as JSON. */
export function text(v: unknown): string {
  if (typeof v === "string") return v;
  if (v === undefined) return "undefined";
  return JSON.stringify(v);
}

/** Evaluates `expression` with the names in `scope` (state, message). Throws ExpressionError saying what is wrong. */
export function evaluate(expression: string, scope: Record<string, unknown>): unknown {
  return run(parse(expression), scope);
}

/** A logpoint's message with each `{expression}` replaced by its value; an expression that fails says why in its place. */
export function interpolate(template: string, scope: Record<string, unknown>): string {
  return template.replace(/\{([^{}]+)\}/g, (_, expr: string) => {
    try {
      return text(evaluate(expr, scope));
    } catch (e) {
      return `<${(e as Error).message}>`;
    }
  });
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
