import type { ChatMessage, RunRecord } from "../engine/records";
import type { CaseStore } from "../engine/store";
import type { BranchView, ContextView, InspectorViewModel, SuperstepDetailView, SuperstepView } from "../protocol/webview";
import { encodeTimeline } from "../protocol/timeline";
import { contextView } from "./viewModel/contextView";
import { decisionFor, decisionView } from "./viewModel/decisionView";
import { intentView } from "./viewModel/intentsView";
import { callIndex, first, stepKey, superstepRecords } from "./viewModel/records";
import { requestsView } from "./viewModel/requestsView";
import { buildStateView } from "./viewModel/stateView";
import { openingTimeline, wholeTimeline } from "./viewModel/timeline";
import { article } from "../engine/errors";

export { COMPARE_LIMIT } from "./viewModel/contextView";
export { buildStateView } from "./viewModel/stateView";

/**
 * Builds the Run Inspector's view model from a case store: the run, its branches and a timeline
 * of supersteps. A superstep's details (contexts, decisions, intents, state) come separately, from
 * `buildSuperstepDetail`, when the person selects it. Pure apart from reading the store: no
 * vscode, no I/O of its own, so it is tested in plain Node against a real store. Called by the
 * inspector panel when it opens and whenever the case file changes.
 *
 * Nothing is invented: where the store has no record for something (no model call for a step, no
 * checkpoint for a superstep), the view model carries a sentence saying so.
 */

export interface ViewModelOptions {
  caseFile: { path: string; name: string };
  /** The run to show; defaults to the most recently updated run in the case file. */
  runId?: string;
  canRun: InspectorViewModel["canRun"];
}

export interface DetailOptions {
  /** Counts one message's tokens for the model; without it per-message counts are null. */
  countMessageTokens?: (message: ChatMessage, model: string) => number;
}

export class NoRunsError extends Error {
  constructor(caseFile: string) {
    super(`The case file ${caseFile} holds no runs yet.`);
    this.name = "NoRunsError";
  }
}

export class UnknownRunError extends Error {
  constructor(runId: string, caseFile: string) {
    super(`Run ${runId} is not in the case file ${caseFile}.`);
    this.name = "UnknownRunError";
  }
}

export function buildInspectorViewModel(store: CaseStore, opts: ViewModelOptions): InspectorViewModel {
  const { run, runs } = pickRun(store, opts);
  return viewModel(run, runs, opts, wholeTimeline(store, run.id));
}

/**
 * The view model a run's inspector opens with: the timeline's last supersteps, down to the run's
 * decision (viewModel/timeline.ts), marked `partial` unless they are the whole run. Undefined when
 * the decision is not among the last few hundred supersteps: then only the whole view model opens
 * it. Called by the inspector panel when it shows a run, before `buildInspectorViewModel`, so the
 * first paint does not wait for the whole run to be read.
 */
export function buildOpeningViewModel(store: CaseStore, opts: ViewModelOptions): InspectorViewModel | undefined {
  const { run, runs } = pickRun(store, opts);
  const opening = openingTimeline(store, run);
  if (!opening) return undefined;
  const model = viewModel(run, runs, opts, opening.supersteps);
  return opening.complete ? model : { ...model, partial: true };
}

function pickRun(store: CaseStore, opts: ViewModelOptions): { run: RunRecord; runs: RunRecord[] } {
  const runs = store.listRuns();
  if (runs.length === 0) throw new NoRunsError(opts.caseFile.path);
  const run = opts.runId !== undefined ? store.getRun(opts.runId) : latest(runs);
  if (!run) throw new UnknownRunError(opts.runId ?? "", opts.caseFile.path);
  return { run, runs };
}

function viewModel(run: RunRecord, runs: RunRecord[], opts: ViewModelOptions, supersteps: SuperstepView[]): InspectorViewModel {
  return {
    v: 1,
    caseFile: opts.caseFile,
    run: {
      id: run.id,
      workflow: { name: run.workflow.name, version: run.workflow.version, path: run.workflow.path ?? null },
      status: run.status,
      createdAt: run.createdAt,
      updatedAt: run.updatedAt,
      parentRunId: run.parentRunId ?? null,
      parentCheckpointId: run.parentCheckpointId ?? null,
      error: run.error ? { code: run.error.code, message: run.error.message } : null,
    },
    branches: branchTree(runs),
    timeline: encodeTimeline(supersteps),
    canRun: opts.canRun,
  };
}

/**
 * Everything about one superstep that the timeline leaves out: each step's context, decision and
 * intents, and the state at its checkpoint. Called by the inspector panel when the webview asks
 * (`loadSuperstep`), that is when the person selects the superstep.
 */
export function buildSuperstepDetail(store: CaseStore, runId: string, superstep: number, opts: DetailOptions = {}): SuperstepDetailView {
  if (!store.getRun(runId)) throw new UnknownRunError(runId, "this case file");
  const records = superstepRecords(store, runId, superstep);
  const calls = callIndex(store);
  const steps = store.listSteps(runId, superstep).map((s) => {
    const key = stepKey(superstep, s.executor);
    const summary = first(records.calls.get(key));
    const call = summary && records.callById.get(summary.id);
    const intents = records.intents.get(key) ?? [];
    return {
      stepId: s.id,
      context: contextView(s, { call, countMessageTokens: opts.countMessageTokens, calls }),
      decision: decisionView(s, { verdict: decisionFor(s, records), callById: records.callById }),
      intents:
        s.kind === "effect" ? intents.map(intentView) : { absent: `Only effect steps record intents; this is ${article(s.kind)} step.` },
    };
  });
  return { runId, superstep, steps, state: buildStateView(store, runId, superstep), requests: requestsView(store, runId, superstep) };
}

/**
 * One agent step's context, alone: what the Context tab diffs the shown step against when the
 * person picks another step (`loadContext`). Reads that one model call and its superstep's steps,
 * nothing else of the run. Its own `compareWith` is left empty (nothing reads it: the picker is
 * the shown step's); its messages carry token counts like the shown step's.
 */
export function buildContextView(
  store: CaseStore,
  runId: string,
  superstep: number,
  agentCallId: string,
  opts: DetailOptions = {},
): ContextView | { absent: string } {
  const call = store.getAgentCall(agentCallId);
  const step =
    call?.runId === runId && call.superstep === superstep
      ? store.listSteps(runId, superstep).find((s) => s.executor === call.executor)
      : undefined;
  if (!call || !step) return { absent: `No model call ${agentCallId} was recorded in superstep ${superstep} of ${runId}.` };
  return contextView(step, { call, countMessageTokens: opts.countMessageTokens });
}

/** Roots first, each run followed by its branches (depth first), so the picker reads as a tree. */
function branchTree(runs: RunRecord[]): BranchView[] {
  const ids = new Set(runs.map((r) => r.id));
  const children = new Map<string | undefined, RunRecord[]>();
  for (const r of runs) {
    const parent = r.parentRunId !== undefined && ids.has(r.parentRunId) ? r.parentRunId : undefined;
    const list = children.get(parent);
    if (list) list.push(r);
    else children.set(parent, [r]);
  }
  const out: BranchView[] = [];
  const visit = (parent: string | undefined): void => {
    for (const r of children.get(parent) ?? []) {
      out.push({
        runId: r.id,
        parentRunId: r.parentRunId ?? null,
        parentCheckpointId: r.parentCheckpointId ?? null,
        status: r.status,
        createdAt: r.createdAt,
      });
      visit(r.id);
    }
  };
  visit(undefined);
  return out;
}

function latest(runs: RunRecord[]): RunRecord {
  return runs.reduce((a, b) => (b.updatedAt > a.updatedAt ? b : a));
}
