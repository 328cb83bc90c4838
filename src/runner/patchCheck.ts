import { describeError, isCasefileError } from "../engine/errors";
import { keySchema, parseSafely, type Workflow } from "../engine/workflow";
import { PatchCheckRequestSchema, type PatchCheckResult, type PatchProblem } from "../protocol/debug";
import { loadWorkflow } from "./bundle";

/**
 * The state values of a patch, parsed with the keys' schemas of the workflow: what the engine's
 * resume checks first, said for each key so the debugger can refuse an edit in place.
 */
export function checkPatch(workflow: Workflow, patch: Record<string, unknown>): PatchProblem[] {
  const problems: PatchProblem[] = [];
  for (const [key, value] of Object.entries(patch)) {
    const decl = workflow.state[key];
    if (!decl) {
      problems.push({
        code: "UNKNOWN_KEY",
        key,
        path: [],
        message: `unknown state key "${key}"; keys are: ${Object.keys(workflow.state).join(", ")}`,
      });
      continue;
    }
    const parsed = parseSafely(keySchema(decl), value);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      const path = issue.path.map(String);
      problems.push({
        code: "INVALID_PATCH",
        key,
        path,
        message: `value for "${key}" is invalid at "${[key, ...path].join(".")}": ${issue.message}`,
      });
    }
  }
  return problems;
}

/**
 * dist/runner.js --check-patch: answers check requests over IPC until the parent disconnects.
 * Loading the workflow runs its code, like the runner itself: the debugger starts it only where it
 * would start a run. Each workflow file is bundled once.
 */
export function patchCheckMain(): void {
  const loaded = new Map<string, Promise<Workflow>>();
  process.on("message", (raw: unknown) => {
    const parsed = PatchCheckRequestSchema.safeParse(raw);
    if (!parsed.success) return;
    const { id, workflowPath, patch } = parsed.data;
    let workflow = loaded.get(workflowPath);
    if (!workflow) {
      workflow = loadWorkflow(workflowPath).then((l) => l.workflow);
      loaded.set(workflowPath, workflow);
    }
    workflow.then(
      (wf) => process.send?.({ type: "checked", id, problems: checkPatch(wf, patch) } satisfies PatchCheckResult),
      (e: unknown) => {
        loaded.delete(workflowPath);
        const err = isCasefileError(e) ? e.toJSON() : describeError(e);
        process.send?.({ type: "checked", id, problems: [], error: { code: err.code, message: err.message } } satisfies PatchCheckResult);
      },
    );
  });
  process.on("disconnect", () => process.exit(0));
}
