import type { CaseStore } from "../engine/store";
import type { Checkpoint, Json } from "../engine/records";

/**
 * What the debugger's scopes show at one checkpoint, read from the case file: plain JSON objects
 * the session turns into expandable variables (session.ts). Pure reads of a read-only store.
 */

/** A run and the superstep up to which its records are the checkpoint's past (a branch's parents up to the fork). */
function lineage(store: CaseStore, runId: string, superstep: number): { runId: string; upTo: number }[] {
  const out: { runId: string; upTo: number }[] = [];
  let run = store.getRun(runId);
  let upTo = superstep;
  while (run && out.length < 64) {
    out.push({ runId: run.id, upTo });
    if (!run.parentRunId || !run.parentCheckpointId) break;
    upTo = store.getCheckpoint(run.parentCheckpointId)?.superstep ?? -1;
    run = store.getRun(run.parentRunId);
  }
  return out;
}

/** The latest of `list(run)` at or before the checkpoint, for one executor, along the lineage. */
function latest<T extends { executor: string; superstep: number }>(
  store: CaseStore,
  cp: Checkpoint,
  executor: string,
  list: (runId: string) => T[],
): T | undefined {
  for (const { runId, upTo } of lineage(store, cp.runId, cp.superstep)) {
    const found = list(runId)
      .filter((r) => r.executor === executor && r.superstep <= upTo)
      .at(-1);
    if (found) return found;
  }
  return undefined;
}

/** Step scope of an executor's frame: what it did last (an agent's context and proposal, a commit's rules and verdict, an effect's intent). */
export function stepOfExecutor(store: CaseStore, cp: Checkpoint, executor: string, kind: string | undefined): Record<string, Json> {
  const out: Record<string, Json> = { executor };
  if (kind) out.kind = kind;
  const step = latest(store, cp, executor, (r) => store.listSteps(r));
  if (!step) out.ran = `not yet: ${executor} runs in superstep ${cp.superstep + 1}`;
  else {
    out.lastRun = {
      superstep: step.superstep,
      status: step.status,
      durationMs: step.durationMs,
      writes: step.writes,
      ...(step.error ? { error: step.error } : {}),
    };
  }
  const call = latest(store, cp, executor, (r) => store.listAgentCalls(r));
  if (call) {
    out.context = {
      superstep: call.superstep,
      model: call.request.model,
      messages: call.request.messages as unknown as Json,
      tokens: (call.tokens ?? null) as unknown as Json,
      hash: call.hash,
    };
    out.proposal = call.proposal ?? null;
    if (call.rejection) out.rejection = call.rejection;
  }
  const verdict = latest(store, cp, executor, (r) => store.listVerdicts(r));
  if (verdict) {
    out.proposal = verdict.proposal ?? null;
    out.rules = Object.fromEntries(verdict.rules.map((r) => [r.name, { ok: r.ok, message: r.message }]));
    out.verdict = verdict.verdict;
    out.reason = verdict.reason;
    out.diff = verdict.diff as unknown as Json;
  }
  const intent = latest(store, cp, executor, (r) => store.listIntents({ runId: r }));
  if (intent) {
    out.intent = {
      id: intent.id,
      action: intent.action,
      target: intent.target,
      payload: intent.payload,
      reliesOn: intent.reliesOn,
      status: intent.status,
      ...(intent.reference !== undefined ? { reference: intent.reference } : {}),
      ...(intent.drift !== undefined ? { drift: intent.drift } : {}),
      ...(intent.error ? { error: intent.error } : {}),
    };
  }
  return out;
}

/** Step scope of the superstep frame: what the superstep that made this checkpoint did, per executor. */
export function stepOfSuperstep(store: CaseStore, cp: Checkpoint): Record<string, Json> {
  const steps = store.listSteps(cp.runId, cp.superstep);
  if (cp.superstep === 0 || steps.length === 0)
    return { superstep: cp.superstep, steps: cp.superstep === 0 ? "the run's input" : "none recorded" };
  const calls = store.listAgentCalls(cp.runId).filter((c) => c.superstep === cp.superstep);
  const verdicts = store.listVerdicts(cp.runId).filter((v) => v.superstep === cp.superstep);
  const intents = store.listIntents({ runId: cp.runId }).filter((i) => i.superstep === cp.superstep);
  const out: Record<string, Json> = {};
  for (const s of steps) {
    const call = calls.find((c) => c.executor === s.executor);
    const verdict = verdicts.find((v) => v.executor === s.executor);
    const intent = intents.find((i) => i.executor === s.executor);
    out[s.executor] = {
      kind: s.kind,
      status: s.status,
      durationMs: s.durationMs,
      writes: s.writes,
      ...(s.error ? { error: s.error } : {}),
      ...(call ? { tokens: call.tokens?.count ?? null, proposal: call.proposal ?? null } : {}),
      ...(verdict ? { verdict: verdict.verdict, reason: verdict.reason } : {}),
      ...(intent
        ? { intent: { action: intent.action, target: intent.target, status: intent.status, reference: intent.reference ?? null } }
        : {}),
    };
  }
  return { superstep: cp.superstep, steps: out };
}

/** Messages scope: the pending messages, per executor they go to. */
export function messagesOf(cp: Checkpoint): Record<string, Json> {
  const out: Record<string, Json[]> = {};
  for (const m of cp.pending) (out[m.to] ??= []).push({ from: m.from, ...(m.kind ? { kind: m.kind } : {}), payload: m.payload });
  if (cp.waiting.length) {
    return {
      ...out,
      "(waiting for a person)": cp.waiting.map((w) => ({ id: w.id, executor: w.executor, prompt: w.prompt as unknown as Json })),
    };
  }
  return out;
}

/** Run scope. */
export function runOf(store: CaseStore, cp: Checkpoint, patched: string[]): Record<string, Json> {
  const run = store.getRun(cp.runId);
  return {
    runId: cp.runId,
    status: run?.status ?? "unknown",
    parentRun: run?.parentRunId ?? null,
    parentCheckpoint: run?.parentCheckpointId ?? null,
    checkpoint: cp.id,
    superstep: cp.superstep,
    next: cp.pending.length ? cp.superstep + 1 : null,
    workflow: run ? `${run.workflow.name} v${run.workflow.version}` : cp.workflow.name,
    ...(run?.error ? { error: run.error } : {}),
    ...(patched.length ? { editedKeys: patched } : {}),
  };
}

/** The pending message payload of one executor (the first, when it has several): a condition's `message`. */
export function messageFor(cp: Checkpoint, executor: string): Json | undefined {
  return cp.pending.find((m) => m.to === executor)?.payload;
}
