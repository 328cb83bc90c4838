/**
 * Where each executor is defined in a workflow file: the line of `name: kind({` in the
 * `executors` object of `defineWorkflow({...})` and the line its definition ends on. The debugger
 * uses it for the Call Stack's frames (click opens the definition) and to place a line breakpoint
 * on the first line of the executor it falls in. A scan of the text (strings, template literals,
 * comments and regular expressions skipped), not a bundle: the adapter never runs workflow code,
 * and the TypeScript compiler is too heavy to ship in the CLI for this.
 */

export interface ExecutorSource {
  name: string;
  /** The helper it is made with (`loader`, `code`, `agent`, `commit`, `effect`, `request`), when the scan sees one. */
  kind?: string;
  /** 1-based lines: the executor's name, and the last line of its definition. */
  line: number;
  column: number;
  endLine: number;
}

/** Masks strings, template literals, comments and regex literals with spaces, keeping line breaks. */
function codeOnly(src: string): string {
  const out = src.split("");
  const blank = (from: number, to: number): void => {
    for (let k = from; k < to && k < out.length; k++) if (out[k] !== "\n") out[k] = " ";
  };
  let i = 0;
  let lastSignificant = "";
  while (i < src.length) {
    const c = src[i]!;
    const next = src[i + 1];
    if (c === "/" && next === "/") {
      const end = src.indexOf("\n", i);
      const to = end < 0 ? src.length : end;
      blank(i, to);
      i = to;
      continue;
    }
    if (c === "/" && next === "*") {
      const end = src.indexOf("*/", i + 2);
      const to = end < 0 ? src.length : end + 2;
      blank(i, to);
      i = to;
      continue;
    }
    if (c === '"' || c === "'" || c === "`") {
      let j = i + 1;
      let depth = 0;
      while (j < src.length) {
        if (src[j] === "\\") {
          j += 2;
          continue;
        }
        if (c === "`" && src[j] === "$" && src[j + 1] === "{") depth++;
        else if (c === "`" && depth > 0 && src[j] === "}") depth--;
        else if (src[j] === c && depth === 0) break;
        j++;
      }
      blank(i + 1, j);
      i = j + 1;
      lastSignificant = c;
      continue;
    }
    if (c === "/" && (lastSignificant === "" || /[(,=:[!&|?{};+\-*%<>~^]/.test(lastSignificant) || /\breturn\s*$/.test(src.slice(0, i)))) {
      let j = i + 1;
      let inClass = false;
      while (j < src.length && src[j] !== "\n") {
        if (src[j] === "\\") j++;
        else if (src[j] === "[") inClass = true;
        else if (src[j] === "]") inClass = false;
        else if (src[j] === "/" && !inClass) break;
        j++;
      }
      blank(i + 1, j);
      i = j + 1;
      lastSignificant = "/";
      continue;
    }
    if (!/\s/.test(c)) lastSignificant = c;
    i++;
  }
  return out.join("");
}

/** 1-based line and column of an offset. */
function position(src: string, offset: number): { line: number; column: number } {
  let line = 1;
  let start = 0;
  for (let k = 0; k < offset; k++) {
    if (src.charCodeAt(k) === 10) {
      line++;
      start = k + 1;
    }
  }
  return { line, column: offset - start + 1 };
}

/** The offset of the bracket closing the one at `open`, in masked code; -1 when unbalanced. */
function closing(code: string, open: number): number {
  let depth = 0;
  for (let k = open; k < code.length; k++) {
    const c = code[k];
    if (c === "{" || c === "(" || c === "[") depth++;
    else if (c === "}" || c === ")" || c === "]") {
      depth--;
      if (depth === 0) return k;
    }
  }
  return -1;
}

/**
 * The executors defined in a workflow file's `executors: { ... }` object, in source order. A
 * shorthand (`load,`) or a name bound to a variable (`load: loadStep`) points at that variable's
 * `const` definition when the file has one. Returns [] when the file has no executors object.
 */
export function scanExecutors(src: string): ExecutorSource[] {
  const code = codeOnly(src);
  const head = /\bexecutors\s*:\s*\{/.exec(code);
  if (!head) return [];
  const open = head.index + head[0].length - 1;
  const close = closing(code, open);
  const end = close < 0 ? code.length : close;
  const found: ExecutorSource[] = [];
  let k = open + 1;
  while (k < end) {
    // One property: `name: value,` at depth 1 of the object.
    const rest = code.slice(k, end);
    const prop = /^\s*(?:(["'])((?:(?!\1).)*)\1|([A-Za-z_$][\w$]*))\s*(:|,|$|\s*\})/s.exec(rest);
    if (!prop) {
      k++;
      continue;
    }
    // A quoted key is masked in `code`: read the name from the source.
    const nameAt = k + prop[0].indexOf(prop[2] !== undefined ? prop[1]! : prop[3]!);
    const name = prop[2] !== undefined ? src.slice(nameAt + 1, nameAt + 1 + prop[2].length) : prop[3]!;
    let valueEnd = k + prop[0].length;
    let kind: string | undefined;
    let where = position(src, nameAt);
    let last = where.line;
    if (prop[4] === ":") {
      // The value runs to the next comma at this depth.
      let j = valueEnd;
      let depth = 0;
      for (; j < end; j++) {
        const c = code[j];
        if (c === "{" || c === "(" || c === "[") depth++;
        else if (c === "}" || c === ")" || c === "]") depth--;
        else if (c === "," && depth === 0) break;
      }
      const value = code.slice(valueEnd, j).trim();
      const call = /^([A-Za-z_$][\w$]*)\s*(?:<[^>]*>)?\s*\(/.exec(value);
      const bound = /^([A-Za-z_$][\w$]*)$/.exec(value);
      const def = bound ? definitionOf(src, code, bound[1]!) : undefined;
      if (def) ({ where, last, kind } = def);
      else {
        kind = call?.[1];
        last = position(src, valueEnd + code.slice(valueEnd, j).trimEnd().length).line;
      }
      valueEnd = j + 1;
    } else {
      const def = definitionOf(src, code, name);
      if (def) ({ where, last, kind } = def);
      valueEnd = prop[4] === "," ? valueEnd : end;
    }
    found.push({ name, ...(kind ? { kind } : {}), line: where.line, column: where.column, endLine: Math.max(last, where.line) });
    k = valueEnd;
  }
  return found;
}

/** `const name = kind(...)` at any depth: its position, its helper and the line it ends on. */
function definitionOf(
  src: string,
  code: string,
  name: string,
): { where: { line: number; column: number }; last: number; kind?: string } | undefined {
  const m = new RegExp(
    `\\b(?:const|let|var)\\s+${name.replace(/\$/g, "\\$")}\\b[^=]*=\\s*([A-Za-z_$][\\w$]*)?\\s*(?:<[^>]*>)?\\s*\\(`,
  ).exec(code);
  if (!m) return undefined;
  const paren = m.index + m[0].length - 1;
  const close = closing(code, paren);
  return {
    where: position(src, m.index),
    last: position(src, close < 0 ? paren : close).line,
    ...(m[1] ? { kind: m[1] } : {}),
  };
}

/** The executor whose definition holds `line` (1-based), if any. */
export function executorAtLine(sources: readonly ExecutorSource[], line: number): ExecutorSource | undefined {
  return sources.find((s) => line >= s.line && line <= s.endLine);
}
