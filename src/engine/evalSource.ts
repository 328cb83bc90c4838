import type { EvalCase, EvalCaseSource } from "./evalCase";
import { article, CasefileError } from "./errors";
import type { AgentSpec, CommitSpec } from "./executors";
import { extractProvenance, isExtractValue } from "./extracts";
import type { AgentCallRecord, Fact, Json } from "./records";
import { rulesInForce } from "./rules";
import type { CaseStore } from "./store";
import type { Workflow } from "./workflow";

/**
 * What an agent step saw when it ran, read from a case file's records through the store
 * interface (no file, no sql.js): the facts and extracts it read, the business rules its context
 * was built with, and the state its commit step judged with. `casefile export-eval` turns this
 * into an eval case (evalCaseFromRecords); `casefile eval` reads the commit state of a case
 * exported before it was kept.
 */
export function evalSourceOf(store: CaseStore, caseFile: string, call: AgentCallRecord, workflow: Workflow): EvalCaseSource {
  const run = store.getRun(call.runId);
  if (!run) throw new CasefileError("UNKNOWN_RUN", `agent call ${call.id} names run "${call.runId}", which is not in ${caseFile}`);
  const agentSpec = agentSpecOf(workflow, call.executor, `agent step "${call.id}"`);
  const { spec: commitSpec } = commitStepAfter(workflow, call.executor, `agent step "${call.id}"`);
  return {
    caseFile,
    workflow: { name: run.workflow.name, version: run.workflow.version },
    call,
    verdict: store.listVerdicts(call.runId).find((v) => v.agentCallId === call.id),
    facts: factsSeen(store, call, workflow, agentSpec),
    ...rulesSeen(store, call),
    commitState: commitStateOf(commitSpec, stateAt(store, call.runId, call.superstep)),
  };
}

/** The workflow's agent step `executor`; WORKFLOW_MISMATCH when the workflow no longer has it. */
export function agentSpecOf(workflow: Workflow, executor: string, what: string): AgentSpec {
  const spec = workflow.executors[executor];
  if (!spec || spec.kind !== "agent") {
    throw new CasefileError(
      "WORKFLOW_MISMATCH",
      `${what} names executor "${executor}", which is ${spec ? `${article(spec.kind)} step` : "not defined"} in workflow "${workflow.name}" now`,
      {
        executor,
      },
    );
  }
  return spec;
}

/** The commit step an agent step sends its proposal to. */
export function commitStepAfter(workflow: Workflow, step: string, what: string): { target: string; spec: CommitSpec & { kind: "commit" } } {
  const target = workflow.edges
    .filter((e) => e.from.includes(step))
    .flatMap((e) => e.to)
    // Stryker disable next-line OptionalChaining: defineWorkflow refuses an edge to an executor it does not define, so every target is one
    .find((t) => workflow.executors[t]?.kind === "commit");
  if (!target)
    throw new CasefileError(
      "WORKFLOW_MISMATCH",
      `${what}: agent step "${step}" has no edge to a commit step in workflow "${workflow.name}"`,
      { executor: step },
    );
  return { target, spec: workflow.executors[target] as CommitSpec & { kind: "commit" } };
}

/** What of the state a commit step sees: its read and owned keys. */
export function commitStateOf(spec: CommitSpec, all: Record<string, Json>): Record<string, Json> {
  const state: Record<string, Json> = {};
  for (const k of new Set([...(spec.reads ?? []), ...(spec.owns ?? [])])) if (all[k] !== undefined) state[k] = all[k]!;
  return state;
}

/**
 * What an agent step's `context` was called with when it ran at `superstep`: the message delivered
 * to it (pending at the checkpoint before) and the state it reads as of then, extracts made for the
 * step taken from its own superstep's checkpoint (as factsSeen reads them). `casefile experiment`
 * rebuilds a case's context with another version of the workflow from these. `missing` says why
 * they cannot be had.
 */
export function agentInputsAt(
  store: CaseStore,
  runId: string,
  superstep: number,
  step: string,
  spec: AgentSpec,
): { state: Record<string, Json>; message: Json } | { missing: string } {
  const cp = store
    .listCheckpoints(runId)
    .filter((x) => x.superstep < superstep)
    .at(-1);
  const message = cp && store.getCheckpoint(cp.id)!.pending.find((m) => m.to === step);
  if (!cp || !message) return { missing: `no message to "${step}" at a checkpoint of run ${runId} before superstep ${superstep}` };
  const before = stateAt(store, runId, cp.superstep);
  const after = stateAt(store, runId, superstep);
  const state: Record<string, Json> = {};
  for (const k of new Set([...(spec.reads ?? []), ...(spec.owns ?? [])])) {
    const v = isExtractValue(after[k]) ? after[k] : before[k];
    if (v !== undefined) state[k] = v;
  }
  return { state, message: message.payload };
}

/** The last checkpoint of the call's run at or before `superstep`. */
export function stateAt(store: CaseStore, runId: string, superstep: number): Record<string, Json> {
  const cp = store
    .listCheckpoints(runId)
    .filter((c) => c.superstep <= superstep)
    .at(-1);
  if (!cp) throw new CasefileError("UNKNOWN_CHECKPOINT", `run "${runId}" has no checkpoint at or before superstep ${superstep}`);
  return store.readValues(store.getCheckpoint(cp.id)!.keys);
}

/**
 * The facts the agent step could see (the fact keys it reads), as they were when it ran, and the
 * extracts it read, cited as "extract of <source>@<version>". An extract made for the step is
 * committed with the step's own superstep, so extracts are read from that checkpoint.
 */
function factsSeen(store: CaseStore, call: AgentCallRecord, workflow: Workflow, spec: AgentSpec): Record<string, Fact> {
  const values = stateAt(store, call.runId, call.superstep - 1);
  const after = stateAt(store, call.runId, call.superstep);
  const facts: Record<string, Fact> = {};
  for (const key of new Set([...(spec.reads ?? []), ...(spec.owns ?? [])])) {
    if (workflow.factKeys.has(key) && values[key] !== undefined) facts[key] = values[key] as unknown as Fact;
    const e = after[key];
    if (workflow.extracts[key] && isExtractValue(e) && call.extracts?.some((x) => x.key === key && x.sourceVersion === e.sourceVersion)) {
      facts[key] = { value: e.value, provenance: extractProvenance(e) };
    }
  }
  return facts;
}

/**
 * The business rules the step's context was built with: recorded whole with the call, so a rule
 * edited, added or deleted since changes nothing. A call recorded before that falls back to the
 * case file's rule table as it is now, filtered as of the call's time (a run given a separate rule
 * book saw that book's rules, which such a call does not record).
 */
function rulesSeen(store: CaseStore, call: AgentCallRecord): { rules: EvalCase["rules"]; rulesFrom: "agent call" | "rule table" } {
  if (call.rulesInForce) return { rules: call.rulesInForce, rulesFrom: "agent call" };
  return {
    rules: rulesInForce(store.listRules(), call.at).map((r) => ({ id: r.id, statement: r.statement, value: r.value })),
    rulesFrom: "rule table",
  };
}
