import type { ProviderConfig } from "../protocol/runner";
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

/**
 * The model a run names, and the kind of provider that names it (providers/index.ts's
 * runModelOf): the kind decides what a MODEL_PINNED refusal can tell the user to do, since an
 * OpenAI-compatible `model` and the editor's vscode-lm family may be left out but Azure's
 * deployment may not.
 */
export interface RunModel {
  model: string;
  provider: Exclude<ProviderConfig["kind"], "scripted">;
}

/** The model step `step` asks for when the run names `runModel` (undefined: none). */
export function modelFor(step: string, model: AgentSpec["model"], runModel: RunModel | undefined): string {
  if (runModel === undefined || runModel.model === "" || runModel.model === model.model) return model.model;
  if (model.pin) throw pinnedError([{ step, model: model.model }], runModel, [model.model]);
  return runModel.model;
}

/**
 * Refuses a run-level model that differs from a model some agent step pins, naming every such
 * step. Called when a run, resume, answer or replay starts, before the engine runs anything.
 */
export function checkPinnedModels(workflow: Workflow, runModel: RunModel | undefined): void {
  if (runModel === undefined || runModel.model === "") return;
  const conflicts = agentSteps(workflow)
    .filter(([, spec]) => spec.model.pin && spec.model.model !== runModel.model)
    .map(([step, spec]) => ({ step, model: spec.model.model }));
  const pinned = agentSteps(workflow)
    .filter(([, spec]) => spec.model.pin)
    .map(([, spec]) => spec.model.model);
  if (conflicts.length) throw pinnedError(conflicts, runModel, [...new Set(pinned)]);
}

/**
 * The workflow with each agent step asking for the model `modelFor` picks; `overrides` (executor
 * -> model) win over everything, for a recorded replay, whose step must ask for the model that
 * answered the recorded call. Refuses pinned conflicts first. The graph hash is unchanged (the
 * model is not part of the graph), so resuming is unaffected; the loaded workflow is not mutated.
 */
export function withRunModel(workflow: Workflow, runModel: RunModel | undefined, overrides: Record<string, string> = {}): Workflow {
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

/** `pinned`: every model the workflow's steps pin (distinct), which the advice must all keep runnable. */
function pinnedError(conflicts: { step: string; model: string }[], runModel: RunModel, pinned: string[]): CasefileError {
  const steps = conflicts.map((c) => `"${c.step}" pins "${c.model}"`).join(", ");
  return new CasefileError(
    "MODEL_PINNED",
    `the run names model "${runModel.model}", but agent step${conflicts.length > 1 ? "s" : ""} ${steps}: ` +
      pinnedAdvice(runModel.provider, pinned, conflicts.length),
    { runModel: runModel.model, provider: runModel.provider, steps: conflicts.map((c) => c.step), pinned: conflicts.map((c) => c.model) },
  );
}

/**
 * What a user can do about a pinned conflict, for the provider that named the run's model: leave
 * the model out (each step then asks for its own), name the pinned one, or unpin the step. Azure
 * calls the deployment it is given, so it cannot be left out there: only a deployment named as
 * the pinned model (or unpinning) runs the step. One run names one model, so when the workflow's
 * steps pin two different ones (`pinned`), naming either is no advice: the run names none (or,
 * on Azure, the conflicting steps are unpinned).
 */
function pinnedAdvice(provider: RunModel["provider"], pinned: string[], steps: number): string {
  const unpin = `remove pin from the step${steps > 1 ? "s" : ""}`;
  const named = pinned.length === 1 ? `"${pinned[0]}"` : undefined;
  switch (provider) {
    case "openai":
      return named
        ? `drop "model" from --provider (in the editor: clear casefile.model), set it to ${named}, or ${unpin}`
        : `drop "model" from --provider (in the editor: clear casefile.model) so each step asks for its own, or ${unpin}`;
    case "azure":
      return named
        ? `Azure calls the deployment named ("deployment" in --provider; in the editor: casefile.model), which cannot be left out: ` +
            `use a deployment named ${named}, or ${unpin}`
        : `Azure calls the one deployment named ("deployment" in --provider; in the editor: casefile.model), ` +
            `so steps pinning ${pinned.map((m) => `"${m}"`).join(" and ")} cannot all run in one Azure run: ${unpin}`;
    case "vscode-lm":
      return named
        ? `clear casefile.model (the family asked of the editor's language models) so each step asks for its own, set it to ${named}, or ${unpin}`
        : `clear casefile.model (the family asked of the editor's language models) so each step asks for its own, or ${unpin}`;
    default: {
      const never: never = provider;
      return never;
    }
  }
}
