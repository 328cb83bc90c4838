import { keySchema, parseSafely, type Workflow } from "../engine/workflow";
import type { PatchProblem } from "../protocol/debug";

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
