import { Document as YamlDocument, parse as parseYaml } from "yaml";
import { z } from "zod";
import { JsonSchema } from "../protocol/jsonSchema";
import { CasefileError, errorMessage } from "./errors";
import type { AgentCallRecord, Fact, Json, VerdictRecord } from "./records";

/**
 * An agent step exported as an evaluation case: the exact request the model got, the facts and
 * business rules it saw, the answer it gave, and the outcome expected of it. Built by
 * `casefile export-eval` from a case file's records, corrected by the developer if the recorded
 * outcome was wrong, and run again by `casefile eval` against a provider and the workflow's
 * current commit rules.
 *
 * Our own JSON (holds everything), a promptfoo test-case YAML (holds everything: the messages and
 * expectations as vars, the rest under `metadata.casefile`), OpenAI evals JSONL (`input` / `ideal`:
 * the messages and the expected action) and the hosted OpenAI Evals API's items and config
 * (openaiEvals.ts).
 */

const json: z.ZodType<Json> = JsonSchema;

const ChatMessageSchema = z.object({ role: z.enum(["system", "user", "assistant"]), content: z.string() });

const FactSchema = z.object({
  value: json,
  provenance: z.object({ source: z.string(), sourceVersion: z.string(), readAt: z.string() }),
});

export const ExpectedOutcomeSchema = z.object({
  /** The proposal's action; null when no valid proposal is expected (the answer is rejected). */
  action: z.string().nullable(),
  verdict: z.enum(["accepted", "rejected", "escalated"]),
  proposal: json,
  /** Set when a developer changed the recorded outcome before saving the case. */
  corrected: z.boolean().optional(),
  note: z.string().optional(),
});

/** A business rule in force, as an eval case keeps it; the fields after `value` are absent only in cases exported before rules were recorded whole. */
export const RuleInForceSchema = z.object({
  id: z.string(),
  statement: z.string(),
  value: json.optional(),
  sourceCase: z.string().optional(),
  proposedBy: z.string().optional(),
  confirmedBy: z.string().optional(),
  confirmedAt: z.string().optional(),
  expiresAt: z.string().optional(),
});

export const EvalCaseSchema = z.object({
  format: z.literal("casefile-eval"),
  v: z.literal(1),
  id: z.string().min(1),
  workflow: z.object({
    name: z.string(),
    version: z.number(),
    /** The workflow file, relative to the folder the eval case was written to. */
    file: z.string().optional(),
  }),
  step: z.string().min(1),
  request: z.object({
    messages: z.array(ChatMessageSchema),
    model: z.string(),
    params: z.record(z.string(), json),
    /** The proposal schema, as JSON Schema. */
    responseSchema: json,
    hash: z.string(),
  }),
  facts: z.record(z.string(), FactSchema),
  /**
   * The business rules the step's context was built with, whole, as recorded with its call (see
   * RuleInForceSchema); `casefile eval` gives them to the commit rules. Cases exported before say
   * less (id, statement, value) and carry no `rulesFrom`.
   */
  rules: z.array(RuleInForceSchema),
  /**
   * "agent call": the rules recorded with the call, exactly as its context got them. "rule table":
   * the call was recorded before its rules were kept whole, so they were rebuilt from the case
   * file's rule table at export time (a later edit or delete shows; a separate rule book does not).
   */
  rulesFrom: z.enum(["agent call", "rule table"]).optional(),
  /** The raw text the model answered when the step ran. */
  answer: z.string(),
  expected: ExpectedOutcomeSchema,
  /**
   * The state the commit step read when the step ran (its read and owned keys at the checkpoint),
   * so that `casefile eval` applies the current rules to it without the case file. Cases exported
   * before it was kept read it from `provenance.caseFile`.
   */
  commitState: z.record(z.string(), json).optional(),
  provenance: z.object({ caseFile: z.string(), runId: z.string(), superstep: z.number(), agentCallId: z.string() }),
});

export type EvalCase = z.infer<typeof EvalCaseSchema>;
export type ExpectedOutcome = z.infer<typeof ExpectedOutcomeSchema>;

/** What OpenAI evals JSONL holds of a case: the messages, the action and the proposal less its free text. */
export interface EvalCaseFragment {
  request: { messages: EvalCase["request"]["messages"] };
  expected: { action: string; proposal: Json };
}

/** What the export reads from a case file to build one case. */
export interface EvalCaseSource {
  caseFile: string;
  workflow: { name: string; version: number };
  call: AgentCallRecord;
  /** The commit step's verdict on this call; absent when the answer was rejected before it. */
  verdict?: VerdictRecord;
  facts: Record<string, Fact>;
  rules: EvalCase["rules"];
  rulesFrom: NonNullable<EvalCase["rulesFrom"]>;
  /** The state the commit step's rules read (see EvalCaseSchema.commitState). */
  commitState?: Record<string, Json>;
}

/**
 * Builds a case from the records of one agent call. The expected outcome is what happened: the
 * recorded proposal and verdict, or "escalated" with no proposal when the answer was rejected
 * before the commit step. The developer corrects it with `correctExpected`.
 */
export function evalCaseFromRecords(src: EvalCaseSource): EvalCase {
  const { call, verdict } = src;
  if (call.raw === undefined) {
    throw new CasefileError("USAGE", `agent call ${call.id} (step "${call.executor}") has no recorded answer to export`, {
      agentCallId: call.id,
    });
  }
  if (!verdict && !call.rejection) {
    throw new CasefileError(
      "USAGE",
      `agent call ${call.id} (step "${call.executor}") has neither a verdict nor a rejection recorded; it cannot say what was expected`,
      { agentCallId: call.id },
    );
  }
  const proposal = verdict?.proposal ?? call.proposal ?? null;
  return {
    format: "casefile-eval",
    v: 1,
    id: `${call.runId}-${call.executor}-${call.superstep}`,
    workflow: { name: src.workflow.name, version: src.workflow.version },
    step: call.executor,
    request: { ...call.request, hash: call.hash },
    facts: src.facts as EvalCase["facts"],
    rules: src.rules,
    rulesFrom: src.rulesFrom,
    answer: call.raw,
    expected: { action: actionOf(proposal), verdict: verdict?.verdict ?? "escalated", proposal },
    ...(src.commitState ? { commitState: src.commitState } : {}),
    provenance: { caseFile: src.caseFile, runId: call.runId, superstep: call.superstep, agentCallId: call.id },
  };
}

/** The developer's correction of the expected outcome; the case records that it was corrected. */
export function correctExpected(c: EvalCase, change: Partial<Omit<ExpectedOutcome, "corrected">>): EvalCase {
  const expected = { ...c.expected, ...change, corrected: true };
  if (change.proposal !== undefined && change.action === undefined) expected.action = actionOf(change.proposal);
  return { ...c, expected };
}

function actionOf(proposal: Json): string | null {
  return proposal && typeof proposal === "object" && !Array.isArray(proposal) && typeof proposal.action === "string"
    ? proposal.action
    : null;
}

// ---- our own JSON -------------------------------------------------------------------------

export function toOwnJson(c: EvalCase): string {
  return JSON.stringify(c, null, 2) + "\n";
}

export function parseOwnJson(text: string, source: string): EvalCase {
  return validate(parseJsonText(text, source), source);
}

// ---- OpenAI evals JSONL (the legacy openai/evals repository) ----------------------------

/**
 * One line per case: `{"input": messages, "ideal": "<action>", "expected_proposal": {…}}`.
 * `ideal` is the expected action, the part of an answer a string grader (`Includes`, `FuzzyMatch`)
 * can check: the whole proposal could never match, its reason being free text.
 * `expected_proposal` is the proposal less its free-text fields (see checkableProposal), for a
 * grader that compares fields. The verdict and the rest are ours and not held by this format; the
 * hosted Evals API has its own format (openaiEvals.ts).
 */
export function toOpenAIEvalsJsonl(cases: readonly EvalCase[]): string {
  return cases
    .map((c) => JSON.stringify({ input: c.request.messages, ideal: gradedAction(c), expected_proposal: checkableProposal(c) }) + "\n")
    .join("");
}

const OpenAIEvalLineSchema = z.object({ input: z.array(ChatMessageSchema), ideal: z.string(), expected_proposal: json });

export function parseOpenAIEvalsJsonl(text: string, source: string): EvalCaseFragment[] {
  const out: EvalCaseFragment[] = [];
  text.split("\n").forEach((line, i) => {
    if (line.trim() === "") return;
    const where = `${source} line ${i + 1}`;
    const sample = checked(OpenAIEvalLineSchema, parseJsonText(line, where), where);
    out.push({ request: { messages: sample.input }, expected: { action: sample.ideal, proposal: sample.expected_proposal } });
  });
  return out;
}

/**
 * The action a grader checks an answer against. A case expecting no valid proposal (the answer
 * rejected before the commit step) has none, and a string grader cannot check a rejection: refused.
 */
export function gradedAction(c: EvalCase): string {
  if (c.expected.action === null)
    throw new CasefileError(
      "USAGE",
      `eval case ${c.id} expects no valid proposal (the answer is rejected), which a grader of the action cannot check: export it with --format json or promptfoo`,
      { caseId: c.id },
    );
  return c.expected.action;
}

/**
 * The expected proposal less its free-text fields: the top-level properties the proposal schema
 * types as a bare string (no enum, const, pattern or format), such as `reason`. What is left (the
 * action, the facts relied on, any enumerated field) is what an exact grader can compare.
 */
export function checkableProposal(c: EvalCase): Json {
  const proposal = c.expected.proposal;
  const props = propertiesOf(c.request.responseSchema);
  if (!proposal || typeof proposal !== "object" || Array.isArray(proposal)) return proposal;
  return Object.fromEntries(Object.entries(proposal).filter(([k]) => !isFreeText(props[k])));
}

function propertiesOf(schema: Json): Record<string, Json> {
  if (!schema || typeof schema !== "object" || Array.isArray(schema)) return {};
  const props = schema.properties;
  return props && typeof props === "object" && !Array.isArray(props) ? props : {};
}

function isFreeText(schema: Json | undefined): boolean {
  if (!schema || typeof schema !== "object" || Array.isArray(schema)) return false;
  return schema.type === "string" && !("enum" in schema || "const" in schema || "pattern" in schema || "format" in schema);
}

// ---- promptfoo -----------------------------------------------------------------------------

const promptfooHeader = [
  " Casefile eval cases as promptfoo tests. Use with a prompt that is the messages themselves,",
  " prompts: ['{{ messages }}'] (a JSON chat), and tests: file://this-file.yaml.",
  " Correct an expectation by editing vars.expected_action / vars.expected_proposal (JSON) and",
  " metadata.casefile.expected.verdict.",
].join("\n");

/**
 * A list of promptfoo test cases. The answer is checked against the proposal schema (`is-json`)
 * and its action against `vars.expected_action`; `metadata.casefile` keeps the rest of the case
 * so `parsePromptfooYaml` gives back the whole case.
 *
 * Messages and the expected proposal are vars as JSON text: promptfoo expands an array var into
 * one test per element and accepts no null var, so structured values would change the test.
 * A case expecting no valid proposal (action null) has no `expected_action`.
 */
export function toPromptfooYaml(cases: readonly EvalCase[]): string {
  const tests = cases.map((c) => {
    const { request, expected, ...rest } = c;
    const { messages, ...requestRest } = request;
    const { action, proposal, ...expectedRest } = expected;
    return {
      description: `${c.workflow.name} v${c.workflow.version} / ${c.step}: expect ${action ?? "no valid proposal"} (${expected.verdict})`,
      vars: {
        messages: JSON.stringify(messages),
        ...(action !== null ? { expected_action: action } : {}),
        expected_proposal: JSON.stringify(proposal),
      },
      assert: [
        { type: "is-json", value: withoutSchemaKeyword(request.responseSchema) },
        { type: "javascript", value: "JSON.parse(output).action === context.vars.expected_action" },
      ],
      metadata: { casefile: { ...rest, request: requestRest, expected: expectedRest } },
    };
  });
  const doc = new YamlDocument(tests, { aliasDuplicateObjects: false });
  doc.commentBefore = promptfooHeader;
  return doc.toString({ lineWidth: 0 });
}

export function parsePromptfooYaml(text: string, source: string): EvalCase[] {
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (e) {
    throw new CasefileError("INVALID_INPUT", `${source} is not valid YAML: ${errorMessage(e)}`, { file: source });
  }
  const tests = Array.isArray(raw) ? raw : [raw];
  return tests.map((t, i) => {
    const where = `${source} test ${i}`;
    const test = checked(PromptfooTestSchema, t, where);
    const meta = test.metadata.casefile;
    const messages = parseJsonText(test.vars.messages, `${where} vars.messages`);
    const proposal = parseJsonText(test.vars.expected_proposal, `${where} vars.expected_proposal`);
    return validate(
      {
        ...meta,
        request: { ...meta.request, messages },
        expected: { ...meta.expected, action: test.vars.expected_action ?? null, proposal },
      },
      where,
    );
  });
}

const PromptfooTestSchema = z.object({
  vars: z.object({ messages: z.string(), expected_action: z.string().optional(), expected_proposal: z.string() }),
  metadata: z.object({
    casefile: z.looseObject({ request: z.record(z.string(), json), expected: z.record(z.string(), json) }),
  }),
});

/** `$schema` makes promptfoo's validator look up the draft; the keywords are what it needs. */
export function withoutSchemaKeyword(schema: Json): Json {
  if (!schema || typeof schema !== "object" || Array.isArray(schema)) return schema;
  const { $schema: _ignored, ...rest } = schema;
  return rest;
}

// ---- parsing helpers ------------------------------------------------------------------------

function parseJsonText(text: string, where: string): unknown {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new CasefileError("INVALID_INPUT", `${where} is not valid JSON: ${errorMessage(e)}`, { file: where });
  }
}

function validate(value: unknown, where: string): EvalCase {
  return checked(EvalCaseSchema, value, where);
}

/** Parses with a schema; a fault names the file (or line, or test) and the path of each bad field. */
function checked<T>(schema: z.ZodType<T>, value: unknown, where: string): T {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const problems = r.error.issues.map((i) => `${i.path.length ? i.path.map(String).join(".") : "(root)"}: ${i.message}`);
  throw new CasefileError("INVALID_INPUT", `${where} is not a valid eval case:\n` + problems.map((p) => `  - ${p}`).join("\n"), {
    file: where,
    problems,
  });
}
