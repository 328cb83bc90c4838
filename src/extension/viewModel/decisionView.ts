/** The Proposal vs Commit tab's view model: the verdict that judged a step, its rules and business rules, its state diff. */
import type { AgentCallRecord, StepRecord, VerdictRecord } from "../../engine/records";
import type { DecisionView } from "../../protocol/webview";
import type { DecisionRecords } from "./records";
import { first, stepKey } from "./records";
import { article } from "../../engine/errors";

/** Agent steps show the verdict that judged their proposal; commit steps show their own verdict. */
export function decisionFor(s: StepRecord, { calls, verdictByStep, verdictByCall }: DecisionRecords): VerdictRecord | undefined {
  if (s.kind === "commit") return first(verdictByStep.get(stepKey(s.superstep, s.executor)));
  if (s.kind === "agent") {
    for (const c of calls.get(stepKey(s.superstep, s.executor)) ?? []) {
      const v = verdictByCall.get(c.id);
      if (v) return v;
    }
  }
  return undefined;
}

export function decisionView(
  s: StepRecord,
  { verdict, callById }: { verdict: VerdictRecord | undefined; callById: Map<string, AgentCallRecord> },
): DecisionView | { absent: string } {
  if (s.kind !== "agent" && s.kind !== "commit") {
    return {
      absent: `Proposal vs commit applies to agent and commit steps; this is ${article(s.kind)} step.`,
    };
  }
  if (!verdict) {
    return {
      absent:
        s.kind === "agent"
          ? "No commit step has judged this step's proposal in this run."
          : "No verdict was recorded for this commit step.",
    };
  }
  const call = verdict.agentCallId !== undefined ? callById.get(verdict.agentCallId) : undefined;
  return {
    verdictId: verdict.id,
    proposedBy: call ? { executor: call.executor, agentCallId: call.id } : null,
    committedBy: verdict.executor,
    proposal: verdict.proposal ?? call?.proposal ?? null,
    rejection: call?.rejection ? { code: call.rejection.code, message: call.rejection.message } : null,
    rules: verdict.rules.map((r) => ({ name: r.name, ok: r.ok, message: r.message })),
    verdict: verdict.verdict,
    reason: verdict.reason,
    diff: Object.keys(verdict.diff)
      .sort()
      .map((key) => {
        const d = verdict.diff[key]!;
        return { key, before: d.before ?? null, hadBefore: d.before !== undefined, after: d.after };
      }),
    businessRules: businessRulesView(verdict),
  };
}

function businessRulesView(verdict: VerdictRecord): DecisionView["businessRules"] {
  const b = verdict.businessRules;
  if (!b) return { absent: "This verdict was recorded before commit steps were given business rules." };
  return {
    from: b.from,
    given: b.given.map((r) => {
      const byRules = verdict.rules.filter((x) => x.businessRules?.includes(r.id)).map((x) => x.name);
      const used = b.used.includes(r.id);
      return {
        id: r.id,
        statement: r.statement,
        value: r.value,
        confirmedBy: r.confirmedBy,
        confirmedAt: r.confirmedAt,
        expiresAt: r.expiresAt ?? null,
        used,
        // A verdict recorded before apply's reads were kept apart: a read no rule made was apply's.
        usedBy: b.byApply ? [...byRules, ...(b.byApply.includes(r.id) ? ["apply"] : [])] : byRules.length ? byRules : used ? ["apply"] : [],
      };
    }),
  };
}
