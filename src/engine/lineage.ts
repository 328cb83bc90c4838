import type { RunRecord } from "./records";
import type { RuleSource } from "./rules";
import type { CaseStore } from "./store";
import type { Workflow } from "./workflow";

/**
 * A run's ancestry in the case file: runs branch from runs, and the root of the tree is the case.
 * Read by the engine when a run starts or resumes; they only read the store.
 */

/**
 * How many times each agent has been called in the run's history, for the next call's index:
 * the run's own calls and, for a branch, its ancestors' up to the checkpoint it was forked from,
 * so a fixture keyed by call index answers a branch as it would have answered the run.
 */
export function agentCallCounts(store: CaseStore, run: RunRecord): Map<string, number> {
  const counts = new Map<string, number>();
  let upTo = Number.POSITIVE_INFINITY;
  for (let r: RunRecord | undefined = run; r;) {
    for (const c of store.listAgentCalls(r.id)) if (c.superstep <= upTo) counts.set(c.executor, (counts.get(c.executor) ?? 0) + 1);
    if (!r.parentRunId || !r.parentCheckpointId) break;
    // One lookup by id, not a list of the parent's checkpoints (10,000 rows for a long run).
    const forkedAt = store.getCheckpoint(r.parentCheckpointId);
    if (forkedAt?.runId !== r.parentRunId) break;
    upTo = Math.min(upTo, forkedAt.superstep);
    r = store.getRun(r.parentRunId);
  }
  return counts;
}

/** The case a run belongs to: the root run of its branch tree (effects key their intents on it). */
export function caseIdOf(store: CaseStore, run: RunRecord): string {
  let r: RunRecord = run;
  while (r.parentRunId) {
    const parent = store.getRun(r.parentRunId);
    if (!parent) break;
    r = parent;
  }
  return r.id;
}

/** A run's place in its case, read before its first commit (readBeforeWriting). */
export interface Lineage {
  caseId: string;
  callCounts: Map<string, number>;
}

/**
 * What a run reads of the case file's other records, read before its first commit (the engine's
 * run, resume and respond call it): its case and agent call counts, and, for a workflow with
 * effects, agents or commits, every intent and business rule those steps read later. A damaged
 * one is refused here with CORRUPT_CASE_FILE before anything is written; found mid-run, it would
 * leave a run started in the damaged file, `running` for ever.
 */
export function readBeforeWriting(store: CaseStore, workflow: Workflow, rules: RuleSource, run: RunRecord): Lineage {
  const kinds = new Set(Object.values(workflow.executors).map((e) => e.kind));
  if (kinds.has("effect")) store.listIntents();
  if (kinds.has("agent") || kinds.has("commit")) rules.listRules();
  return { caseId: caseIdOf(store, run), callCounts: agentCallCounts(store, run) };
}
