import type {
  AgentCallRecord,
  ChatMessage,
  FactRecord,
  IntentConflict,
  IntentRecord,
  IntentTerms,
  Json,
  Provenance,
  RunRecord,
  StepRecord,
  VerdictRecord,
} from "../engine/records";
import { extractProvenance, isExtractValue } from "../engine/extracts";
import type { CaseStore } from "../engine/store";
import type {
  BranchView,
  ContextView,
  DecisionView,
  InspectorViewModel,
  IntentConflictView,
  IntentView,
  StateEntryView,
  StateView,
  StepView,
  SuperstepDetailView,
  SuperstepView,
} from "../protocol/webview";
import { encodeTimeline } from "../protocol/timeline";

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
  const runs = store.listRuns();
  if (runs.length === 0) throw new NoRunsError(opts.caseFile.path);
  const run = opts.runId !== undefined ? store.getRun(opts.runId) : latest(runs);
  if (!run) throw new UnknownRunError(opts.runId ?? "", opts.caseFile.path);

  const records = indexRun(store, run.id);
  const stepsBySuperstep = new Map<number, StepRecord[]>();
  for (const s of store.listSteps(run.id)) {
    const list = stepsBySuperstep.get(s.superstep);
    if (list) list.push(s);
    else stepsBySuperstep.set(s.superstep, [s]);
  }
  const checkpoints = new Map(store.listCheckpoints(run.id).map((c) => [c.superstep, c]));
  const numbers = [...new Set([...stepsBySuperstep.keys(), ...checkpoints.keys()])].sort((a, b) => a - b);

  const supersteps: SuperstepView[] = numbers.map((n) => {
    const summary = checkpoints.get(n);
    const steps = (stepsBySuperstep.get(n) ?? []).map((s) => stepView(s, decisionFor(s, records)));
    return { superstep: n, checkpointId: summary?.id ?? null, at: summary?.createdAt ?? null, steps };
  });

  return {
    v: 1,
    caseFile: opts.caseFile,
    run: {
      id: run.id,
      workflow: { name: run.workflow.name, version: run.workflow.version },
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
 * The state at the checkpoint after superstep `superstep` of a run, each key marked against the
 * checkpoint before it (for a branch's first checkpoint: the one it was forked from). Called by
 * the inspector panel as part of a superstep's details (`buildSuperstepDetail`).
 */
export function buildStateView(store: CaseStore, runId: string, superstep: number): StateView {
  const summaries = store.listCheckpoints(runId);
  const summary = summaries.find((c) => c.superstep === superstep);
  const cp = summary ? store.getCheckpoint(summary.id) : undefined;
  if (!cp) return { absent: `No checkpoint was recorded after superstep ${superstep}.` };
  const earlier = summaries.filter((c) => c.superstep < superstep).pop();
  const run = store.getRun(runId);
  const previous = earlier
    ? store.getCheckpoint(earlier.id)
    : run?.parentCheckpointId !== undefined
      ? store.getCheckpoint(run.parentCheckpointId)
      : undefined;
  const values = store.readValues(cp.keys);
  const provenance = new ProvenanceIndex(store);
  const entries: StateEntryView[] = Object.keys(cp.keys)
    .sort()
    .map((key) => {
      const ref = cp.keys[key]!;
      const before = previous?.keys[key];
      const change = !previous ? null : !before ? "new" : before.version !== ref.version || before.run !== ref.run ? "changed" : null;
      return {
        key,
        change,
        value: values[key] ?? null,
        version: ref.version,
        writtenBy: ref.run,
        provenance: provenance.lookup(ref.run, key, ref.version) ?? extractedFrom(values[key]),
      };
    });
  return {
    checkpointId: cp.id,
    comparedWith: previous ? { runId: previous.runId, superstep: previous.superstep } : null,
    entries,
  };
}

/** A run's model calls, verdicts and intents, indexed by superstep and executor. */
interface RunRecords {
  calls: Map<string, AgentCallRecord[]>;
  callById: Map<string, AgentCallRecord>;
  verdictByStep: Map<string, VerdictRecord[]>;
  verdictByCall: Map<string, VerdictRecord>;
  intents: Map<string, IntentRecord[]>;
}

function indexRun(store: CaseStore, runId: string): RunRecords {
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

/**
 * Everything about one superstep that the timeline leaves out: each step's context, decision and
 * intents, and the state at its checkpoint. Called by the inspector panel when the webview asks
 * (`loadSuperstep`), that is when the person selects the superstep.
 */
export function buildSuperstepDetail(store: CaseStore, runId: string, superstep: number, opts: DetailOptions = {}): SuperstepDetailView {
  if (!store.getRun(runId)) throw new UnknownRunError(runId, "this case file");
  const records = indexRun(store, runId);
  const others = new OtherRuns(store, runId);
  const steps = store.listSteps(runId, superstep).map((s) => {
    const key = stepKey(superstep, s.executor);
    const inputs: StepInputs = {
      call: first(records.calls.get(key)),
      verdict: decisionFor(s, records),
      callById: records.callById,
      countMessageTokens: opts.countMessageTokens,
      records,
      others,
    };
    const intents = records.intents.get(key) ?? [];
    return {
      stepId: s.id,
      context: contextView(s, inputs),
      decision: decisionView(s, inputs),
      intents: s.kind === "effect" ? intents.map(intentView) : { absent: `Only effect steps record intents; this is a ${s.kind} step.` },
    };
  });
  return { runId, superstep, steps, state: buildStateView(store, runId, superstep) };
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

interface StepInputs {
  call: AgentCallRecord | undefined;
  verdict: VerdictRecord | undefined;
  callById: Map<string, AgentCallRecord>;
  countMessageTokens: DetailOptions["countMessageTokens"];
  records: RunRecords;
  others: OtherRuns;
}

function contextView(
  s: StepRecord,
  {
    call,
    countMessageTokens,
    records,
    others,
  }: Pick<StepInputs, "call" | "countMessageTokens"> & Partial<Pick<StepInputs, "records" | "others">>,
): ContextView | { absent: string } {
  if (s.kind !== "agent") return { absent: `Only agent steps give a model a context; this is a ${s.kind} step.` };
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
class OtherRuns {
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

/** Agent steps show the verdict that judged their proposal; commit steps show their own verdict. */
function decisionFor(s: StepRecord, { calls, verdictByStep, verdictByCall }: RunRecords): VerdictRecord | undefined {
  if (s.kind === "commit") return first(verdictByStep.get(stepKey(s.superstep, s.executor)));
  if (s.kind === "agent") {
    for (const c of calls.get(stepKey(s.superstep, s.executor)) ?? []) {
      const v = verdictByCall.get(c.id);
      if (v) return v;
    }
  }
  return undefined;
}

function decisionView(s: StepRecord, { verdict, callById }: StepInputs): DecisionView | { absent: string } {
  if (s.kind !== "agent" && s.kind !== "commit") {
    return { absent: `Proposal vs commit applies to agent and commit steps; this is a ${s.kind} step.` };
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
        usedBy: byRules.length ? byRules : used ? ["apply"] : [],
      };
    }),
  };
}

function intentView(i: IntentRecord): IntentView {
  return {
    id: i.id,
    key: i.key ?? i.id,
    reusedFrom: i.reusedFrom ? { run: i.reusedFrom.run, intent: i.reusedFrom.intent } : null,
    conflict: i.conflict ? conflictView(i.conflict) : null,
    executor: i.executor,
    superstep: i.superstep,
    action: i.action,
    target: i.target,
    status: i.status,
    payload: i.payload,
    reliesOn: i.reliesOn,
    reference: i.reference ?? null,
    error: i.error ? { code: i.error.code, message: i.error.message } : null,
    drift: i.drift ?? null,
    createdAt: i.createdAt,
    updatedAt: i.updatedAt,
  };
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

/** Facts are recorded per writing run; a branch's inherited keys point into its parent's facts. */
class ProvenanceIndex {
  private readonly byRun = new Map<string, Map<string, Provenance>>();
  constructor(private readonly store: CaseStore) {}

  lookup(run: string, key: string, version: number): Provenance | null {
    let index = this.byRun.get(run);
    if (!index) {
      index = new Map();
      for (const f of this.store.listFacts(run)) index.set(`${f.key}\0${f.version}`, provenanceOf(f));
      this.byRun.set(run, index);
    }
    return index.get(`${key}\0${version}`) ?? null;
  }
}

/** An extract from a long document carries its own label: the document's source and the version it was taken from. */
function extractedFrom(value: Json | undefined): Provenance | null {
  return isExtractValue(value) ? extractProvenance(value) : null;
}

function provenanceOf(f: FactRecord): Provenance {
  return { source: f.source, sourceVersion: f.sourceVersion, readAt: f.readAt };
}

function latest(runs: RunRecord[]): RunRecord {
  return runs.reduce((a, b) => (b.updatedAt > a.updatedAt ? b : a));
}

function stepKey(superstep: number, executor: string): string {
  return `${superstep}\0${executor}`;
}

function indexBy<T>(items: T[], key: (item: T) => string): Map<string, T[]> {
  const m = new Map<string, T[]>();
  for (const it of items) {
    const k = key(it);
    const list = m.get(k);
    if (list) list.push(it);
    else m.set(k, [it]);
  }
  return m;
}

function first<T>(list: T[] | undefined): T | undefined {
  return list?.[0];
}

/** Both intents of a conflict as rows a person reads across: every leaf path of either side. */
function conflictView(c: IntentConflict): IntentConflictView {
  const differs = new Set(c.differs.map((d) => d.path));
  const sides = (t: IntentTerms): Json => ({ action: t.action, target: t.target, payload: t.payload, reliesOn: t.reliesOn });
  const a = leaves(sides(c.existing));
  const b = leaves(sides(c.proposed));
  const paths = [...new Set([...a.keys(), ...b.keys()])];
  return {
    key: c.key,
    existing: { run: c.existing.run, intent: c.existing.intent, status: c.existing.status, reference: c.existing.reference ?? null },
    rows: paths.map((path) => ({
      path,
      existing: a.get(path) ?? null,
      proposed: b.get(path) ?? null,
      differs: differs.has(path) || [...differs].some((d) => path.startsWith(`${d}.`)),
    })),
  };
}

/** Leaf values of a JSON value by dotted path (arrays and empty objects count as leaves). */
function leaves(value: Json, prefix = "", out = new Map<string, Json>()): Map<string, Json> {
  if (value !== null && typeof value === "object" && !Array.isArray(value) && Object.keys(value).length > 0) {
    for (const [k, v] of Object.entries(value)) leaves(v, prefix ? `${prefix}.${k}` : k, out);
  } else out.set(prefix, value);
  return out;
}
