import type { AgentSpec } from "../engine/executors";
import { CasefileError } from "../engine/errors";
import type { Workflow } from "../engine/workflow";
import type { TokenBudget } from "../protocol/runner";

/**
 * The default token budget a run gives agent steps: the editor's `casefile.tokenBudget` setting,
 * the CLI's `--token-budget` or $CASEFILE_TOKEN_BUDGET. One number, the hard budget: a step whose
 * request counts more tokens is refused before the model is called (TOKEN_BUDGET_EXCEEDED).
 *
 * Precedence: a step that declares a `budget` in the workflow keeps it, whole (the workflow's
 * author sized it for that step's context); the default applies only to agent steps that declare
 * none. Without a default, such steps are not budgeted (as before).
 */

/** A setting's or option's value as a budget: a positive whole number is the hard budget; 0, empty or absent: none. */
export function defaultBudgetOf(value: unknown, name = "token budget"): TokenBudget | undefined {
  if (value === undefined || value === null || value === "" || value === 0 || value === "0") return undefined;
  const n = typeof value === "string" ? Number(value.trim()) : value;
  if (typeof n !== "number" || !Number.isInteger(n) || n < 0) {
    throw new CasefileError("USAGE", `${name} must be a whole number of tokens (0 for none), not ${JSON.stringify(value)}`);
  }
  return { hard: n };
}

/** The workflow, its agent steps that declare no budget given `budget`; the workflow itself when there is nothing to give. */
export function withDefaultBudget(workflow: Workflow, budget: TokenBudget | undefined): Workflow {
  if (!budget || (budget.soft === undefined && budget.hard === undefined)) return workflow;
  const unbudgeted = Object.entries(workflow.executors).filter(([, spec]) => spec.kind === "agent" && spec.budget === undefined);
  if (unbudgeted.length === 0) return workflow;
  const executors = { ...workflow.executors };
  for (const [id, spec] of unbudgeted) executors[id] = { ...(spec as { kind: "agent" } & AgentSpec), budget: { ...budget } };
  return { ...workflow, executors };
}
