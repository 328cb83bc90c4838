import { z } from "zod";

/**
 * The Run Inspector's timeline on the wire: one column per field instead of one object per
 * superstep. The webview parses every message with zod, run jitless because the panel's CSP
 * forbids eval, and there every array element costs a parser run (~100 ns or more): one object per
 * superstep, each with a step object inside, made the schema parse most of a 10,000-superstep
 * run's first paint. So the columns that hold numbers and fixed codes travel as one string each,
 * checked by one linear regex (a character class, nothing that backtracks) and decoded by the
 * schema's transform, and the columns of free text (ids, timestamps) as one string with the ends
 * of its entries (`PackedStrings`); errors are listed only for the steps that failed. Every
 * value is still checked by the schema, and the cross-column invariants (lengths agree, every
 * index points at a name) by its refinement.
 *
 * The host encodes with `encodeTimeline`; the webview reads rows back with `TimelineRows`, one row
 * at a time, only for the rows it draws.
 */

export const StepKindSchema = z.enum(["code", "loader", "agent", "commit", "effect", "request"]);
export const StepStatusSchema = z.enum(["ok", "failed", "waiting"]);
export const VerdictSchema = z.enum(["accepted", "rejected", "escalated"]);
type StepKind = z.infer<typeof StepKindSchema>;
type StepStatus = z.infer<typeof StepStatusSchema>;
type Verdict = z.infer<typeof VerdictSchema>;

/** One character per value in the code columns. */
const KIND_CODE: Record<StepKind, string> = { code: "c", loader: "l", agent: "a", commit: "m", effect: "e", request: "r" };
const STATUS_CODE: Record<StepStatus, string> = { ok: "o", failed: "f", waiting: "w" };
const VERDICT_CODE: Record<Verdict | "none", string> = { accepted: "a", rejected: "r", escalated: "e", none: "-" };
const invert = <T extends string>(codes: Record<T, string>): Map<string, T> =>
  new Map(Object.entries(codes).map(([value, code]) => [code as string, value as T]));
const KIND_OF = invert(KIND_CODE);
const STATUS_OF = invert(STATUS_CODE);
const VERDICT_OF = invert(VERDICT_CODE);

const escapeInClass = (c: string): string => c.replace(/[-\\\]^]/g, "\\$&");
/** A string of one code character per entry, e.g. "cla" for code, loader, agent. */
const codes = (table: Record<string, string>) =>
  z.string().regex(new RegExp(`^[${Object.values(table).map(escapeInClass).join("")}]*$`), "expected a string of codes");

/** Non-negative integers, comma-separated ("0,1,2"; "" is none). Decoded into an array by the schema. */
const ints = z
  .string()
  .regex(/^[0-9,]*$/, "expected comma-separated integers")
  .transform((s, ctx) => {
    // One pass over the characters (the regex let through only digits and commas): no split, no
    // string per entry, no Number() per entry.
    const out: number[] = [];
    if (s === "") return out;
    let n = 0;
    let digits = 0;
    for (let i = 0; i <= s.length; i++) {
      const c = i < s.length ? s.charCodeAt(i) : 44;
      if (c !== 44) {
        n = n * 10 + (c - 48);
        digits++;
        continue;
      }
      // At most 15 digits: always a safe integer.
      if (digits === 0 || digits > 15) {
        ctx.issues.push({ code: "custom", message: `entry ${out.length} is not an integer`, input: s.slice(0, 40) });
        return z.NEVER;
      }
      out.push(n);
      n = 0;
      digits = 0;
    }
    return out;
  });

/**
 * A column of strings packed end to end into one string, with where each entry ends and which
 * entries are null: ["ab", null, "cde"] is { text: "abcde", ends: "2,2,5", nulls: "1" }. Any text
 * is a valid entry, so one string and two integer lists check a whole column; an entry is sliced
 * out only when its row is drawn.
 */
export class PackedStrings {
  constructor(
    private readonly text: string,
    private readonly ends: number[],
    private readonly nulls: ReadonlySet<number>,
  ) {}

  get length(): number {
    return this.ends.length;
  }

  get(i: number): string | null {
    if (this.nulls.has(i)) return null;
    return this.text.slice(i === 0 ? 0 : this.ends[i - 1], this.ends[i]);
  }
}

const packedStrings = (nullable: boolean) =>
  z.object({ text: z.string(), ends: ints, nulls: ints }).transform((p, ctx) => {
    const refuse = (message: string): typeof z.NEVER => {
      ctx.issues.push({ code: "custom", message, input: p });
      return z.NEVER;
    };
    let end = 0;
    for (const e of p.ends) {
      if (e < end) return refuse("packed strings: the ends go backwards");
      end = e;
    }
    if (end !== p.text.length) return refuse("packed strings: the last end is not the text's length");
    if (!nullable && p.nulls.length > 0) return refuse("packed strings: a null where none is allowed");
    if (p.nulls.some((i) => i >= p.ends.length)) return refuse("packed strings: a null past the last entry");
    return new PackedStrings(p.text, p.ends, new Set(p.nulls));
  });

/** Called by `encodeTimeline` for each string column. */
export function packStrings(values: (string | null)[]): { text: string; ends: string; nulls: string } {
  let text = "";
  const ends: number[] = [];
  const nulls: number[] = [];
  values.forEach((v, i) => {
    if (v === null) nulls.push(i);
    else text += v;
    ends.push(text.length);
  });
  return { text, ends: ends.join(","), nulls: nulls.join(",") };
}

/** A step as the timeline shows it. Its context, decision and intents come with its superstep. */
export interface StepView {
  id: string;
  executor: string;
  kind: z.infer<typeof StepKindSchema>;
  status: z.infer<typeof StepStatusSchema>;
  durationMs: number;
  writes: string[];
  error: { code: string; message: string } | null;
  /** A commit step's verdict, or the verdict on an agent step's proposal; null when none. */
  verdict: z.infer<typeof VerdictSchema> | null;
}

export interface SuperstepView {
  superstep: number;
  checkpointId: string | null;
  at: string | null;
  steps: StepView[];
}

export const TimelineSchema = z
  .object({
    /** Executor and state-key names, each once; `steps.executor` and `steps.writes` index into it. */
    names: z.array(z.string()),
    /** One entry per superstep, in order. */
    superstep: ints,
    checkpointId: packedStrings(true),
    at: packedStrings(true),
    /** How many steps each superstep ran: superstep i's steps follow those of supersteps before it. */
    stepCount: ints,
    /** One entry per step, all supersteps' steps in order. */
    steps: z.object({
      id: packedStrings(false),
      executor: ints,
      kind: codes(KIND_CODE),
      status: codes(STATUS_CODE),
      /** Whole milliseconds. */
      durationMs: ints,
      /** How many keys each step wrote: step j's keys follow those of the steps before it. */
      writeCount: ints,
      writes: ints,
      verdict: codes(VERDICT_CODE),
      /** Only the steps that failed, by their place in these columns. */
      errors: z.array(z.object({ step: z.number().int().nonnegative(), code: z.string(), message: z.string() })),
    }),
  })
  .superRefine((t, ctx) => {
    const issue = (message: string): void => ctx.addIssue({ code: "custom", message });
    const n = t.superstep.length;
    if (t.checkpointId.length !== n || t.at.length !== n || t.stepCount.length !== n) {
      return issue("timeline: superstep columns differ in length");
    }
    const s = t.steps;
    const m = s.id.length;
    const stepColumns = [s.executor, s.kind, s.status, s.durationMs, s.writeCount, s.verdict];
    if (stepColumns.some((c) => c.length !== m)) return issue("timeline: step columns differ in length");
    if (sum(t.stepCount) !== m) return issue("timeline: stepCount does not add up to the steps");
    if (sum(s.writeCount) !== s.writes.length) return issue("timeline: writeCount does not add up to the writes");
    const names = t.names.length;
    if (s.executor.some((i) => i >= names) || s.writes.some((i) => i >= names)) return issue("timeline: a name index is out of range");
    if (s.errors.some((e) => e.step >= m)) return issue("timeline: an error names a step that is not there");
  });

/** The timeline as the host sends it. */
export type TimelineWire = z.input<typeof TimelineSchema>;
export type Timeline = z.infer<typeof TimelineSchema>;

function sum(xs: number[]): number {
  let total = 0;
  for (const x of xs) total += x;
  return total;
}

/** Called by the host's view-model builder (src/extension/viewModel.ts) with the run's supersteps. */
export function encodeTimeline(rows: SuperstepView[]): TimelineWire {
  const index = new Map<string, number>();
  const names: string[] = [];
  const name = (n: string): number => {
    let i = index.get(n);
    if (i === undefined) {
      i = names.length;
      names.push(n);
      index.set(n, i);
    }
    return i;
  };
  const superstep: number[] = [];
  const checkpointId: (string | null)[] = [];
  const at: (string | null)[] = [];
  const stepCount: number[] = [];
  const id: string[] = [];
  const executor: number[] = [];
  let kind = "";
  let status = "";
  let verdict = "";
  const durationMs: number[] = [];
  const writeCount: number[] = [];
  const writes: number[] = [];
  const errors: { step: number; code: string; message: string }[] = [];
  for (const row of rows) {
    superstep.push(row.superstep);
    checkpointId.push(row.checkpointId);
    at.push(row.at);
    stepCount.push(row.steps.length);
    for (const step of row.steps) {
      if (step.error) errors.push({ step: id.length, code: step.error.code, message: step.error.message });
      id.push(step.id);
      executor.push(name(step.executor));
      kind += KIND_CODE[step.kind];
      status += STATUS_CODE[step.status];
      verdict += VERDICT_CODE[step.verdict ?? "none"];
      durationMs.push(Math.max(0, Math.round(step.durationMs)));
      writeCount.push(step.writes.length);
      for (const w of step.writes) writes.push(name(w));
    }
  }
  return {
    names,
    superstep: superstep.join(","),
    checkpointId: packStrings(checkpointId),
    at: packStrings(at),
    stepCount: stepCount.join(","),
    steps: {
      id: packStrings(id),
      executor: executor.join(","),
      kind,
      status,
      durationMs: durationMs.join(","),
      writeCount: writeCount.join(","),
      writes: writes.join(","),
      verdict,
      errors,
    },
  };
}

/**
 * Rows of a parsed timeline, built on demand: the webview asks for the few it draws. The offsets
 * are prefix sums computed once (two integer arrays), so `at(i)` costs only row i's steps.
 */
export class TimelineRows {
  private readonly stepStart: Uint32Array;
  private readonly writeStart: Uint32Array;
  private readonly errors: Map<number, { code: string; message: string }>;

  constructor(private readonly t: Timeline) {
    this.stepStart = prefixSums(t.stepCount);
    this.writeStart = prefixSums(t.steps.writeCount);
    this.errors = new Map(t.steps.errors.map((e) => [e.step, { code: e.code, message: e.message }]));
  }

  get length(): number {
    return this.t.superstep.length;
  }

  at(i: number): SuperstepView | undefined {
    const t = this.t;
    if (!Number.isInteger(i) || i < 0 || i >= t.superstep.length) return undefined;
    const s = t.steps;
    const steps: StepView[] = [];
    for (let j = this.stepStart[i]!; j < this.stepStart[i + 1]!; j++) {
      const writes: string[] = [];
      for (let w = this.writeStart[j]!; w < this.writeStart[j + 1]!; w++) writes.push(t.names[s.writes[w]!]!);
      const verdict = VERDICT_OF.get(s.verdict[j]!)!;
      steps.push({
        id: s.id.get(j)!,
        executor: t.names[s.executor[j]!]!,
        kind: KIND_OF.get(s.kind[j]!)!,
        status: STATUS_OF.get(s.status[j]!)!,
        durationMs: s.durationMs[j]!,
        writes,
        error: this.errors.get(j) ?? null,
        verdict: verdict === "none" ? null : verdict,
      });
    }
    return { superstep: t.superstep[i]!, checkpointId: t.checkpointId.get(i), at: t.at.get(i), steps };
  }

  /** The row of superstep number `superstep` (rows are in superstep order), or -1 when it has none. */
  indexOf(superstep: number): number {
    const xs = this.t.superstep;
    let lo = 0;
    let hi = xs.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const x = xs[mid]!;
      if (x === superstep) return mid;
      if (x < superstep) lo = mid + 1;
      else hi = mid - 1;
    }
    return -1;
  }

  /** Every row: for tests and small runs, never for drawing a large one. */
  all(): SuperstepView[] {
    const out: SuperstepView[] = [];
    for (let i = 0; i < this.length; i++) out.push(this.at(i)!);
    return out;
  }
}

function prefixSums(xs: number[]): Uint32Array {
  const out = new Uint32Array(xs.length + 1);
  for (let i = 0; i < xs.length; i++) out[i + 1] = out[i]! + xs[i]!;
  return out;
}
