/**
 * The DOM helpers every Casefile webview builds with (inspector and graph), and `patch`, which
 * makes a mounted tree look like a freshly rendered one while keeping the nodes that stay. A panel
 * renders its whole state into new, detached DOM and patches the page with it: the select the
 * person has open, the element with keyboard focus, a scroll position, all survive the re-render
 * because the element itself survives. Plain DOM, no framework; event handlers are `on*`
 * properties (never inline attributes: the CSP refuses those) so a patch can carry them over.
 */

type Props<K extends keyof HTMLElementTagNameMap> = Partial<Omit<HTMLElementTagNameMap[K], "style" | "dataset">> & {
  /** `data-*` attributes; `key` (data-key) tells `patch` which old node a new one continues. */
  data?: Record<string, string>;
};
export type Child = string | Node;

/** An element with properties (`className`, `title`, `ariaLabel`, `onclick`, …), `data-*` attributes and children. */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Props<K> = {},
  children: string | Child[] = [],
): HTMLElementTagNameMap[K] {
  const { data, ...rest } = props;
  const node = Object.assign(document.createElement(tag), rest);
  if (data) for (const [k, v] of Object.entries(data)) node.dataset[k] = v;
  if (typeof children === "string") node.textContent = children;
  else node.append(...children);
  return node;
}

/** A codicon (media/codicon.css), hidden from screen readers: the text beside it says the same. */
export function icon(name: string): HTMLElement {
  return el("span", { className: `codicon codicon-${name}`, ariaHidden: "true" });
}

/** A placeholder where a section has nothing to show. */
export function nothing(): Text {
  return document.createTextNode("");
}

export function absent(text: string): HTMLElement {
  return el("p", { className: "absent" }, [icon("info"), ` ${text}`]);
}

export function kv(key: string, value: string): HTMLElement {
  return el("span", { className: "kv-item" }, [el("span", { className: "muted" }, `${key} `), el("code", {}, value)]);
}

export function jsonBlock(value: unknown, className = ""): HTMLElement {
  return el("pre", { className: `json ${className}` }, JSON.stringify(value, null, 2));
}

/**
 * JSON in a table cell: wrapped at spaces to the column's width, never scrolled sideways. A long
 * string without spaces (a URL, an id, a hash) is one token that is never broken mid-word: it is
 * ellipsised when the column is narrower than it, with the full text on hover.
 */
export function jsonInline(value: unknown): HTMLElement {
  const full = JSON.stringify(value, null, 2) ?? "undefined";
  const text = full.length > 2000 ? `${full.slice(0, 2000)}…` : full;
  const parts: (string | Node)[] = [];
  let last = 0;
  for (const m of text.matchAll(/"(?:[^"\\\s]|\\.){24,}"/g)) {
    parts.push(text.slice(last, m.index));
    parts.push(el("span", { className: "json-token", title: m[0] }, m[0]));
    last = m.index + m[0].length;
  }
  parts.push(text.slice(last));
  return el("pre", { className: "json inline" }, parts);
}

export function table(headers: string[], rows: Child[][], className: string): HTMLElement {
  return el("table", { className: `grid ${className}` }, [
    el("thead", {}, [
      el(
        "tr",
        {},
        headers.map((h) => el("th", {}, h)),
      ),
    ]),
    el(
      "tbody",
      {},
      rows.map((r) =>
        el(
          "tr",
          {},
          r.map((c) => el("td", {}, [c])),
        ),
      ),
    ),
  ]);
}

export function clamp(n: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, Number.isFinite(n) ? n : lo));
}

// ---------------------------------------------------------------------------------------------
// patch

const HANDLERS = ["onclick", "onchange", "onkeydown", "onscroll", "oninput"] as const;

/**
 * Makes `parent`'s children `next`, reusing the old nodes that `next` continues: a node of the
 * same tag (and the same data-key, where one is set) keeps its identity and takes the new node's
 * attributes, styles, handlers, select value and children. Called by a panel after each render
 * with the render's output; `next` is consumed (its nodes may be moved into the page).
 */
export function patch(parent: Node, next: readonly Node[]): void {
  for (let i = 0; i < next.length; i++) {
    const n = next[i]!;
    const o = parent.childNodes[i];
    if (o === n) continue;
    if (!o) {
      parent.appendChild(n);
      continue;
    }
    if (same(o, n)) {
      morph(o, n);
      continue;
    }
    // A keyed node further on (a timeline row scrolled up): move it here and update it.
    const key = keyOf(n);
    let found: ChildNode | undefined;
    if (key !== undefined) {
      for (let j = i + 1; j < parent.childNodes.length && !found; j++) if (same(parent.childNodes[j]!, n)) found = parent.childNodes[j];
    }
    if (found) {
      parent.insertBefore(found, o);
      morph(found, n);
    } else parent.insertBefore(n, o);
  }
  while (parent.childNodes.length > next.length) parent.lastChild!.remove();
}

function keyOf(n: Node): string | undefined {
  return n instanceof HTMLElement ? n.dataset.key : undefined;
}

function same(o: Node, n: Node): boolean {
  if (o.nodeType !== n.nodeType) return false;
  if (!(o instanceof Element) || !(n instanceof Element)) return true;
  return o.tagName === n.tagName && keyOf(o) === keyOf(n);
}

function morph(o: Node, n: Node): void {
  if (!(o instanceof HTMLElement) || !(n instanceof HTMLElement)) {
    if (o.nodeValue !== n.nodeValue) o.nodeValue = n.nodeValue;
    return;
  }
  for (const { name } of Array.from(o.attributes)) {
    // `open` on <details> is the person's (they opened the raw answer); `style` goes through CSSOM below.
    if (name === "style" || (name === "open" && o instanceof HTMLDetailsElement)) continue;
    if (!n.hasAttribute(name)) o.removeAttribute(name);
  }
  for (const { name, value } of Array.from(n.attributes)) {
    if (name !== "style" && o.getAttribute(name) !== value) o.setAttribute(name, value);
  }
  // Through the CSSOM: the CSP (style-src without 'unsafe-inline') refuses style attributes.
  for (const prop of Array.from(o.style)) if (!n.style.getPropertyValue(prop)) o.style.removeProperty(prop);
  for (const prop of Array.from(n.style)) {
    const v = n.style.getPropertyValue(prop);
    if (o.style.getPropertyValue(prop) !== v) o.style.setProperty(prop, v);
  }
  // One handler property at a time; the union of their types cannot be assigned as one.
  const handlers = o as unknown as Record<(typeof HANDLERS)[number], unknown>;
  const fresh = n as unknown as Record<(typeof HANDLERS)[number], unknown>;
  for (const h of HANDLERS) if (handlers[h] !== fresh[h]) handlers[h] = fresh[h];
  const value = n instanceof HTMLSelectElement ? n.value : undefined;
  patch(o, Array.from(n.childNodes));
  if (o instanceof HTMLSelectElement && value !== undefined && o.value !== value) o.value = value;
}
