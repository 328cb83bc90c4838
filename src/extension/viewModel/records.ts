/** The run's records the superstep details are built from, indexed once per detail (src/extension/viewModel.ts). */
import type { AgentCallRecord, IntentRecord, VerdictRecord } from "../../engine/records";
import type { CaseStore } from "../../engine/store";

/** A run's model calls, verdicts and intents, indexed by superstep and executor. */
export interface RunRecords {
  calls: Map<string, AgentCallRecord[]>;
  callById: Map<string, AgentCallRecord>;
  verdictByStep: Map<string, VerdictRecord[]>;
  verdictByCall: Map<string, VerdictRecord>;
  intents: Map<string, IntentRecord[]>;
}

export function indexRun(store: CaseStore, runId: string): RunRecords {
  const calls = indexBy(store.listAgentCalls(runId), (c) => stepKey(c.superstep, c.executor));
  const verdicts = store.listVerdicts(runId);
  const verdictByCall = new Map<string, VerdictRecord>();
  for (const v of verdicts) if (v.agentCallId !== undefined) verdictByCall.set(v.agentCallId, v);
  const callById = new Map<string, AgentCallRecord>();
  for (const list of calls.values()) for (const c of list) callById.set(c.id, c);
  return {
    calls,
    callById,
    verdictByStep: indexBy(verdicts, (v) => stepKey(v.superstep, v.executor)),
    verdictByCall,
    intents: indexBy(store.listIntents({ runId }), (i) => stepKey(i.superstep, i.executor)),
  };
}

export function stepKey(superstep: number, executor: string): string {
  return `${superstep}\0${executor}`;
}

export function indexBy<T>(items: T[], key: (item: T) => string): Map<string, T[]> {
  const m = new Map<string, T[]>();
  for (const it of items) {
    const k = key(it);
    const list = m.get(k);
    if (list) list.push(it);
    else m.set(k, [it]);
  }
  return m;
}

export function first<T>(list: T[] | undefined): T | undefined {
  return list?.[0];
}
