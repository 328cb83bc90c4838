/**
 * The records the inspector's views are built from (src/extension/viewModel.ts): for the timeline,
 * a whole run's verdicts and its agent calls' summaries; for a superstep's details, only what that
 * superstep shows, read with the store's per-superstep queries so that a click costs the same on
 * a 100 MB case file as on a small one.
 */
import type { AgentCallRecord, IntentRecord, VerdictRecord } from "../../engine/records";
import type { AgentCallSummary, CaseStore } from "../../engine/store";

/** Verdicts and agent calls indexed by step (superstep and executor), as decisionFor reads them. */
export interface DecisionRecords {
  /** Each step's agent calls, in commit order. */
  calls: Map<string, readonly AgentCallSummary[]>;
  verdictByStep: Map<string, VerdictRecord[]>;
  /** The verdict that judged each agent call (the last recorded, if several). */
  verdictByCall: Map<string, VerdictRecord>;
}

/** One superstep's records: its steps' calls (whole, for the Context tab), verdicts and intents. */
export interface SuperstepRecords extends DecisionRecords {
  /** This superstep's calls and the calls its verdicts judged, by id. */
  callById: Map<string, AgentCallRecord>;
  intents: Map<string, IntentRecord[]>;
}

/** For the timeline: the run's verdicts, and its calls as summaries (their ids and steps: no request or response is parsed). */
export function runDecisionRecords(store: CaseStore, runId: string): DecisionRecords {
  const verdicts = store.listVerdicts(runId);
  const verdictByCall = new Map<string, VerdictRecord>();
  for (const v of verdicts) if (v.agentCallId !== undefined) verdictByCall.set(v.agentCallId, v);
  const calls: Map<string, readonly AgentCallSummary[]> = callIndex(store).byRun.get(runId) ?? new Map();
  return { calls, verdictByStep: indexBy(verdicts, (v) => stepKey(v.superstep, v.executor)), verdictByCall };
}

/**
 * What superstep `superstep` of a run shows: its calls (found in the summaries, read whole by id),
 * the verdicts recorded in it, the verdict (of any superstep: the last recorded) that judged each
 * of its calls, and the calls its own verdicts judged (of any superstep).
 */
export function superstepRecords(store: CaseStore, runId: string, superstep: number): SuperstepRecords {
  const index = callIndex(store);
  const calls = new Map<string, readonly AgentCallSummary[]>();
  const callById = new Map<string, AgentCallRecord>();
  const verdictByCall = new Map<string, VerdictRecord>();
  const read = (id: string): void => {
    const call = callById.has(id) ? undefined : store.getAgentCall(id);
    if (call?.runId === runId) callById.set(id, call);
  };
  for (const c of index.bySuperstep.get(`${runId}\0${superstep}`) ?? []) {
    const key = stepKey(c.superstep, c.executor);
    if (!calls.has(key)) calls.set(key, index.byStep.get(`${runId}\0${key}`)!);
    read(c.id);
    const judged = store.listVerdicts(runId, { agentCallId: c.id });
    if (judged.length) verdictByCall.set(c.id, judged[judged.length - 1]!);
  }
  const verdicts = store.listVerdicts(runId, { superstep });
  for (const v of verdicts) if (v.agentCallId !== undefined) read(v.agentCallId);
  const intents = store.listIntents({ runId }).filter((i) => i.superstep === superstep);
  return {
    calls,
    callById,
    verdictByStep: indexBy(verdicts, (v) => stepKey(v.superstep, v.executor)),
    verdictByCall,
    intents: indexBy(intents, (i) => stepKey(i.superstep, i.executor)),
  };
}

/** The case file's agent calls, grouped for the views; built once per list of summaries the store hands out. */
export interface CallIndex {
  /** Every call by run, superstep and executor (`run\0superstep\0executor`), in commit order. */
  byStep: Map<string, AgentCallSummary[]>;
  /** Every call by run and superstep (`run\0superstep`), in commit order. */
  bySuperstep: Map<string, AgentCallSummary[]>;
  /** Each step's first call (what stands for the step in the Context tab's picker), in commit order. */
  firsts: AgentCallSummary[];
  /** Each run's calls by step (stepKey), the same lists as `byStep`: what the timeline's decisions read. */
  byRun: Map<string, Map<string, AgentCallSummary[]>>;
}

const indexes = new WeakMap<readonly AgentCallSummary[], CallIndex>();

/**
 * The store's agent call summaries, grouped. The store returns the same array until a call is
 * added (CaseStore.agentCallSummaries), so a click on a case file that has not grown reuses the
 * grouping the first load made.
 */
export function callIndex(store: CaseStore): CallIndex {
  const summaries = store.agentCallSummaries();
  let index = indexes.get(summaries);
  if (!index) {
    index = { byStep: new Map(), bySuperstep: new Map(), firsts: [], byRun: new Map() };
    for (const c of summaries) {
      const key = stepKey(c.superstep, c.executor);
      const step = `${c.runId}\0${key}`;
      const list = index.byStep.get(step);
      if (list) list.push(c);
      else {
        const made = [c];
        index.byStep.set(step, made);
        index.firsts.push(c);
        let run = index.byRun.get(c.runId);
        if (!run) index.byRun.set(c.runId, (run = new Map()));
        run.set(key, made);
      }
      const superstep = `${c.runId}\0${c.superstep}`;
      const inSuperstep = index.bySuperstep.get(superstep);
      if (inSuperstep) inSuperstep.push(c);
      else index.bySuperstep.set(superstep, [c]);
    }
    indexes.set(summaries, index);
  }
  return index;
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

export function first<T>(list: readonly T[] | undefined): T | undefined {
  return list?.[0];
}
