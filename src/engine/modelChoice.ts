import { CasefileError } from "./errors";
import type { AgentSpec } from "./executors";
import type { Workflow } from "./workflow";

/**
 * Which model an agent step asks for. Precedence, highest first:
 *
 *   1. a step that pins its model (`model: { model, pin: true }`) is called with that model only;
 *      a run that names another model is refused before any model is called (MODEL_PINNED);
 *   2. the model named for the run (the provider config's `model`, Azure's `deployment`, the
 *      editor's `casefile.model`) replaces the step's model;
 *   3. the step's own `model.model`.
 *
 * The chosen model is what the request carries: it is hashed with the request, recorded in the
 * agent call (`request.model`) and sent. The run-level model is handed in by the runner/CLI
 * (src/runner/session.ts, via withRunModel); the engine sees only the rewritten steps.
 */

/** The model step `step` asks for when the run names `runModel` (undefined: none). */
export function modelFor(step: string, model: AgentSpec["model"], runModel: string | undefined): string {
  if (runModel === undefined || runModel === "" || runModel === model.model) return model.model;
  if (model.pin) throw pinnedError([{ step, model: model.model }], runModel);
  return runModel;
}

/**
 * Refuses a run-level model that differs from a model some agent step pins, naming every such
 * step. Called when a run, resume, answer or replay starts, before the engine runs anything.
 */
export function checkPinnedModels(workflow: Workflow, runModel: string | undefined): void {
  if (runModel === undefined || runModel === "") return;
  const conflicts = agentSteps(workflow)
    .filter(([, spec]) => spec.model.pin && spec.model.model !== runModel)
    .map(([step, spec]) => ({ step, model: spec.model.model }));
  if (conflicts.length) throw pinnedError(conflicts, runModel);
}

/**
 * The workflow with each agent step asking for the model `modelFor` picks; `overrides` (executor
 * -> model) win over everything, for a recorded replay, whose step must ask for the model that
 * answered the recorded call. Refuses pinned conflicts first. The graph hash is unchanged (the
 * model is not part of the graph), so resuming is unaffected; the loaded workflow is not mutated.
 */
export function withRunModel(workflow: Workflow, runModel: string | undefined, overrides: Record<string, string> = {}): Workflow {
  checkPinnedModels(workflow, runModel);
  const executors = { ...workflow.executors };
  let changed = false;
  for (const [id, spec] of agentSteps(workflow)) {
    const model = overrides[id] ?? modelFor(id, spec.model, runModel);
    if (model === spec.model.model) continue;
    executors[id] = { ...(spec as { kind: "agent" } & AgentSpec), model: { ...spec.model, model } };
    changed = true;
  }
  return changed ? { ...workflow, executors } : workflow;
}

function agentSteps(workflow: Workflow): [string, AgentSpec][] {
  return Object.entries(workflow.executors).filter(([, spec]) => spec.kind === "agent") as unknown as [string, AgentSpec][];
}

function pinnedError(conflicts: { step: string; model: string }[], runModel: string): CasefileError {
  const steps = conflicts.map((c) => `"${c.step}" pins "${c.model}"`).join(", ");
  return new CasefileError(
    "MODEL_PINNED",
    `the run names model "${runModel}", but agent step${conflicts.length > 1 ? "s" : ""} ${steps}: drop the model from --provider (or casefile.model), ` +
      `name the pinned model, or remove pin from the step`,
    { runModel, steps: conflicts.map((c) => c.step), pinned: conflicts.map((c) => c.model) },
  );
}
