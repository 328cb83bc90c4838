import type { AgentMessage } from "./agentStep";
import { CasefileError, errorMessage } from "./errors";
import type { AnyState, CommitSpec, StepContext } from "./executors";
import type { Json, RuleResult, Verdict } from "./records";
import { stepId, type TaskInput, type TaskOutcome } from "./steps";

/**
 * The commit step: deterministic code decides what actually happens. Each named rule is run
 * over the proposal and state; the verdict is accepted only if every rule passes. A proposal
 * the agent step already rejected (bad JSON, unknown fact...) is escalated with that reason.
 * The record keeps proposal, rule results, verdict, reason and the state diff side by side.
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
  const rules: RuleResult[] = [];
  let verdict: Verdict = "accepted";
  let reason = "every rule passed";

  if (!proposal) {
    verdict = "escalated";
    reason = msg.rejection ? `proposal rejected (${msg.rejection.code}): ${msg.rejection.message}` : "no proposal was received";
  } else {
    const failures: { name: string; message: string; onFail: "reject" | "escalate" }[] = [];
    for (const [name, rule] of Object.entries(spec.rules)) {
      let result: RuleResult;
      let onFail: "reject" | "escalate" = "escalate";
      try {
        const r = rule({ proposal, state, message: input.message.payload });
        if (typeof r === "boolean") result = { name, ok: r, message: r ? "pass" : "fail" };
        else {
          result = { name, ok: r.ok, message: r.message };
          onFail = r.onFail ?? "escalate";
        }
      } catch (e) {
        // A rule that throws is a bug in the rule, not a judgement of the proposal: the step
        // fails on the record (resume after the fix), rather than escalating as if it had judged.
        throw new CasefileError("RULE_FAILED", `rule "${name}" threw: ${errorMessage(e)}`, { executor: input.executor, rule: name });
      }
      rules.push(result);
      if (!result.ok) failures.push({ name, message: result.message, onFail });
    }
    if (failures.length > 0) {
      verdict = failures.some((f) => f.onFail === "escalate") ? "escalated" : "rejected";
      reason = failures.map((f) => `${f.name}: ${f.message}`).join("; ");
    }
  }

  const result = await spec.apply({ proposal, verdict, reason, rules, state }, ctx);

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
    at: input.now(),
  };
  return result === undefined ? { verdict, reason, action: proposal?.action ?? null } : result;
}

function isRecord(v: unknown): v is Json & Record<string, Json> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
