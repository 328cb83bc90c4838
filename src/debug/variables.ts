import { Handles, Scope } from "@vscode/debugadapter";
import type { DebugProtocol } from "@vscode/debugprotocol";
import type { Json } from "../engine/records";

/**
 * The Variables view's model: plain JSON (what caseView.ts reads at a checkpoint) turned into
 * DAP scopes and expandable variables, each container remembering, under State, the key and path
 * an edit goes to (setVariable = edit-then-fork, session.ts) and the expression that names it
 * (evaluateName, for "Copy as Expression" and watches). Reset whenever the shown checkpoint changes.
 */

/** A variables container: the JSON it shows, and for state, the key and path an edit goes to. */
export interface Container {
  value: Json;
  /** Set under the State scope: the key, and the path inside its value. */
  edit?: { key: string; path: (string | number)[] };
  evaluateName?: string;
  /** The State scope itself: children are the keys. */
  stateRoot?: boolean;
}

export class Variables {
  private readonly handles = new Handles<Container>();

  reset(): void {
    this.handles.reset();
  }

  get(ref: number): Container | undefined {
    return this.handles.get(ref);
  }

  /** The four scopes of a frame: State (editable), Messages, Step and Run (read-only). */
  scopes(at: { state: Record<string, Json>; messages: Json; step: Json; run: Json }): DebugProtocol.Scope[] {
    const scope = (name: string, c: Container): DebugProtocol.Scope => {
      const s = new Scope(name, this.handles.create(c), false) as DebugProtocol.Scope;
      if (c.value && typeof c.value === "object") s.namedVariables = Object.keys(c.value).length;
      return s;
    };
    return [
      scope("State", { value: at.state, stateRoot: true, evaluateName: "state" }),
      scope("Messages", { value: at.messages }),
      scope("Step", { value: at.step }),
      scope("Run", { value: at.run }),
    ];
  }

  /** The children of a container (DAP variables), paged by start and count. */
  children(ref: number, start = 0, count?: number): DebugProtocol.Variable[] {
    const c = this.handles.get(ref);
    if (!c) return [];
    const v = c.value;
    const entries: [string, Json][] = Array.isArray(v)
      ? v.map((x, i) => [String(i), x])
      : v && typeof v === "object"
        ? Object.entries(v)
        : [];
    const slice = count ? entries.slice(start, start + count) : entries.slice(start);
    return slice.map(([name, value]) => {
      const edit = this.editOf(c, name);
      const evaluateName = c.evaluateName
        ? `${c.evaluateName}${Array.isArray(v) ? `[${name}]` : /^[A-Za-z_$][\w$]*$/.test(name) ? `.${name}` : `[${JSON.stringify(name)}]`}`
        : undefined;
      return this.variable(name, value, { ...(edit ? { edit } : {}), ...(evaluateName ? { evaluateName } : {}) });
    });
  }

  /** Where an edit of child `name` of this container goes: the state key and the path inside its value; undefined outside State. */
  editOf(c: Container, name: string): { key: string; path: (string | number)[] } | undefined {
    if (c.stateRoot) return { key: name, path: [] };
    if (!c.edit) return undefined;
    return { key: c.edit.key, path: [...c.edit.path, Array.isArray(c.value) ? Number(name) : name] };
  }

  /** One variable; an object or array gets a container the client expands. */
  variable(name: string, value: Json, c: Omit<Container, "value">): DebugProtocol.Variable {
    const container = value !== null && typeof value === "object";
    const ref = container && Object.keys(value).length > 0 ? this.handles.create({ value, ...c }) : 0;
    const out: DebugProtocol.Variable = {
      name,
      value: preview(value),
      type: value === null ? "null" : Array.isArray(value) ? "array" : typeof value,
      variablesReference: ref,
    };
    if (c.evaluateName) out.evaluateName = c.evaluateName;
    if (Array.isArray(value)) out.indexedVariables = value.length;
    else if (container) out.namedVariables = Object.keys(value).length;
    if (!c.edit) out.presentationHint = { attributes: ["readOnly"] };
    return out;
  }
}

/** A value as one line in the Variables view: scalars as JSON, objects and arrays abbreviated. */
export function preview(v: Json): string {
  if (v === null || typeof v !== "object") return JSON.stringify(v);
  const s = JSON.stringify(v);
  if (s.length <= 80) return s;
  return Array.isArray(v) ? `Array(${v.length})` : `{${Object.keys(v).slice(0, 6).join(", ")}${Object.keys(v).length > 6 ? ", …" : ""}}`;
}

/** `value` with `replacement` at `at` (a path of keys and indexes), for an edit inside a key's value. */
export function setAt(value: Json, at: (string | number)[], replacement: Json): Json {
  if (at.length === 0) return replacement;
  const [head, ...rest] = at;
  if (Array.isArray(value) && typeof head === "number") {
    const copy = [...value];
    copy[head] = setAt(copy[head] ?? null, rest, replacement);
    return copy;
  }
  const obj = value && typeof value === "object" && !Array.isArray(value) ? value : {};
  return { ...obj, [String(head)]: setAt(obj[String(head)] ?? null, rest, replacement) };
}
