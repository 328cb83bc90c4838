import { CasefileError } from "../engine/errors";
import type { AgentCallRecord } from "../engine/records";
import type { CaseStore } from "../engine/store";

/**
 * What `--step` names, for `replay` and `export-eval`: an agent call id as `inspect` prints it
 * (`<run>:<superstep>:<executor>`), or `<superstep>:<executor>` within `--run <run>` (without
 * `--run`, when exactly one run of the case file has that step). Anything else is a one-line
 * USAGE error listing the agent call ids the command would take.
 */
export function resolveStep(store: CaseStore, caseFile: string, step: string, runId: string | undefined): AgentCallRecord {
  if (runId !== undefined && !store.getRun(runId)) {
    const runs = store.listRuns().map((r) => r.id);
    throw new CasefileError("UNKNOWN_RUN", `no run "${runId}" in ${caseFile}; runs: ${runs.join(", ") || "none"}`, { run: runId });
  }
  const all = store.listAgentCalls();
  const inScope = runId === undefined ? all : all.filter((c) => c.runId === runId);
  const listed = (calls: AgentCallRecord[]) => {
    const ids = calls.map((c) => c.id);
    return ids.length ? `${ids.slice(0, 20).join(", ")}${ids.length > 20 ? `, ... (${ids.length} in all)` : ""}` : "none";
  };

  const exact = store.getAgentCall(step);
  if (exact) {
    if (runId !== undefined && exact.runId !== runId) {
      throw new CasefileError(
        "USAGE",
        `--step ${step} is an agent step of run ${exact.runId}, not of --run ${runId}; agent steps of ${runId}: ${listed(inScope)}`,
        { step, run: runId },
      );
    }
    return exact;
  }
  // `<superstep>:<executor>` (with `#<n>` for the n-th message of one superstep): the id without its run.
  const matches = /^\d+:.+$/.test(step) ? inScope.filter((c) => c.id === `${c.runId}:${step}`) : [];
  if (matches.length === 1) return matches[0]!;
  if (matches.length > 1) {
    throw new CasefileError(
      "USAGE",
      `--step ${step} is ambiguous: ${matches.length} runs in ${caseFile} have it (${listed(matches)}); pass --run RUN or the full id`,
      { step },
    );
  }
  throw new CasefileError(
    "USAGE",
    `no agent step "${step}"${runId !== undefined ? ` in run ${runId}` : ""} in ${caseFile}; ` +
      (inScope.length
        ? `agent steps: ${listed(inScope)} (or SUPERSTEP:EXECUTOR with --run RUN; \`casefile inspect\` lists them)`
        : `${runId !== undefined ? "the run" : "it"} records no agent steps`),
    { step, file: caseFile },
  );
}
