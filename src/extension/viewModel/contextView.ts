/** The Context tab's view model: the exact request an agent step made, and what it can be diffed against. */
import type { AgentCallRecord, ChatMessage, StepRecord } from "../../engine/records";
import type { AgentCallSummary } from "../../engine/store";
import type { ContextView } from "../../protocol/webview";
import type { CallIndex } from "./records";
import { article } from "../../engine/errors";

/** What the Context tab's view of a step is built from. */
export interface ContextInputs {
  call: AgentCallRecord | undefined;
  countMessageTokens: ((message: ChatMessage, model: string) => number) | undefined;
  /** The case file's agent calls, for the picker; a context built alone (loadContext) has none. */
  calls?: CallIndex;
}

export function contextView(s: StepRecord, { call, countMessageTokens, calls }: ContextInputs): ContextView | { absent: string } {
  if (s.kind !== "agent") return { absent: `Only agent steps give a model a context; this is ${article(s.kind)} step.` };
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
    ...(calls ? comparableContexts(call, calls) : { compareWith: [], compareMore: 0 }),
  };
}

/** How many contexts of each kind the Context tab's picker offers at most. */
export const COMPARE_LIMIT = 25;

/**
 * What an agent step's context can be diffed against, nearest first: the same executor's steps in
 * the other runs of the case file (the same superstep first: that is "the same step in another
 * branch"), then this run's other agent steps. A step is its first model call, as in its context.
 * One pass over the steps' first calls, keeping the nearest few: no sort of the whole list, which
 * at 100 MB (9,000 steps) would take most of a click.
 */
function comparableContexts(call: AgentCallRecord, { firsts }: CallIndex): Pick<ContextView, "compareWith" | "compareMore"> {
  const near = (a: AgentCallSummary, b: AgentCallSummary): number =>
    Math.abs(a.superstep - call.superstep) - Math.abs(b.superstep - call.superstep) ||
    a.superstep - b.superstep ||
    a.runId.localeCompare(b.runId) ||
    a.executor.localeCompare(b.executor);
  const branch = new Nearest(near);
  const run = new Nearest(near);
  for (const c of firsts) {
    if (c.runId !== call.runId) {
      if (c.executor === call.executor) branch.offer(c);
    } else if (c.id !== call.id) run.offer(c);
  }
  const ref = (relation: "branch" | "run") => (c: AgentCallSummary) => ({
    relation,
    runId: c.runId,
    superstep: c.superstep,
    executor: c.executor,
    agentCallId: c.id,
    hash: c.hash,
    tokens: c.tokens,
  });
  return {
    compareWith: [...branch.best.map(ref("branch")), ...run.best.map(ref("run"))],
    compareMore: branch.more + run.more,
  };
}

/** The COMPARE_LIMIT least items offered, in order, and how many more were offered. */
class Nearest {
  readonly best: AgentCallSummary[] = [];
  more = 0;
  constructor(private readonly order: (a: AgentCallSummary, b: AgentCallSummary) => number) {}

  offer(c: AgentCallSummary): void {
    const best = this.best;
    if (best.length === COMPARE_LIMIT) {
      this.more++;
      if (this.order(c, best[COMPARE_LIMIT - 1]!) >= 0) return;
      best.pop();
    }
    let i = best.length;
    while (i > 0 && this.order(c, best[i - 1]!) < 0) i--;
    best.splice(i, 0, c);
  }
}
