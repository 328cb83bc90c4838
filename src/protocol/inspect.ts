import { z } from "zod";
import { isJsonValue } from "./json";

/**
 * The stable output of `casefile inspect <case file> --json`: what scripts may rely on. The CLI
 * builds the object (src/cli/inspect.ts) and parses it with this schema before printing, so the
 * output cannot drift from it. `v` changes only when a field is removed or changes meaning; new
 * optional fields may appear within a version. Values copied from the case file as the workflow
 * wrote them (payloads, proposals, answers, state) are any JSON.
 */

export const INSPECT_FORMAT = 1;

type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
const json = z.custom<JsonValue>((v) => isJsonValue(v), { message: "expected a JSON value" });

const ErrorSchema = z.object({ code: z.string(), message: z.string(), executor: z.string().optional() });

export const InspectStepSchema = z.object({
  executor: z.string(),
  kind: z.string(),
  status: z.string(),
  durationMs: z.number(),
  writes: z.array(z.string()),
  error: z.string().optional(),
});

export const InspectSuperstepSchema = z.object({
  superstep: z.number().int(),
  checkpoint: z.string().optional(),
  /** True for the superstep in which a person's answer was delivered. */
  answered: z.boolean().optional(),
  /** State keys whose stored version changed at this checkpoint. */
  changed: z.array(z.string()),
  steps: z.array(InspectStepSchema),
});

/** A business rule as a context or a commit step got it (RuleInForce). */
export const InspectRuleInForceSchema = z.object({
  id: z.string(),
  statement: z.string(),
  value: json,
  sourceCase: z.string().optional(),
  proposedBy: z.string(),
  confirmedBy: z.string(),
  confirmedAt: z.string(),
  expiresAt: z.string().optional(),
});

/** A model call of an agent step, as recorded: what `replay --step` and `export-eval --step` take. */
export const InspectAgentCallSchema = z.object({
  /** The agent call id, `<run>:<superstep>:<executor>` (`#1`, `#2`… when one executor gets several messages in one superstep). */
  id: z.string(),
  /** The short form `--step` also accepts with `--run <run>`: `<superstep>:<executor>`. */
  step: z.string(),
  superstep: z.number().int(),
  executor: z.string(),
  /** How many calls of this executor came before in the run's history (ancestors included): the fixture's `call`. */
  callIndex: z.number().int().nonnegative(),
  model: z.string(),
  params: z.record(z.string(), json),
  provider: z.string(),
  mode: z.enum(["recorded", "live", "edited", "scripted"]),
  /** Context hash of the exact request (messages, model, params, response schema): the fixture's `hash`. */
  hash: z.string(),
  /** For an edited replay: the hash of the context it replaced. */
  originalHash: z.string().optional(),
  messages: z.number().int().nonnegative(),
  tokens: z
    .object({
      count: z.number(),
      soft: z.number().optional(),
      hard: z.number().optional(),
      tokenizer: z.string(),
    })
    .optional(),
  /** Set when the step's summarise hook shortened the context: the figures before. */
  summarised: z.object({ tokensBefore: z.number(), messagesBefore: z.number(), hashBefore: z.string() }).optional(),
  /** Calls recorded before rules were kept whole: which rules, as confirmed when. */
  rules: z.array(z.object({ id: z.string(), confirmedAt: z.string() })).optional(),
  /** The business rules the context was built with, exactly as it got them. */
  rulesInForce: z.array(InspectRuleInForceSchema).optional(),
  /** Where those rules came from: the rule book when the call ran, or (a recorded replay) the call it replays. */
  rulesFrom: z
    .discriminatedUnion("from", [
      z.object({ from: z.literal("in force") }),
      z.object({ from: z.literal("recorded"), agentCallId: z.string() }),
    ])
    .optional(),
  extracts: z.array(z.object({ key: z.string(), from: z.string(), source: z.string(), sourceVersion: z.string() })).optional(),
  /** The model's answer text, as received. */
  raw: z.string().optional(),
  /** The proposal, whole (action, reason, facts and any field the workflow's schema adds). */
  proposal: json.optional(),
  /** Why the answer was rejected before the commit step. */
  rejection: z.object({ code: z.string(), message: z.string() }).optional(),
  usage: json.optional(),
  at: z.string(),
  durationMs: z.number(),
});

export const InspectVerdictSchema = z.object({
  id: z.string(),
  superstep: z.number().int(),
  executor: z.string(),
  agentCallId: z.string().optional(),
  /** The proposal's action (null when there was no valid proposal). */
  action: json.optional(),
  /** The proposal, whole. */
  proposal: json.optional(),
  /** The fact names the proposal cited. */
  citedFacts: z.array(z.string()),
  verdict: z.enum(["accepted", "rejected", "escalated"]),
  reason: z.string(),
  /** Each commit rule's result; `businessRules`: the ids of the business rules it read. */
  rules: z.array(z.object({ name: z.string(), ok: z.boolean(), message: z.string(), businessRules: z.array(z.string()).optional() })),
  /** The business rules the commit step was given (from its agent call, else those in force) and which of them it read. */
  businessRules: z
    .object({
      from: z.enum(["agent call", "in force"]),
      given: z.array(InspectRuleInForceSchema),
      used: z.array(z.string()),
      byApply: z.array(z.string()).optional(),
    })
    .optional(),
  /** What the commit step applied: key -> before and after. */
  diff: z.record(z.string(), z.object({ before: json.optional(), after: json })),
  at: z.string(),
});

/** One field that differs between two versions of a record an effect relies on or planned against. */
export const InspectFieldChangeSchema = z.object({
  path: z.string(),
  before: json,
  after: json,
  /** True when the effect relies on this field (a change here stops it for replanning). */
  reliedOn: z.boolean(),
});

const LiveRecordSchema = z.object({ version: z.string(), record: json });

/** The record an effect planned against, the live one its check found, and what differs between them. */
export const InspectDriftSchema = z.object({
  /** unrelated_change: acted and logged; relied_on_change: stopped; conflict: the system refused the conditional write. */
  kind: z.string(),
  detectedAt: z.string().optional(),
  basis: LiveRecordSchema.nullable().optional(),
  /** For a conflict: the record the check found before the write was refused. */
  checked: LiveRecordSchema.nullable().optional(),
  live: LiveRecordSchema.nullable().optional(),
  /** The versions compared, old -> new. */
  versions: z.object({ before: z.string().nullable(), after: z.string().nullable() }),
  /** Every field whose value differs, old and new value side by side. */
  fields: z.array(InspectFieldChangeSchema),
});

export const InspectIntentSchema = z.object({
  /** The idempotency key (`<case>:<executor>:<superstep>`), sent with every request of the act. */
  key: z.string(),
  /** The intent record's id: the key on the case's root run, `<key>@<run>` on a branch. */
  id: z.string(),
  superstep: z.number().int(),
  executor: z.string(),
  action: z.string(),
  target: z.string(),
  status: z.enum(["open", "done", "failed", "needs_replanning"]),
  payload: json,
  reliesOn: json,
  basis: LiveRecordSchema.optional(),
  /** The live version the check found and the act wrote against (If-Match). */
  expectedVersion: z.string().optional(),
  reference: json.optional(),
  error: z.object({ code: z.string(), message: z.string() }).optional(),
  drift: InspectDriftSchema.optional(),
  /** Each durable change of the intent, from its `intent` events. */
  history: z.array(z.object({ at: z.string(), superstep: z.number().int(), status: z.string(), what: z.string() })),
  createdAt: z.string(),
  updatedAt: z.string(),
  /** Set when a run reused the reference of another run's identical intent for the same key instead of acting. */
  reusedFrom: z.object({ run: z.string(), intent: z.string() }).optional(),
  /**
   * Set when a run's effect differs from the intent another run of the case holds its key with:
   * not acted, not adopted (the run needs replanning). Both intents, and every field that differs.
   */
  conflict: z
    .object({
      key: z.string(),
      existing: z.object({
        run: z.string(),
        intent: z.string(),
        status: z.string(),
        action: z.string(),
        target: z.string(),
        payload: json,
        reliesOn: json,
        reference: json,
      }),
      proposed: z.object({ action: z.string(), target: z.string(), payload: json, reliesOn: json }),
      differs: z.array(z.object({ path: z.string(), existing: json, proposed: json })),
      detectedAt: z.string(),
    })
    .optional(),
});

export const InspectWarningSchema = z.object({
  superstep: z.number().int(),
  executor: z.string().optional(),
  message: z.string(),
  at: z.string(),
});

export const InspectRequestSchema = z.object({
  /** The request id `respond --request` takes: `<run>:<superstep>:<executor>`. */
  id: z.string(),
  executor: z.string(),
  superstep: z.number().int(),
  createdAt: z.string().optional(),
  prompt: z.object({ title: z.string(), detail: z.string().optional(), options: z.array(z.string()).optional() }),
  status: z.enum(["waiting", "answered"]),
  answer: json.optional(),
  /** Who answered: the answer's own `by` when the request step's schema has one, else "person" (no name is recorded). */
  answeredBy: z.string().optional(),
  answeredAt: z.string().optional(),
  /** The superstep the answer was delivered in. */
  answeredSuperstep: z.number().int().optional(),
  /** The run that took the answer, when it is another one (a branch, which supersedes this run). */
  answeredIn: z.string().optional(),
});

/** How the case stands: the run's status and who decided it, the rules or a person. */
export const InspectOutcomeSchema = z.object({
  status: z.string(),
  /** "rules" when the last verdict decided, "person" when a person answered after it, else null. */
  decidedBy: z.enum(["rules", "person"]).nullable(),
  /** The last verdict of the run, if any. */
  verdict: z.object({ superstep: z.number().int(), executor: z.string(), verdict: z.string(), action: json.optional() }).optional(),
  /** The person's answer that came after the verdict (or that the run is waiting for). */
  person: z.object({ request: z.string(), decision: z.string().optional(), answer: json.optional(), at: z.string().optional() }).optional(),
  /** One sentence, as the text output prints it. */
  summary: z.string(),
});

export const InspectRunSchema = z.object({
  id: z.string(),
  workflow: z.string(),
  version: z.number(),
  status: z.string(),
  createdAt: z.string(),
  updatedAt: z.string(),
  input: json.optional(),
  parent: z.object({ run: z.string(), checkpoint: z.string() }).optional(),
  patched: json.optional(),
  error: ErrorSchema.optional(),
  outputs: z.array(json),
  outcome: InspectOutcomeSchema,
  supersteps: z.array(InspectSuperstepSchema),
  agentCalls: z.array(InspectAgentCallSchema),
  verdicts: z.array(InspectVerdictSchema),
  intents: z.array(InspectIntentSchema),
  warnings: z.array(InspectWarningSchema),
  requests: z.array(InspectRequestSchema),
  /** Requests still waiting for a person (also in `requests`, with status "waiting"). */
  waiting: z.array(z.object({ id: z.string(), executor: z.string(), title: z.string(), options: z.array(z.string()).optional() })),
  branches: z.array(z.string()),
  /** Extracts made in the run: first reads, and stale ones made again (with why). */
  extracts: z.array(
    z.object({ superstep: z.number().int(), key: z.string(), sourceVersion: z.string(), stale: z.boolean(), reason: z.string() }),
  ),
});

export const InspectOutputSchema = z.object({
  v: z.literal(INSPECT_FORMAT),
  caseFile: z.string(),
  runs: z.array(InspectRunSchema),
  /** Journal records not yet folded into the database file (`casefile compact` folds them). */
  journal: z
    .object({ uncompactedSupersteps: z.number().int().nonnegative(), uncompactedRecords: z.number().int().nonnegative() })
    .optional(),
  /** Damaged records (JSON that no longer parses or has the wrong shape, a column that disagrees with it, a row naming one not stored): which table, which row, what is wrong. */
  damaged: z
    .array(z.object({ table: z.string(), row: z.record(z.string(), z.union([z.string(), z.number()])), problem: z.string() }))
    .optional(),
  /** Runs whose records cannot be read whole (CORRUPT_CASE_FILE): the others are shown in `runs`. */
  unreadable: z.array(z.object({ run: z.string(), message: z.string() })),
});

export type InspectOutput = z.infer<typeof InspectOutputSchema>;
export type RunInspection = z.infer<typeof InspectRunSchema>;
export type InspectIntent = z.infer<typeof InspectIntentSchema>;
export type InspectDrift = z.infer<typeof InspectDriftSchema>;
export type InspectRequest = z.infer<typeof InspectRequestSchema>;
export type InspectAgentCall = z.infer<typeof InspectAgentCallSchema>;
export type InspectOutcome = z.infer<typeof InspectOutcomeSchema>;
