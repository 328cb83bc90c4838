/** The Context tab's view model: the exact request an agent step made, and what it can be diffed against. */
import type { AgentCallRecord, ChatMessage, StepRecord } from "../../engine/records";
import type { CaseStore } from "../../engine/store";
import type { ContextView } from "../../protocol/webview";
import type { RunRecords } from "./records";
import { stepKey } from "./records";

/** What the Context tab's view of a step is built from. */
export interface ContextInputs {
  call: AgentCallRecord | undefined;
  countMessageTokens: ((message: ChatMessage, model: string) => number) | undefined;
  /** The run's records and the case file's other runs, for the picker; a context built alone (loadContext) has none. */
  records?: RunRecords;
  others?: OtherRuns;
}

export function contextView(s: StepRecord, { call, countMessageTokens, records, others }: ContextInputs): ContextView | { absent: string } {
  if (s.kind !== "agent")
    return { absent: `Only agent steps give a model a context; this is ${/^[aeiou]/.test(s.kind) ? "an" : "a"} ${s.kind} step.` };
  if (!call) return { absent: "No model call was recorded for this step." };
  const model = call.request.model;
  return {
    agentCallId: call.id,
    model,
    provider: call.provider,
    mode: call.mode,
    hash: call.hash,
    originalHash: call.originalHash ?? null,
    messages: call.request.messages.map((m) => ({
      role: m.role,
      content: m.content,
      tokens: countMessageTokens ? countMessageTokens(m, model) : null,
    })),
    tokens: call.tokens
      ? { count: call.tokens.count, soft: call.tokens.soft ?? null, hard: call.tokens.hard ?? null, tokenizer: call.tokens.tokenizer }
      : null,
    raw: call.raw ?? null,
    extracts: call.extracts ?? [],
    summarised: call.summarised ?? null,
    ...(records && others ? comparableContexts(call, records, others) : { compareWith: [], compareMore: 0 }),
  };
}

/** How many contexts of each kind the Context tab's picker offers at most. */
export const COMPARE_LIMIT = 25;

/**
 * What an agent step's context can be diffed against, nearest first: the same executor's steps in
 * the other runs of the case file (the same superstep first: that is "the same step in another
 * branch"), then this run's other agent steps. A step is its first model call, as in its context.
 */
function comparableContexts(
  call: AgentCallRecord,
  records: RunRecords,
  others: OtherRuns,
): Pick<ContextView, "compareWith" | "compareMore"> {
  const near = (a: AgentCallRecord, b: AgentCallRecord): number =>
    Math.abs(a.superstep - call.superstep) - Math.abs(b.superstep - call.superstep) ||
    a.superstep - b.superstep ||
    a.runId.localeCompare(b.runId) ||
    a.executor.localeCompare(b.executor);
  const branch = others.firstCalls(call.executor).sort(near);
  const run = [...records.calls.values()].flatMap((list) => (list[0] && list[0].id !== call.id ? [list[0]] : [])).sort(near);
  const ref = (relation: "branch" | "run") => (c: AgentCallRecord) => ({
    relation,
    runId: c.runId,
    superstep: c.superstep,
    executor: c.executor,
    agentCallId: c.id,
    hash: c.hash,
    tokens: c.tokens?.count ?? null,
  });
  return {
    compareWith: [...branch.slice(0, COMPARE_LIMIT).map(ref("branch")), ...run.slice(0, COMPARE_LIMIT).map(ref("run"))],
    compareMore: Math.max(0, branch.length - COMPARE_LIMIT) + Math.max(0, run.length - COMPARE_LIMIT),
  };
}

/** The agent steps of every run but one, read once per superstep detail and only if it has an agent step. */
export class OtherRuns {
  private byExecutor: Map<string, AgentCallRecord[]> | undefined;
  constructor(
    private readonly store: CaseStore,
    private readonly runId: string,
  ) {}

  /** Each other run's first call per (superstep, executor), for one executor. */
  firstCalls(executor: string): AgentCallRecord[] {
    if (!this.byExecutor) {
      this.byExecutor = new Map();
      const seen = new Set<string>();
      for (const c of this.store.listAgentCalls()) {
        const key = `${c.runId}\0${stepKey(c.superstep, c.executor)}`;
        if (c.runId === this.runId || seen.has(key)) continue;
        seen.add(key);
        const list = this.byExecutor.get(c.executor);
        if (list) list.push(c);
        else this.byExecutor.set(c.executor, [c]);
      }
    }
    return [...(this.byExecutor.get(executor) ?? [])];
  }
}
