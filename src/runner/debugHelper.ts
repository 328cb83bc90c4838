import { describeError, isCasefileError } from "../engine/errors";
import type { Workflow } from "../engine/workflow";
import { DebugHelperRequestSchema, EvaluationSchema, type DebugHelperResult, type Evaluation } from "../protocol/debug";
import { loadWorkflow } from "./bundle";
import { evaluateExpressions } from "./evaluate";
import { checkPatch } from "./patchCheck";

/**
 * dist/runner.js --debug-helper: the debug session's runner-side helper, one per session, started
 * by the adapter (src/debug/debugHelper.ts) when first needed and kept until the session ends. It
 * parses edited state values with the keys' schemas (setVariable) and evaluates the user's
 * JavaScript expressions over checkpoint values the adapter sends (conditions, logpoints, hovers,
 * evaluate). A process of its own, never under a JavaScript debugger, so it answers while the run's
 * runner is paused in js-debug, after that runner has exited, and for checkpoints in history alike.
 * Loading a workflow runs its code, like the runner itself: the debugger starts it only where it
 * would start a run. Each workflow file is bundled once. Answers until the parent disconnects.
 */
export function debugHelperMain(): void {
  const loaded = new Map<string, Promise<Workflow>>();
  const answer = (result: DebugHelperResult): void => void process.send?.(result);
  process.on("message", (raw: unknown) => {
    const parsed = DebugHelperRequestSchema.safeParse(raw);
    if (!parsed.success) return;
    const request = parsed.data;
    switch (request.type) {
      case "evaluate": {
        const results = evaluateExpressions(request.expressions, request.scope, request.timeoutMs).map(checked);
        return answer({ type: "evaluated", id: request.id, results });
      }
      case "check": {
        const { id, workflowPath, patch } = request;
        let workflow = loaded.get(workflowPath);
        if (!workflow) {
          workflow = loadWorkflow(workflowPath).then((l) => l.workflow);
          loaded.set(workflowPath, workflow);
        }
        workflow.then(
          (wf) => answer({ type: "checked", id, problems: checkPatch(wf, patch) }),
          (e: unknown) => {
            loaded.delete(workflowPath);
            const err = isCasefileError(e) ? e.toJSON() : describeError(e);
            answer({ type: "checked", id, problems: [], error: { code: err.code, message: err.message } });
          },
        );
        return;
      }
      default: {
        const never: never = request;
        return void never;
      }
    }
  });
  process.on("disconnect", () => process.exit(0));
}

/** What an expression's context said about itself is parsed too: an expression can rewrite the describer it runs beside. */
function checked(e: Evaluation): Evaluation {
  const parsed = EvaluationSchema.safeParse(e);
  return parsed.success ? parsed.data : { ok: false, kind: "thrown", error: "the expression's value could not be read back" };
}
