import { diffPaths, getPath } from "../engine/effectCompare";
import type { AgentCallRecord, EventRecord, IntentRecord, Json, RunRecord, VerdictRecord } from "../engine/records";
import { isCasefileError } from "../engine/errors";
import type { CaseStore } from "../engine/store";
import {
  INSPECT_FORMAT,
  InspectOutputSchema,
  type InspectAgentCall,
  type InspectDrift,
  type InspectIntent,
  type InspectOutcome,
  type InspectOutput,
  type InspectRequest,
  type RunInspection,
} from "../protocol/inspect";

export type { RunInspection } from "../protocol/inspect";
// The text form lives beside: callers (main.ts, the tests) take both from here.
export { formatInspection } from "./inspectFormat";

/**
 * `casefile inspect`: everything the case file knows about each run, as the stable JSON of
 * src/protocol/inspect.ts and as text for a terminal. Called by main.ts's inspect command; the
 * object is parsed with the schema before it is printed, so the documented form is the printed one.
 */
export function inspectCaseFile(
  store: CaseStore,
  caseFile: string,
  runId?: string,
  /** What the store knows beside the runs: uncompacted journal records, damaged rows (absent today). */
  extra: Pick<InspectOutput, "journal" | "damaged"> = {},
): InspectOutput {
  const { runs, unreadable } = inspectReadable(store, runId);
  return InspectOutputSchema.parse({ v: INSPECT_FORMAT, caseFile, ...extra, runs, unreadable });
}

/**
 * inspectRuns one run at a time, so that a run whose records are damaged (CORRUPT_CASE_FILE) is
 * listed as unreadable instead of aborting the whole command. Each call sees a store whose
 * listRuns holds only the runs whose own record reads, so the others' branches still show. A
 * store that can list its run ids without reading the records (the case file) names even a run
 * whose own record is damaged.
 */
function inspectReadable(
  store: CaseStore & { runIds?(): string[] },
  runId?: string,
): { runs: RunInspection[]; unreadable: { run: string; message: string }[] } {
  const unreadable: { run: string; message: string }[] = [];
  const corrupt = (run: string, e: unknown): void => {
    if (!isCasefileError(e) || e.code !== "CORRUPT_CASE_FILE") throw e;
    unreadable.push({ run, message: e.message });
  };
  const records: RunRecord[] = [];
  for (const id of store.runIds?.() ?? store.listRuns().map((r) => r.id)) {
    try {
      records.push(store.getRun(id)!);
    } catch (e) {
      if (runId === undefined || runId === id) corrupt(id, e);
    }
  }
  const view = Object.create(store, { listRuns: { value: () => records } }) as CaseStore;
  const runs: RunInspection[] = [];
  for (const r of records) {
    if (runId !== undefined && r.id !== runId) continue;
    try {
      runs.push(...inspectRuns(view, r.id));
    } catch (e) {
      corrupt(r.id, e);
    }
  }
  return { runs, unreadable };
}

export function inspectRuns(store: CaseStore, runId?: string): RunInspection[] {
  const runs = store.listRuns();
  const chosen = runId ? runs.filter((r) => r.id === runId) : runs;
  // Intent events may be written by another run of the case (a resume resolving an open intent).
  const intentEvents = store.listEvents().filter((e) => e.type === "intent");
  return chosen.map((run) => inspectRun(store, run, runs, intentEvents));
}

function inspectRun(store: CaseStore, run: RunRecord, runs: RunRecord[], intentEvents: EventRecord[]): RunInspection {
  const checkpoints = store.listCheckpoints(run.id);
  const bySuperstep = new Map<number, RunInspection["supersteps"][number]>();
  const at = (n: number) => {
    let s = bySuperstep.get(n);
    if (!s) bySuperstep.set(n, (s = { superstep: n, changed: [], steps: [] }));
    return s;
  };
  let prevKeys: Record<string, { version: number; run: string }> = {};
  for (const c of checkpoints) {
    const cp = store.getCheckpoint(c.id)!;
    const s = at(c.superstep);
    s.checkpoint = c.id;
    s.answered = cp.pending.some((m) => m.kind === "answer");
    s.changed = Object.keys(cp.keys).filter((k) => JSON.stringify(cp.keys[k]) !== JSON.stringify(prevKeys[k]));
    prevKeys = cp.keys;
  }
  for (const st of store.listSteps(run.id)) {
    at(st.superstep).steps.push({
      executor: st.executor,
      kind: st.kind,
      status: st.status,
      durationMs: st.durationMs,
      writes: st.writes,
      ...(st.error ? { error: st.error.message } : {}),
    });
  }
  const events = store.listEvents({ runId: run.id });
  const latest = store.latestCheckpoint(run.id);
  const verdicts = store.listVerdicts(run.id).map(inspectVerdict);
  const requests = inspectRequests(events, latest?.waiting ?? []);
  const inspected: Omit<RunInspection, "outcome"> = {
    id: run.id,
    workflow: run.workflow.name,
    version: run.workflow.version,
    status: run.status,
    createdAt: run.createdAt,
    updatedAt: run.updatedAt,
    ...(run.input !== undefined ? { input: run.input } : {}),
    ...(run.parentRunId ? { parent: { run: run.parentRunId, checkpoint: run.parentCheckpointId! } } : {}),
    ...(run.patch !== undefined ? { patched: run.patch } : {}),
    ...(run.error ? { error: run.error } : {}),
    outputs: run.outputs ?? [],
    supersteps: [...bySuperstep.values()].sort((a, b) => a.superstep - b.superstep),
    agentCalls: inspectAgentCalls(store, run),
    verdicts,
    intents: store.listIntents({ runId: run.id }).map((i) => inspectIntent(i, intentEvents)),
    warnings: events
      .filter((e) => e.type === "warning")
      .map((e) => {
        const d = e.data as { executor?: string; message?: string };
        return { superstep: e.superstep, ...(d.executor ? { executor: d.executor } : {}), message: String(d.message ?? ""), at: e.at };
      }),
    requests,
    // A request answered in another run (this one superseded by it) is no longer waiting here.
    waiting: (latest?.waiting ?? [])
      .filter((w) => requests.find((q) => q.id === w.id)?.status !== "answered")
      .map((w) => ({
        id: w.id,
        executor: w.executor,
        title: w.prompt.title,
        ...(w.prompt.options ? { options: w.prompt.options } : {}),
      })),
    branches: runs.filter((r) => r.parentRunId === run.id).map((r) => r.id),
    extracts: events
      .filter((e) => e.type === "extract")
      .map((e) => {
        const d = e.data as { key: string; sourceVersion: string; stale: boolean; reason: string };
        return { superstep: e.superstep, key: d.key, sourceVersion: d.sourceVersion, stale: d.stale, reason: d.reason };
      }),
  };
  return { ...inspected, outcome: outcomeOf(inspected) };
}

/**
 * The agent calls of a run with the call index the engine gave each (the scripted fixture's
 * `call`): calls of the same executor before it in the run and, for a branch, in its ancestors up
 * to the checkpoint it was forked from (engine.ts, agentCallCounts).
 */
function inspectAgentCalls(store: CaseStore, run: RunRecord): InspectAgentCall[] {
  const counts = new Map<string, number>();
  let upTo = Number.POSITIVE_INFINITY;
  for (let r: RunRecord | undefined = run; r?.parentRunId && r.parentCheckpointId;) {
    const forkedAt = store.listCheckpoints(r.parentRunId).find((c) => c.id === r!.parentCheckpointId);
    if (!forkedAt) break;
    upTo = Math.min(upTo, forkedAt.superstep);
    const parentId: string = r.parentRunId;
    for (const c of store.listAgentCalls(parentId)) if (c.superstep <= upTo) counts.set(c.executor, (counts.get(c.executor) ?? 0) + 1);
    r = store.getRun(parentId);
  }
  const calls = store.listAgentCalls(run.id).sort((a, b) => a.superstep - b.superstep);
  return calls.map((c) => {
    const callIndex = counts.get(c.executor) ?? 0;
    counts.set(c.executor, callIndex + 1);
    return inspectAgentCall(c, callIndex);
  });
}

function inspectAgentCall(c: AgentCallRecord, callIndex: number): InspectAgentCall {
  const tokens = c.tokens
    ? {
        count: c.tokens.count,
        ...(c.tokens.soft !== undefined ? { soft: c.tokens.soft } : {}),
        ...(c.tokens.hard !== undefined ? { hard: c.tokens.hard } : {}),
        tokenizer: c.tokens.tokenizer,
      }
    : undefined;
  return {
    id: c.id,
    step: c.id.startsWith(`${c.runId}:`) ? c.id.slice(c.runId.length + 1) : `${c.superstep}:${c.executor}`,
    superstep: c.superstep,
    executor: c.executor,
    callIndex,
    model: c.request.model,
    params: c.request.params,
    provider: c.provider,
    mode: c.mode,
    hash: c.hash,
    ...(c.originalHash ? { originalHash: c.originalHash } : {}),
    messages: c.request.messages.length,
    ...(tokens ? { tokens } : {}),
    ...(c.summarised ? { summarised: c.summarised } : {}),
    ...(c.rulesInForce ? { rulesInForce: c.rulesInForce } : c.rules ? { rules: c.rules } : {}),
    ...(c.rulesFrom ? { rulesFrom: c.rulesFrom } : {}),
    ...(c.extracts ? { extracts: c.extracts } : {}),
    ...(c.raw !== undefined ? { raw: c.raw } : {}),
    ...(c.proposal !== undefined ? { proposal: c.proposal } : {}),
    ...(c.rejection ? { rejection: c.rejection } : {}),
    ...(c.usage !== undefined ? { usage: c.usage } : {}),
    at: c.at,
    durationMs: c.durationMs,
  };
}

function inspectVerdict(v: VerdictRecord): RunInspection["verdicts"][number] {
  const proposal = v.proposal as { action?: Json; facts?: Json } | undefined;
  return {
    id: v.id,
    superstep: v.superstep,
    executor: v.executor,
    ...(v.agentCallId ? { agentCallId: v.agentCallId } : {}),
    action: proposal?.action ?? null,
    ...(v.proposal !== undefined ? { proposal: v.proposal } : {}),
    citedFacts: Array.isArray(proposal?.facts) ? proposal.facts.map(String) : [],
    verdict: v.verdict,
    reason: v.reason,
    rules: v.rules,
    ...(v.businessRules ? { businessRules: v.businessRules } : {}),
    diff: v.diff,
    at: v.at,
  };
}

function inspectIntent(i: IntentRecord, intentEvents: EventRecord[]): InspectIntent {
  return {
    key: i.key ?? i.id,
    id: i.id,
    superstep: i.superstep,
    executor: i.executor,
    action: i.action,
    target: i.target,
    status: i.status,
    payload: i.payload,
    reliesOn: i.reliesOn,
    ...(i.basis ? { basis: i.basis } : {}),
    ...(i.expectedVersion !== undefined ? { expectedVersion: i.expectedVersion } : {}),
    ...(i.reference !== undefined ? { reference: i.reference } : {}),
    ...(i.error ? { error: i.error } : {}),
    ...(i.drift !== undefined && i.drift !== null ? { drift: driftOf(i) } : {}),
    history: intentEvents
      .filter((e) => (e.data as { id?: string }).id === i.id)
      .map((e) => {
        const d = e.data as { status?: string; what?: string };
        return { at: e.at, superstep: e.superstep, status: String(d.status ?? ""), what: String(d.what ?? "") };
      }),
    createdAt: i.createdAt,
    updatedAt: i.updatedAt,
    ...(i.reusedFrom ? { reusedFrom: i.reusedFrom } : {}),
    ...(i.conflict ? { conflict: i.conflict } : {}),
  };
}

type Live = { version: string; record: Json };
const isLive = (v: unknown): v is Live =>
  v !== null && typeof v === "object" && typeof (v as { version?: unknown }).version === "string" && "record" in v;

/**
 * The drift effectStep.ts records on an intent (checkThenAct): for a change seen by the check,
 * `basis` (the plan's record) and `live` (the record found) with the relied-on values that no
 * longer match; for a refused conditional write, `basis`, `checked` and the `live` record the
 * system now holds. Shown as the old and new value of every field that differs.
 */
function driftOf(i: IntentRecord): InspectDrift {
  const d = i.drift as {
    kind?: string;
    detectedAt?: string;
    basis?: unknown;
    checked?: unknown;
    live?: unknown;
    reliedOnChanged?: { path: string; expected: Json; actual: Json | null }[];
  };
  const basis = isLive(d.basis) ? d.basis : null;
  const checked = isLive(d.checked) ? d.checked : null;
  const live = isLive(d.live) ? d.live : null;
  // A refused write is compared with what the check saw just before; a check with the plan.
  const before = d.kind === "conflict" ? (checked ?? basis) : basis;
  const reliedOn = reliedPathsOf(i.reliesOn);
  const relies = (p: string) => reliedOn.some((r) => p === r || p.startsWith(`${r}.`) || r.startsWith(`${p}.`));
  const fields: InspectDrift["fields"] = [];
  if (before && live) {
    for (const p of diffPaths(before.record, live.record)) {
      const path = p === "(root)" ? "" : p;
      fields.push({
        path: p,
        before: (path ? getPath(before.record, path) : before.record) ?? null,
        after: (path ? getPath(live.record, path) : live.record) ?? null,
        reliedOn: relies(p),
      });
    }
  }
  // Without a basis record, the relied-on values themselves are the "before".
  for (const c of d.reliedOnChanged ?? []) {
    if (!fields.some((f) => f.path === c.path)) fields.push({ path: c.path, before: c.expected, after: c.actual, reliedOn: true });
  }
  return {
    kind: String(d.kind ?? "unknown"),
    ...(d.detectedAt ? { detectedAt: d.detectedAt } : {}),
    ...(d.basis !== undefined ? { basis } : {}),
    ...(d.checked !== undefined ? { checked } : {}),
    ...(d.live !== undefined ? { live } : {}),
    versions: { before: before?.version ?? null, after: live?.version ?? null },
    fields,
  };
}

function reliedPathsOf(reliesOn: Json): string[] {
  return reliesOn !== null && typeof reliesOn === "object" && !Array.isArray(reliesOn) ? Object.keys(reliesOn) : [];
}

/** Requests from their events (asked, answered), and any still waiting at the latest checkpoint (a branch inherits its parent's). */
function inspectRequests(
  events: EventRecord[],
  waiting: { id: string; executor: string; superstep: number; createdAt: string; prompt: InspectRequest["prompt"] }[],
): InspectRequest[] {
  const byId = new Map<string, InspectRequest>();
  for (const e of events) {
    if (e.type === "request_waiting") {
      const d = e.data as { request: string; executor: string; prompt: InspectRequest["prompt"] };
      byId.set(d.request, {
        id: d.request,
        executor: d.executor,
        superstep: e.superstep,
        createdAt: e.at,
        prompt: promptOf(d.prompt),
        status: "waiting",
      });
    }
  }
  for (const w of waiting) {
    if (!byId.has(w.id))
      byId.set(w.id, {
        id: w.id,
        executor: w.executor,
        superstep: w.superstep,
        createdAt: w.createdAt,
        prompt: promptOf(w.prompt),
        status: "waiting",
      });
  }
  for (const e of events) {
    if (e.type !== "request_answered") continue;
    const d = e.data as { requestId: string; executor: string; answer: Json; by?: unknown; run?: string };
    const r = byId.get(d.requestId) ?? {
      id: d.requestId,
      executor: d.executor,
      superstep: Number(d.requestId.split(":").at(-2) ?? e.superstep),
      prompt: { title: "(the prompt was recorded in another run)" },
      status: "waiting" as const,
    };
    // The event's `by` once respond records one; else the answer's own, when its schema has one.
    const by = d.by ?? (d.answer as { by?: unknown } | null)?.by;
    byId.set(d.requestId, {
      ...r,
      status: "answered",
      answer: d.answer,
      answeredBy: typeof by === "string" && by ? by : "person",
      answeredAt: e.at,
      answeredSuperstep: e.superstep,
      ...(d.run && d.run !== e.runId ? { answeredIn: d.run } : {}),
    });
  }
  return [...byId.values()].sort((a, b) => a.superstep - b.superstep);
}

function promptOf(p: InspectRequest["prompt"] | undefined): InspectRequest["prompt"] {
  return {
    title: String(p?.title ?? ""),
    ...(p?.detail !== undefined ? { detail: p.detail } : {}),
    ...(p?.options ? { options: p.options } : {}),
  };
}

/** What a person's answer decided, in a word where the answer has one (`decision`, `choice`). */
function decisionOf(answer: Json | undefined): string | undefined {
  if (typeof answer === "string") return answer;
  const a = answer as { decision?: unknown; choice?: unknown } | null | undefined;
  if (typeof a?.choice === "string" && a.decision === "choose") return a.choice;
  if (typeof a?.decision === "string") return a.decision;
  return undefined;
}

/**
 * How the case stands. A verdict followed by a person's answer is decided by the person: the
 * escalation is history, not the outcome.
 */
function outcomeOf(r: Omit<RunInspection, "outcome">): InspectOutcome {
  const status = r.status.toUpperCase();
  const last = r.verdicts.at(-1);
  const verdict = last
    ? { superstep: last.superstep, executor: last.executor, verdict: last.verdict, action: last.action ?? null }
    : undefined;
  const after = r.requests.filter((q) => !last || q.superstep >= last.superstep);
  const answered = after.filter((q) => q.status === "answered").at(-1);
  const waiting = after.find((q) => q.status === "waiting");
  const parts: string[] = [];
  if (last) {
    // No action: the proposal was refused before the rules judged it (or none came).
    const what = last.action == null ? "a proposal refused before the rules judged it" : JSON.stringify(last.action);
    parts.push(`the rules ${last.verdict} ${what} at superstep ${last.superstep} (${last.executor})`);
  }
  let decidedBy: InspectOutcome["decidedBy"] = last ? "rules" : null;
  let person: InspectOutcome["person"];
  if (answered) {
    const decision = decisionOf(answered.answer);
    decidedBy = "person";
    person = {
      request: answered.id,
      ...(decision !== undefined ? { decision } : {}),
      ...(answered.answer !== undefined ? { answer: answered.answer } : {}),
      ...(answered.answeredAt ? { at: answered.answeredAt } : {}),
    };
    parts.push(
      `${last ? "then " : ""}${answered.answeredBy === "person" ? "a person" : answered.answeredBy} decided ${decision !== undefined ? `"${decision}"` : JSON.stringify(answered.answer)} on request ${answered.id} ${answered.answeredIn ? `in run ${answered.answeredIn}, which took the answer` : `at superstep ${answered.answeredSuperstep}`}`,
    );
  }
  if (waiting && r.status === "waiting") {
    decidedBy = null;
    person = { request: waiting.id };
    parts.push(`waiting for a person on request ${waiting.id}`);
  }
  const replanning = r.intents.filter((i) => i.status === "needs_replanning");
  for (const i of replanning) {
    const changed = (i.drift?.fields ?? []).filter((f) => f.reliedOn).map((f) => `${f.path} ${j(f.before)} -> ${j(f.after)}`);
    parts.push(`intent ${i.key} needs replanning${changed.length ? `: ${changed.join(", ")}` : ""}`);
  }
  // The error itself is on its own line; the outcome names it.
  if (r.error && !replanning.length) {
    const at = r.supersteps.filter((s) => s.steps.some((st) => st.status === "failed")).at(-1)?.superstep;
    parts.push(
      `stopped by ${r.error.code}${r.error.executor ? ` in ${r.error.executor}` : ""}${at === undefined ? "" : ` at superstep ${at}`}`,
    );
  }
  return {
    status: r.status,
    decidedBy,
    ...(verdict ? { verdict } : {}),
    ...(person ? { person } : {}),
    summary: parts.length ? `${status}: ${parts.join("; ")}` : status,
  };
}

const j = (v: unknown) => JSON.stringify(v ?? null);
