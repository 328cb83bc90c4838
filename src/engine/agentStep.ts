import { monotonicMs } from "./clock";
import { buildModelRequest } from "./contextRequest";
import { CasefileError, errorMessage, zodIssue } from "./errors";
import { isExtractValue } from "./extracts";
import type { AgentSpec, AnyState } from "./executors";
import type { ModelResponse } from "./model";
import type { AgentCallRecord, ChatMessage, Extract, Json, RuleInForce, RulesFrom } from "./records";
import { stepId, type TaskInput, type TaskOutcome } from "./task";
import { checkBudget, countTokens } from "./tokens";
import { parseSafely, proposalActions } from "./workflow";

/** What an agent step sends to its commit step. */
export interface AgentMessage {
  agentCallId: string;
  proposal?: Json;
  rejection?: { code: string; message: string };
}

/**
 * Builds the context from state, records the exact request with its hash and token count,
 * asks the model, and checks the answer. Nothing the model says touches state: the proposal
 * (or the reason it was rejected) goes to the commit step as a message.
 */
export async function runAgent(spec: AgentSpec, input: TaskInput, state: Readonly<AnyState>, out: TaskOutcome): Promise<Json> {
  const replay = input.replay?.executor === input.executor ? input.replay : undefined;
  // A recorded replay rebuilds the context with the rules recorded with the call it replays, so a
  // rule changed since (even only its expiry) does not change the context; a call recorded before
  // the rules were kept whole, and a live or edited replay, get the rules in force now.
  const recordedRules = replay?.mode === "recorded" ? replay.recorded?.rulesInForce : undefined;
  const rules: readonly RuleInForce[] = recordedRules ?? input.rules?.() ?? [];
  const rulesFrom: RulesFrom =
    recordedRules && replay?.recorded ? { from: "recorded", agentCallId: replay.recorded.id } : { from: "in force" };
  const built = spec.context(state, input.message.payload, rules);
  // The step's request with the given messages: built from state, edited for a replay, or summarised.
  const requestOf = (messages: readonly ChatMessage[]) =>
    buildModelRequest({
      step: input.executor,
      messages,
      model: spec.model.model,
      params: spec.model.params ?? {},
      responseSchema: spec.proposal,
      callIndex: input.callIndex,
    });
  const original = requestOf(built);
  const edited = replay?.mode === "edited" && replay.messages !== undefined;
  let request = edited ? requestOf(replay.messages!) : original;

  const budget = spec.budget ?? {};
  let tokens = countTokens(request.messages, request.model);
  // Above the soft budget, a step that can summarise shortens its working context: only the
  // request changes; state and every record stay whole. The hard budget holds the result.
  let summarised: AgentCallRecord["summarised"];
  if (spec.summarise && budget.soft !== undefined && tokens.count > budget.soft) {
    const before = { count: tokens.count, messages: request.messages.length, hash: request.hash };
    const frozen = Object.freeze(request.messages.map((m) => Object.freeze({ ...m })));
    const shorter = await spec.summarise(frozen, {
      step: input.executor,
      model: request.model,
      tokens: tokens.count,
      soft: budget.soft,
      hard: budget.hard,
    });
    if (!Array.isArray(shorter)) {
      // Stryker disable next-line ObjectLiteral: equivalent, details of an agent step's error are not kept: the step records its code and message only (steps.ts, describeError)
      throw new CasefileError("INVALID_WORKFLOW", `step "${input.executor}": summarise returned no array of messages`, {
        step: input.executor,
      });
    }
    request = requestOf(shorter);
    tokens = countTokens(request.messages, request.model);
    summarised = { tokensBefore: before.count, messagesBefore: before.messages, hashBefore: before.hash };
  }
  const warning = checkBudget(tokens.count, budget, input.executor, summarised?.tokensBefore);
  if (warning) out.warnings.push(warning);

  const id = stepId(input.runId, input.superstep, input.executor, input.index);
  const record: AgentCallRecord = {
    id,
    runId: input.runId,
    superstep: input.superstep,
    executor: input.executor,
    request: { messages: request.messages, model: request.model, params: request.params, responseSchema: request.responseSchema },
    hash: request.hash,
    tokens: { count: tokens.count, soft: spec.budget?.soft, hard: spec.budget?.hard, tokenizer: tokens.tokenizer },
    provider: input.provider?.name ?? "none",
    mode: replay?.mode ?? (input.provider?.name === "scripted" ? "scripted" : "live"),
    at: input.now(),
    durationMs: 0,
  };
  if (edited) record.originalHash = original.hash;
  // Stryker disable next-line ConditionalExpression: equivalent, an undefined summarised is none: every store copies records as JSON (storeBatch.ts)
  if (summarised) record.summarised = summarised;
  const extracts = Object.entries(state).filter(([, v]) => isExtractValue(v));
  if (extracts.length)
    record.extracts = extracts.map(([key, v]) => {
      const e = v as Extract;
      return { key, from: e.from, source: e.source, sourceVersion: e.sourceVersion };
    });
  // The rules the context was built with, whole: rules change after the fact, the record does not.
  record.rulesInForce = rules.map((r) => structuredClone(r));
  record.rulesFrom = rulesFrom;
  out.agentCall = record;

  const t0 = monotonicMs();
  let response: ModelResponse;
  if (replay?.mode === "recorded") {
    const rec = replay.recorded;
    if (!rec || rec.raw === undefined) {
      throw new CasefileError("MODEL_RESPONSE_MISSING", `no recorded response to replay for step "${input.executor}"`);
    }
    if (rec.hash !== request.hash) {
      throw new CasefileError(
        "WORKFLOW_MISMATCH",
        `recorded response for step "${input.executor}" was made for context ${rec.hash}, but the context is now ${request.hash}: ${describeContextChange(rec.request.messages, request.messages)}`,
        // Stryker disable next-line ObjectLiteral: equivalent, details of an agent step's error are not kept: the step records its code and message only (steps.ts, describeError)
        { recordedHash: rec.hash, currentHash: request.hash },
      );
    }
    record.provider = rec.provider;
    response = { text: rec.raw, ...(rec.answeredBy !== undefined ? { meta: { model: rec.answeredBy } } : {}) };
  } else {
    if (!input.provider) throw new CasefileError("MODEL_CALL_FAILED", `agent step "${input.executor}" has no model provider configured`);
    response = await input.provider.complete(request, input.signal);
  }
  record.durationMs = Math.round(monotonicMs() - t0);
  record.raw = response.text;
  if (typeof response.meta?.model === "string") record.answeredBy = response.meta.model;
  if (typeof response.meta?.id === "string") record.responseId = response.meta.id;
  // Stryker disable next-line ConditionalExpression: equivalent, an undefined usage is none: every store copies records as JSON (storeBatch.ts)
  if (response.usage) record.usage = response.usage as Json;

  const checked = checkProposal(spec, response.text, state);
  if ("rejection" in checked) {
    record.rejection = checked.rejection;
    return { agentCallId: id, rejection: checked.rejection } satisfies AgentMessage as unknown as Json;
  }
  record.proposal = checked.proposal;
  return { agentCallId: id, proposal: checked.proposal } satisfies AgentMessage as unknown as Json;
}

/**
 * Parses a model's answer: bad JSON, an unknown action, a schema violation or a cited fact
 * that does not exist each reject the proposal with a reason naming what was wrong.
 */
export function checkProposal(
  spec: Pick<AgentSpec, "proposal">,
  raw: string,
  state: Readonly<AnyState>,
): { proposal: Json } | { rejection: { code: string; message: string } } {
  let data: unknown;
  try {
    data = JSON.parse(raw);
  } catch (e) {
    return { rejection: { code: "BAD_JSON", message: `model answer is not valid JSON: ${errorMessage(e)}` } };
  }
  const actions = proposalActions(spec.proposal);
  const action = (data as { action?: unknown } | null)?.action;
  if (actions && typeof action === "string" && !actions.includes(action)) {
    return { rejection: { code: "UNKNOWN_ACTION", message: `proposed action "${action}" is not one of ${actions.join(", ")}` } };
  }
  const parsed = parseSafely(spec.proposal, data);
  if (!parsed.success) {
    const { at, message } = zodIssue(parsed.error);
    return { rejection: { code: "SCHEMA_VIOLATION", message: `proposal does not match its schema at "${at}": ${message}` } };
  }
  const proposal = parsed.data as { facts?: unknown };
  // Facts of record and extracts of their documents are both citable: each carries its source.
  const known = Object.keys(state).filter((k) => isFactValue(state[k]) || isExtractValue(state[k]));
  const cited = Array.isArray(proposal.facts) ? (proposal.facts as unknown[]).map(String) : [];
  const unknown = cited.filter((f) => !known.includes(f.split(".")[0]!));
  if (unknown.length > 0) {
    return {
      rejection: {
        code: "UNKNOWN_FACT",
        message: `proposal cites ${unknown.map((f) => `"${f}"`).join(", ")}, not among the facts it was given (${known.join(", ") || "none"})`,
      },
    };
  }
  return { proposal: parsed.data as Json };
}

function isFactValue(v: unknown): boolean {
  return typeof v === "object" && v !== null && "provenance" in v && "value" in v;
}

/** A short account of how two contexts differ, for hash-mismatch messages. */
export function describeContextChange(before: ChatMessage[], after: ChatMessage[]): string {
  if (before.length !== after.length) return `message count changed from ${before.length} to ${after.length}`;
  const i = before.findIndex((m, j) => m.role !== after[j]!.role || m.content !== after[j]!.content);
  if (i < 0) return "messages are equal; model, parameters or response schema changed";
  const a = before[i]!.content;
  const b = after[i]!.content;
  let p = 0;
  while (p < a.length && a[p] === b[p]) p++;
  return `message ${i} (${after[i]!.role}) differs from character ${p}: was "${a.slice(p, p + 40)}", now "${b.slice(p, p + 40)}"`;
}
