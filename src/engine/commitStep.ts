import type { AgentMessage } from "./agentStep";
import { CasefileError, describeReturned, errorMessage } from "./errors";
import type { AnyState, CommitSpec, RuleFn, StepContext } from "./executors";
import type { Json, RuleInForce, RuleResult, Verdict, VerdictBusinessRules } from "./records";
import { stepId, type TaskInput, type TaskOutcome } from "./task";

/** What the commit rules decided: the result of each, the verdict and its reason, and which business rules they read. */
export interface Judgement {
  results: RuleResult[];
  verdict: Verdict;
  reason: string;
  /** Ids of the business rules whose statement or value a rule read, in the order first read. */
  businessRulesRead: string[];
}

export interface JudgeOptions {
  /** Why the agent step refused the answer, when there is no proposal. */
  rejection?: { code: string; message: string };
  /** The message payload as the rules see it (RuleInput.message). */
  message?: Json;
  /** The business rules the rules judge with (RuleInput.businessRules); given frozen, reads noted. */
  businessRules?: readonly RuleInForce[];
  /** The commit step, named by a RULE_FAILED error. */
  executor?: string;
}

/**
 * Judges a proposal: runs each named rule over the proposal and state and computes the verdict,
 * without applying it (xstate's `transition`: compute, don't run). Accepted only if every rule
 * passes; a failing rule escalates unless it says reject, and one escalation beats any number of
 * rejections. No proposal (the agent step refused the answer) is escalated with that reason.
 * Called by the commit step (runCommit) and by `casefile eval`, which stops here. A rule that
 * throws is a RULE_FAILED error, not a failed rule.
 */
export function judge(
  rules: Readonly<Record<string, RuleFn>>,
  proposal: (Json & Record<string, Json>) | undefined,
  state: Readonly<AnyState>,
  opts: JudgeOptions = {},
): Judgement {
  const used = new Set<string>();
  if (!proposal) {
    const reason = opts.rejection ? `proposal rejected (${opts.rejection.code}): ${opts.rejection.message}` : "no proposal was received";
    return { results: [], verdict: "escalated", reason, businessRulesRead: [] };
  }
  const given = opts.businessRules ?? [];
  const results: RuleResult[] = [];
  const failures: { name: string; message: string; onFail: "reject" | "escalate" }[] = [];
  for (const [name, rule] of Object.entries(rules)) {
    let onFail: "reject" | "escalate" = "escalate";
    const read = new Set<string>();
    let r: unknown;
    try {
      r = rule({ proposal, state, message: opts.message as Json, businessRules: tracked(given, read) });
    } catch (e) {
      // A rule that throws is a bug in the rule, not a judgement of the proposal: the step
      // fails on the record (resume after the fix), rather than escalating as if it had judged.
      throw new CasefileError("RULE_FAILED", `rule "${name}" threw: ${errorMessage(e)}`, { executor: opts.executor, rule: name });
    }
    let result: RuleResult;
    if (typeof r === "boolean") result = { name, ok: r, message: r ? "pass" : "fail" };
    else if (isRuleReturn(r)) {
      result = { name, ok: r.ok, message: r.message };
      onFail = r.onFail ?? "escalate";
    } else {
      // Anything else (a number, undefined, a Promise from an async rule) is a bug in the rule
      // too, like a throw: it never judges as a failed rule.
      throw new CasefileError(
        "RULE_FAILED",
        `rule "${name}" returned ${describeReturned(r)}: a rule returns true, false or { ok: boolean, message: string, onFail?: "reject" | "escalate" }`,
        { executor: opts.executor, rule: name },
      );
    }
    if (read.size) result.businessRules = [...read];
    for (const id of read) used.add(id);
    results.push(result);
    if (!result.ok) failures.push({ name, message: result.message, onFail });
  }
  if (failures.length === 0) return { results, verdict: "accepted", reason: "every rule passed", businessRulesRead: [...used] };
  return {
    results,
    verdict: failures.some((f) => f.onFail === "escalate") ? "escalated" : "rejected",
    reason: failures.map((f) => `${f.name}: ${f.message}`).join("; "),
    businessRulesRead: [...used],
  };
}

/**
 * The commit step: deterministic code decides what actually happens. The proposal is judged
 * (judge above) and the verdict applied by the step's `apply`. The record keeps proposal, rule
 * results, verdict, reason and the state diff side by side.
 */
export async function runCommit(
  spec: CommitSpec,
  input: TaskInput,
  state: Readonly<AnyState>,
  ctx: StepContext,
  out: TaskOutcome,
): Promise<Json | void> {
  const msg = (input.message.payload ?? {}) as Partial<AgentMessage>;
  const proposal = isRecord(msg.proposal) ? msg.proposal : undefined;
  const business = businessRulesFor(input, msg.agentCallId);
  const {
    results: rules,
    verdict,
    reason,
    businessRulesRead,
  } = judge(spec.rules, proposal, state, {
    ...(msg.rejection ? { rejection: msg.rejection } : {}),
    message: input.message.payload,
    businessRules: business.given,
    executor: input.executor,
  });
  // `apply` reading a rule counts as using it too; its reads are kept apart to say who read what.
  const byApply = new Set<string>();
  const result = await spec.apply({ proposal, verdict, reason, rules, state, businessRules: tracked(business.given, byApply) }, ctx);
  const used = new Set([...businessRulesRead, ...byApply]);
  const ids = business.given.map((r) => r.id);

  const diff: Record<string, { before: Json | undefined; after: Json }> = {};
  for (const w of out.writes) diff[w.key] = { before: state[w.key] as Json | undefined, after: w.value as Json };
  out.verdict = {
    id: stepId(input.runId, input.superstep, input.executor, input.index),
    runId: input.runId,
    superstep: input.superstep,
    executor: input.executor,
    agentCallId: msg.agentCallId,
    proposal,
    rules,
    verdict,
    reason,
    diff,
    businessRules: {
      from: business.from,
      given: business.given,
      used: ids.filter((id) => used.has(id)),
      byApply: ids.filter((id) => byApply.has(id)),
    },
    at: input.now(),
  };
  return result === undefined ? { verdict, reason, action: proposal?.action ?? null } : result;
}

/**
 * The business rules a commit step judges with: those recorded with the agent call whose proposal
 * it judges (the very rules that call's context was built with, whatever changed in the book
 * since), else the rules in force now (a message from no agent call, or a call recorded before its
 * rules were kept whole).
 */
function businessRulesFor(input: TaskInput, agentCallId: string | undefined): Omit<VerdictBusinessRules, "used"> {
  const recorded = agentCallId !== undefined ? input.store.getAgentCall(agentCallId)?.rulesInForce : undefined;
  if (recorded) return { from: "agent call", given: recorded.map((r) => structuredClone(r)) };
  return { from: "in force", given: (input.rules?.() ?? []).map((r) => structuredClone(r)) };
}

/**
 * The rules as commit code sees them: frozen copies whose `statement` and `value` are getters that
 * note the rule in `read` (looking a rule up by id is not using it), so the verdict can say which
 * business rules it used. Plain objects, not proxies, so spreading, JSON and structuredClone work.
 */
function tracked(given: readonly RuleInForce[], read: Set<string>): readonly RuleInForce[] {
  return Object.freeze(
    given.map((r) => {
      const frozen = deepFreeze(structuredClone(r));
      const copy = {} as RuleInForce;
      // Same keys in the same order as the record; only statement and value note a read.
      for (const [prop, v] of Object.entries(frozen)) {
        const noted = prop === "statement" || prop === "value";
        Object.defineProperty(copy, prop, {
          enumerable: true,
          ...(noted
            ? {
                get: () => {
                  read.add(r.id);
                  return v;
                },
              }
            : { value: v }),
        });
      }
      return Object.freeze(copy);
    }),
  );
}

function deepFreeze<T>(v: T): T {
  if (typeof v === "object" && v !== null) {
    for (const x of Object.values(v)) deepFreeze(x);
    Object.freeze(v);
  }
  return v;
}

function isRecord(v: unknown): v is Json & Record<string, Json> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** A rule's `{ ok, message, onFail? }` answer, as RuleFn declares it. */
function isRuleReturn(r: unknown): r is { ok: boolean; message: string; onFail?: "reject" | "escalate" } {
  if (typeof r !== "object" || r === null) return false;
  const o = r as Record<string, unknown>;
  return (
    typeof o.ok === "boolean" &&
    typeof o.message === "string" &&
    (o.onFail === undefined || o.onFail === "reject" || o.onFail === "escalate")
  );
}
