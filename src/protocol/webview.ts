import { z } from "zod";
import { isJsonValue, type JsonValue } from "./json";
import { TimelineSchema, VerdictSchema } from "./timeline";

export type { StepView, SuperstepView, Timeline, TimelineWire } from "./timeline";
export { encodeTimeline, TimelineRows, TimelineSchema } from "./timeline";
export { answerFromOption } from "./answer";
export { isJsonValue } from "./json";

/**
 * Messages between the extension host and the Run Inspector webview, and the view model the host
 * sends. Both sides import this module: the host parses every message from the webview, the
 * webview parses every message from the host. One discriminated union per direction; whatever
 * fails to parse is dropped and logged by the receiver.
 *
 * The view model is plain JSON built from the case file by src/extension/viewModel.ts. Where a
 * record does not exist (a feature not built yet, a step that made no model call), the field
 * says so with `null` or an `absent` reason; the webview shows that reason, never a made-up value.
 */

const json = z.custom<JsonValue>((v) => isJsonValue(v), { message: "expected a JSON value" });

/** Why a section has nothing to show, in words a person can act on. */
const Absent = z.object({ absent: z.string() });

export const ProvenanceSchema = z.object({ source: z.string(), sourceVersion: z.string(), readAt: z.string() });

export const ContextMessageSchema = z.object({
  role: z.enum(["system", "user", "assistant"]),
  content: z.string(),
  /** Tokens of this message alone; null when no tokenizer was available to the host. */
  tokens: z.number().int().nonnegative().nullable(),
});

/**
 * Another agent step's context this one can be compared with: the same executor in another run of
 * the case file (a branch, its parent or a sibling), or another agent step of this run.
 */
export const ContextRefSchema = z.object({
  relation: z.enum(["branch", "run"]),
  runId: z.string(),
  superstep: z.number().int(),
  executor: z.string(),
  agentCallId: z.string(),
  hash: z.string(),
  /** The request's recorded token count; null when none was recorded. */
  tokens: z.number().nullable(),
});

export const ContextSchema = z.object({
  agentCallId: z.string(),
  model: z.string(),
  provider: z.string(),
  mode: z.enum(["recorded", "live", "edited", "scripted"]),
  hash: z.string(),
  originalHash: z.string().nullable(),
  messages: z.array(ContextMessageSchema),
  /** The whole request's count as recorded when the step ran, with the budget it was held to. */
  tokens: z
    .object({
      count: z.number(),
      soft: z.number().nullable(),
      hard: z.number().nullable(),
      tokenizer: z.string(),
    })
    .nullable(),
  raw: z.string().nullable(),
  /** Extracts from long documents the context was built with, each labelled with its document's version. */
  extracts: z.array(z.object({ key: z.string(), from: z.string(), source: z.string(), sourceVersion: z.string() })),
  /** Set when the step's summarise hook shortened the working context (the case file keeps every record whole). */
  summarised: z.object({ tokensBefore: z.number(), messagesBefore: z.number(), hashBefore: z.string() }).nullable(),
  /** What the Context tab's picker offers to diff against: nearest first, at most a few dozen. */
  compareWith: z.array(ContextRefSchema),
  /** How many more could have been offered but were left out of `compareWith`. */
  compareMore: z.number().int().nonnegative(),
});

export const RuleResultSchema = z.object({ name: z.string(), ok: z.boolean(), message: z.string() });

/** A business rule a commit step was given, and which of its commit rules (or its apply) read it. */
export const VerdictBusinessRuleSchema = z.object({
  id: z.string(),
  statement: z.string(),
  value: json,
  confirmedBy: z.string(),
  confirmedAt: z.string(),
  expiresAt: z.string().nullable(),
  /** True when a commit rule or `apply` read its statement or value. */
  used: z.boolean(),
  /** The commit rules that read it ("apply" when only `apply` did). */
  usedBy: z.array(z.string()),
});

export const DecisionSchema = z.object({
  verdictId: z.string(),
  /** The agent step whose proposal the commit step judged; null when the commit ran without one. */
  proposedBy: z.object({ executor: z.string(), agentCallId: z.string() }).nullable(),
  committedBy: z.string(),
  proposal: json.nullable(),
  /** Why the model's answer was refused before any rule ran (bad JSON, schema, unknown action). */
  rejection: z.object({ code: z.string(), message: z.string() }).nullable(),
  rules: z.array(RuleResultSchema),
  verdict: VerdictSchema,
  reason: z.string(),
  diff: z.array(z.object({ key: z.string(), before: json.nullable(), hadBefore: z.boolean(), after: json })),
  /** The business rules the commit step was given, or a sentence saying the verdict records none. */
  businessRules: z.union([
    z.object({ from: z.enum(["agent call", "in force"]), given: z.array(VerdictBusinessRuleSchema) }),
    z.object({ absent: z.string() }),
  ]),
});

/**
 * A refused intent beside the one another run holds under the same key: one row per field path
 * (action, target, each leaf of payload and reliesOn), `differs` on the rows that differ.
 */
export const IntentConflictSchema = z.object({
  key: z.string(),
  existing: z.object({ run: z.string(), intent: z.string(), status: z.string(), reference: json.nullable() }),
  rows: z.array(z.object({ path: z.string(), existing: json.nullable(), proposed: json.nullable(), differs: z.boolean() })),
});

export const IntentSchema = z.object({
  id: z.string(),
  /** The idempotency key sent to the target (a branch's record has its own id, `key@run`). */
  key: z.string(),
  /** Set when this run reused another run's identical intent instead of acting. */
  reusedFrom: z.object({ run: z.string(), intent: z.string() }).nullable(),
  conflict: IntentConflictSchema.nullable(),
  executor: z.string(),
  superstep: z.number().int(),
  action: z.string(),
  target: z.string(),
  status: z.enum(["open", "done", "failed", "needs_replanning"]),
  payload: json,
  reliesOn: json,
  reference: json.nullable(),
  error: z.object({ code: z.string(), message: z.string() }).nullable(),
  drift: json.nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
});

export const StepDetailSchema = z.object({
  stepId: z.string(),
  context: z.union([Absent, ContextSchema]),
  decision: z.union([Absent, DecisionSchema]),
  intents: z.union([Absent, z.array(IntentSchema)]),
});

export const StateEntrySchema = z.object({
  key: z.string(),
  /** Against the checkpoint before (the fork point, for a branch's first): null when unchanged. */
  change: z.enum(["new", "changed"]).nullable(),
  value: json,
  version: z.number().int(),
  /** The run that wrote this version: differs from the run shown for keys inherited by a branch. */
  writtenBy: z.string(),
  /** Set when the key holds a fact of record. */
  provenance: ProvenanceSchema.nullable(),
});

/**
 * State at one checkpoint. Sent with the superstep's details, on request (`loadSuperstep`).
 */
export const StateViewSchema = z.union([
  Absent,
  z.object({
    checkpointId: z.string(),
    /** The superstep whose checkpoint `change` compares with; null when there is none. */
    comparedWith: z.object({ runId: z.string(), superstep: z.number().int() }).nullable(),
    entries: z.array(StateEntrySchema),
  }),
]);

/**
 * A person's request: asked by a request step, answered (or still waiting) in place. Shown in the
 * superstep that asked it (prompt, options, a comment box while it waits) and in the superstep
 * where the answer arrived (who answered, what, when).
 */
export const RequestViewSchema = z.object({
  id: z.string(),
  executor: z.string(),
  /** The superstep that asked, in the run that asked (a branch may answer its parent's request). */
  askedIn: z.object({ runId: z.string(), superstep: z.number().int() }),
  askedAt: z.string(),
  prompt: z.object({ title: z.string(), detail: z.string().nullable(), options: z.array(z.string()) }),
  /** `waiting`: answerable now; `closed`: neither answered nor waiting any more (the run went on without it). */
  status: z.enum(["waiting", "answered", "closed"]),
  answer: z.object({ value: json, by: z.string().nullable(), at: z.string(), runId: z.string(), superstep: z.number().int() }).nullable(),
});

/**
 * What the view model leaves out, one superstep at a time: sent when the person selects the
 * superstep, so a 10,000-superstep run's view model stays a timeline.
 */
export const SuperstepDetailSchema = z.object({
  runId: z.string(),
  superstep: z.number().int(),
  steps: z.array(StepDetailSchema),
  state: StateViewSchema,
  /** Requests asked in this superstep, and those whose answer arrived in it. */
  requests: z.array(RequestViewSchema),
});

export const BranchSchema = z.object({
  runId: z.string(),
  parentRunId: z.string().nullable(),
  parentCheckpointId: z.string().nullable(),
  status: z.string(),
  createdAt: z.string(),
});

export const InspectorViewModelSchema = z.object({
  v: z.literal(1),
  caseFile: z.object({ path: z.string(), name: z.string() }),
  run: z.object({
    id: z.string(),
    /** `path`: the workflow file the run was started from, as recorded (the Workflow Graph button opens it); null when none was. */
    workflow: z.object({ name: z.string(), version: z.number(), path: z.string().nullable() }),
    status: z.string(),
    createdAt: z.string(),
    updatedAt: z.string(),
    parentRunId: z.string().nullable(),
    parentCheckpointId: z.string().nullable(),
    error: z.object({ code: z.string(), message: z.string() }).nullable(),
  }),
  /** Every run in the case file, for the branch picker: roots first, children after parents. */
  branches: z.array(BranchSchema),
  /** The run's supersteps and their steps, column by column (src/protocol/timeline.ts). */
  timeline: TimelineSchema,
  /**
   * Set on a run's first `load` when its timeline holds only the run's last supersteps (down to
   * the run's decision): what a first paint needs, read without reading the whole run. The whole
   * timeline follows in another `load` of the same run; the page keeps the selection and scroll
   * by superstep number, so the rows added before those shown move nothing in view.
   */
  partial: z.literal(true).optional(),
  /** Restricted Mode: inspecting works, nothing that runs workflow code does. */
  canRun: z.union([z.object({ ok: z.literal(true) }), z.object({ ok: z.literal(false), reason: z.string() })]),
});

/** The view model as the host builds and sends it. */
export type InspectorViewModel = z.input<typeof InspectorViewModelSchema>;
/** The view model as the webview has it once parsed (the timeline's columns decoded). */
export type ReceivedViewModel = z.output<typeof InspectorViewModelSchema>;
export type StepDetailView = z.infer<typeof StepDetailSchema>;
export type SuperstepDetailView = z.infer<typeof SuperstepDetailSchema>;
export type ContextView = z.infer<typeof ContextSchema>;
export type ContextRefView = z.infer<typeof ContextRefSchema>;
export type DecisionView = z.infer<typeof DecisionSchema>;
export type IntentView = z.infer<typeof IntentSchema>;
export type IntentConflictView = z.infer<typeof IntentConflictSchema>;
export type StateEntryView = z.infer<typeof StateEntrySchema>;
export type StateView = z.infer<typeof StateViewSchema>;
export type BranchView = z.infer<typeof BranchSchema>;
export type RequestView = z.infer<typeof RequestViewSchema>;

export const ReplayModeSchema = z.enum(["recorded", "live", "edited"]);
export type ReplayMode = z.infer<typeof ReplayModeSchema>;
/** The formats `casefile export-eval` writes (src/cli/evalCommands.ts); the first is the default. */
export const EvalFormatSchema = z.enum(["json", "promptfoo", "openai-jsonl", "openai-evals"]);
export type EvalFormat = z.infer<typeof EvalFormatSchema>;

const id = z.string().min(1).max(200);

/** What the webview may ask of the host. Every action names the run and the place it is about. */
export const InspectorToHostSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("ready") }),
  z.object({ type: z.literal("resumeFrom"), runId: id, checkpointId: id }),
  z.object({ type: z.literal("forkWithEditedState"), runId: id, checkpointId: id }),
  /** Starts a `casefile` debug session resuming from the checkpoint (paused there). */
  z.object({ type: z.literal("debugFromHere"), runId: id, checkpointId: id }),
  z.object({ type: z.literal("replayStep"), runId: id, stepId: id, mode: ReplayModeSchema }),
  z.object({ type: z.literal("exportStepAsEval"), runId: id, stepId: id, format: EvalFormatSchema }),
  z.object({ type: z.literal("selectRun"), runId: id }),
  /**
   * Asks for a superstep's details (every step's context, decision, intents; the state). The
   * answer, `superstep`, carries the same requestId.
   */
  z.object({ type: z.literal("loadSuperstep"), requestId: id, runId: id, superstep: z.number().int().nonnegative() }),
  /**
   * Asks for another agent step's context, to diff the shown one against (the Context tab's
   * picker). The answer, `context`, carries the same requestId.
   */
  z.object({
    type: z.literal("loadContext"),
    requestId: id,
    runId: id,
    superstep: z.number().int().nonnegative(),
    agentCallId: id,
  }),
  /** Continue, Step or Stop for the workflow running in step mode (the buttons `runState` shows). */
  z.object({ type: z.literal("control"), action: z.enum(["continue", "step", "stop"]) }),
  /**
   * A person's answer to a waiting request (`request`), from the request's buttons and comment
   * box. The runner checks it against the request step's answer schema; the reply, `answered`,
   * carries the same requestId and says whether it was taken or why it was refused.
   */
  z.object({ type: z.literal("answerRequest"), requestId: id, runId: id, request: id, answer: json }),
  /** Sent once a loaded run is on screen (the frame after the load has painted): the host logs how long a click took to show. */
  z.object({ type: z.literal("painted"), runId: id }),
  /** The Restricted Mode banner's link: opens VS Code's Workspace Trust editor. */
  z.object({ type: z.literal("manageTrust") }),
  /** Opens the Workflow Graph of the run's workflow file (the header's button). */
  z.object({ type: z.literal("showGraph") }),
]);
export type InspectorToHost = z.infer<typeof InspectorToHostSchema>;

export const HostToInspectorSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("load"), model: InspectorViewModelSchema }),
  /**
   * A superstep's details: the answer to `loadSuperstep` (with its requestId), or, without one,
   * details the host sends unasked; the panel keeps either for when the superstep is shown.
   */
  z.object({ type: z.literal("superstep"), requestId: z.string().optional(), detail: SuperstepDetailSchema }),
  /** The answer to `loadContext`: the context, or why it cannot be shown. */
  z.object({ type: z.literal("context"), requestId: z.string(), context: z.union([Absent, ContextSchema]) }),
  /** The answer to `answerRequest`: taken (the run went on) or refused, with the reason shown beside the request. */
  z.object({
    type: z.literal("answered"),
    requestId: z.string(),
    outcome: z.union([z.object({ ok: z.literal(true), message: z.string() }), z.object({ ok: z.literal(false), reason: z.string() })]),
  }),
  /** A line for the panel's status area: the outcome of an action, or why it could not run. */
  z.object({ type: z.literal("notice"), level: z.enum(["info", "warning", "error"]), message: z.string() }),
  /** Select this step of the run (a failed eval case's "Open Step in Run Inspector"), on its Decision tab. */
  z.object({ type: z.literal("reveal"), runId: z.string(), superstep: z.number().int().nonnegative(), executor: z.string() }),
  /** Whether a workflow runs in this window, and where a step-mode run is paused. */
  z.object({
    type: z.literal("runState"),
    state: z.enum(["idle", "running", "paused"]),
    runId: z.string().optional(),
    superstep: z.number().int().nonnegative().optional(),
  }),
]);
/** What the host posts (src/extension/inspectorPanel.ts). */
export type HostToInspector = z.input<typeof HostToInspectorSchema>;
/** What the webview has once a message from the host is parsed. */
export type HostToInspectorReceived = z.output<typeof HostToInspectorSchema>;

/** Parses a message from the webview; returns the zod error's summary instead of throwing. */
export function parseInspectorMessage(data: unknown): { ok: true; message: InspectorToHost } | { ok: false; error: string } {
  const r = InspectorToHostSchema.safeParse(data);
  return r.success ? { ok: true, message: r.data } : { ok: false, error: z.prettifyError(r.error) };
}

export function parseHostMessage(data: unknown): { ok: true; message: HostToInspectorReceived } | { ok: false; error: string } {
  const r = HostToInspectorSchema.safeParse(data);
  return r.success ? { ok: true, message: r.data } : { ok: false, error: z.prettifyError(r.error) };
}
