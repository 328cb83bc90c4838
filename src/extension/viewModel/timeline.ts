/**
 * The Run Inspector's timeline rows (src/extension/viewModel.ts): the whole run's, or only its
 * last supersteps down to its decision, which is what the inspector opens on.
 */
import type { RunRecord, StepRecord, VerdictRecord } from "../../engine/records";
import type { AgentCallSummary, CaseStore } from "../../engine/store";
import type { StepView, SuperstepView } from "../../protocol/webview";
import { decisionFor } from "./decisionView";
import type { DecisionRecords } from "./records";
import { indexBy, runDecisionRecords, stepKey } from "./records";

/** Every superstep of the run: its steps and checkpoints, each agent or commit step with its verdict. */
export function wholeTimeline(store: CaseStore, runId: string): SuperstepView[] {
  const records = runDecisionRecords(store, runId);
  const stepsBySuperstep = new Map<number, StepRecord[]>();
  for (const s of store.listSteps(runId)) {
    const list = stepsBySuperstep.get(s.superstep);
    if (list) list.push(s);
    else stepsBySuperstep.set(s.superstep, [s]);
  }
  const checkpoints = new Map(store.listCheckpoints(runId).map((c) => [c.superstep, c]));
  const numbers = [...new Set([...stepsBySuperstep.keys(), ...checkpoints.keys()])].sort((a, b) => a - b);
  return numbers.map((n) => {
    const summary = checkpoints.get(n);
    const steps = (stepsBySuperstep.get(n) ?? []).map((s) => stepView(s, decisionFor(s, records)));
    return { superstep: n, checkpointId: summary?.id ?? null, at: summary?.createdAt ?? null, steps };
  });
}

/** At least this many rows open the timeline (a tall panel's worth), more when the decision lies further back. */
export const OPENING_ROWS = 64;
/** How far back from the run's last superstep the opening looks for its decision before giving up. */
export const OPENING_SEARCH = 512;

/**
 * The run's last supersteps, read one superstep at a time with the store's per-superstep queries
 * (steps, checkpoints, verdicts and agent calls by run and superstep: indexed), from the last one
 * back until the rows hold a step with a verdict (where the inspector opens) and `OPENING_ROWS`
 * rows. The rows are exactly those of `wholeTimeline` for the same supersteps: a verdict is
 * recorded in the superstep of the call it judges or a later one, all read before it; the last
 * recorded one wins, as there. `complete` when the rows reach the run's first superstep (0, or
 * for a branch the one it was forked at); undefined when the run has no checkpoint or no verdict
 * within `OPENING_SEARCH` supersteps of its end (then the inspector opens where the whole
 * timeline says). A run of fewer than `OPENING_SEARCH` supersteps of its own is read whole.
 */
export function openingTimeline(store: CaseStore, run: RunRecord): { supersteps: SuperstepView[]; complete: boolean } | undefined {
  const runId = run.id;
  const last = store.latestCheckpoint(runId);
  if (!last) return undefined;
  let top = last.superstep;
  // A superstep that failed recorded its steps but no checkpoint.
  while (store.listSteps(runId, top + 1).length > 0) top++;
  // A branch's supersteps go on from the one it was forked at (its first checkpoint's number).
  const floor = run.parentCheckpointId !== undefined ? (store.getCheckpoint(run.parentCheckpointId)?.superstep ?? 0) : 0;
  // A short run costs less read whole (a few queries) than one superstep at a time (a few each).
  if (top - floor < OPENING_SEARCH) return { supersteps: wholeTimeline(store, runId), complete: true };
  const verdictByCall = new Map<string, VerdictRecord>();
  const rows: SuperstepView[] = [];
  let decided = false;
  let s = top;
  for (; s >= floor && top - s < OPENING_SEARCH && !(decided && rows.length >= OPENING_ROWS); s--) {
    const steps = store.listSteps(runId, s);
    const checkpoints = store.listCheckpoints(runId, s);
    if (steps.length === 0 && checkpoints.length === 0) continue;
    const verdicts = store.listVerdicts(runId, { superstep: s });
    // This superstep's verdicts, the last recorded winning; a later superstep's verdict on the same call wins over them.
    const judged = new Map<string, VerdictRecord>();
    for (const v of verdicts) if (v.agentCallId !== undefined) judged.set(v.agentCallId, v);
    for (const [id, v] of judged) if (!verdictByCall.has(id)) verdictByCall.set(id, v);
    const calls: Map<string, readonly AgentCallSummary[]> = steps.some((st) => st.kind === "agent")
      ? indexBy(store.listAgentCalls(runId, s), (c) => stepKey(c.superstep, c.executor))
      : new Map();
    const records: DecisionRecords = { calls, verdictByStep: indexBy(verdicts, (v) => stepKey(v.superstep, v.executor)), verdictByCall };
    const row = steps.map((st) => stepView(st, decisionFor(st, records)));
    decided ||= row.some((st) => st.verdict !== null);
    const checkpoint = checkpoints[checkpoints.length - 1];
    rows.push({ superstep: s, checkpointId: checkpoint?.id ?? null, at: checkpoint?.createdAt ?? null, steps: row });
  }
  const complete = s < floor;
  if (!decided && !complete) return undefined;
  return { supersteps: rows.reverse(), complete };
}

function stepView(s: StepRecord, verdict: VerdictRecord | undefined): StepView {
  return {
    id: s.id,
    executor: s.executor,
    kind: s.kind,
    status: s.status,
    durationMs: s.durationMs,
    writes: [...s.writes],
    error: s.error ? { code: s.error.code, message: s.error.message } : null,
    verdict: verdict?.verdict ?? null,
  };
}
