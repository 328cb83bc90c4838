import { diffArrays, diffLines } from "diff";
import type { ChangeObject } from "diff";
import type { ContextView } from "../protocol/webview";

/**
 * The Context tab's diff of two recorded contexts, message by message (pure: tested without a
 * browser). Messages are aligned with jsdiff's array diff (equal = same role and content); a
 * removed message followed by an added one is one changed message, whose content is diffed by
 * line and, inside changed lines, by word. jsdiff gives up (and the whole text counts as changed)
 * past EDIT_LIMIT edits, so a long prompt that changed throughout cannot stall the panel.
 */

export type Change = "same" | "added" | "removed";
export interface Segment {
  text: string;
  change: Change;
}

type Message = ContextView["messages"][number];

export interface MessageDiff {
  /** same and changed: in both; removed: only in the context compared with; added: only in this one. */
  change: "same" | "changed" | "added" | "removed";
  before: Message | undefined;
  after: Message | undefined;
  /** The content, marked: for same, one unchanged segment; for added or removed, the whole text. */
  segments: Segment[];
}

export interface ContextDiff {
  /** Same request hash: the same messages, model, parameters and response schema. */
  sameHash: boolean;
  /** Every message the same, in the same order (the hash may still differ: model or parameters). */
  sameMessages: boolean;
  messages: MessageDiff[];
}

const EDIT_LIMIT = 4000;

/** What a diff reads of a context: the Run Inspector's ContextView, or an experiment's request under one variant. */
export type ContextSides = Pick<ContextView, "hash" | "messages">;

/** `before` is the context picked to compare with, `after` the one of the step shown. */
export function diffContexts(before: ContextSides, after: ContextSides): ContextDiff {
  const aligned = diffArrays(before.messages, after.messages, {
    comparator: (a: Message, b: Message) => a.role === b.role && a.content === b.content,
  });
  const messages: MessageDiff[] = [];
  let removed: Message[] = [];
  /** How many of `after`'s messages the diff has passed. */
  let inAfter = 0;
  const flushRemoved = (): void => {
    for (const m of removed)
      messages.push({ change: "removed", before: m, after: undefined, segments: [{ text: m.content, change: "removed" }] });
    removed = [];
  };
  for (const part of aligned) {
    if (part.removed) {
      flushRemoved();
      removed = [...part.value];
    } else if (part.added) {
      const paired = Math.min(removed.length, part.value.length);
      for (let i = 0; i < paired; i++) {
        const b = removed[i]!;
        const a = part.value[i]!;
        messages.push({ change: "changed", before: b, after: a, segments: diffText(b.content, a.content) });
      }
      inAfter += part.value.length;
      removed = removed.slice(paired);
      flushRemoved();
      for (const a of part.value.slice(paired)) {
        messages.push({ change: "added", before: undefined, after: a, segments: [{ text: a.content, change: "added" }] });
      }
    } else {
      flushRemoved();
      for (const b of part.value) {
        // Equal by role and content; `after` is this context's own message, with its token count.
        const a = after.messages[inAfter] ?? b;
        messages.push({ change: "same", before: b, after: a, segments: [{ text: b.content, change: "same" }] });
        inAfter++;
      }
    }
  }
  flushRemoved();
  return { sameHash: before.hash === after.hash, sameMessages: messages.every((m) => m.change === "same"), messages };
}

/** Line by line; inside a run of changed lines, word by word. */
export function diffText(before: string, after: string): Segment[] {
  const lines = diffLines(before, after, { maxEditLength: EDIT_LIMIT });
  if (!lines) return wholeChange(before, after);
  const out: Segment[] = [];
  for (let i = 0; i < lines.length; i++) {
    const part = lines[i]!;
    const next = lines[i + 1];
    if (part.removed && next?.added) {
      // Words are what whitespace separates: "1840.50" -> "18405.00" is one changed number, not
      // three pieces around a kept ".", as jsdiff's own word diff would split it.
      const words = diffArrays(tokens(part.value), tokens(next.value), { maxEditLength: EDIT_LIMIT });
      out.push(...(words ? words.map((w) => segment({ ...w, value: w.value.join("") })) : wholeChange(part.value, next.value)));
      i++;
    } else {
      out.push(segment(part));
    }
  }
  return merge(out);
}

function tokens(text: string): string[] {
  return text.split(/(\s+)/).filter((t) => t.length > 0);
}

function segment(c: ChangeObject<string>): Segment {
  return { text: c.value, change: c.added ? "added" : c.removed ? "removed" : "same" };
}

function wholeChange(before: string, after: string): Segment[] {
  return [
    { text: before, change: "removed" },
    { text: after, change: "added" },
  ].filter((s) => s.text !== "") as Segment[];
}

/** Neighbouring segments of the same kind as one (fewer DOM nodes, cleaner marks). */
function merge(segments: Segment[]): Segment[] {
  const out: Segment[] = [];
  for (const s of segments) {
    const last = out[out.length - 1];
    if (last && last.change === s.change) last.text += s.text;
    else if (s.text !== "") out.push({ ...s });
  }
  return out;
}
