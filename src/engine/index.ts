/**
 * The runtime a workflow file imports: `import { defineWorkflow, loader, z } from "casefile"`.
 * The runner resolves that import to this module inside the extension, so a user's folder
 * needs no npm install. `zod` is re-exported for the same reason.
 */
export { z } from "zod";
export { defineWorkflow, ApprovalAnswer, type Workflow, type WorkflowSpec } from "./workflow";
export {
  fact,
  extract,
  code,
  loader,
  agent,
  commit,
  request,
  effect,
  edge,
  type StateOf,
  type StepContext,
  type LoaderContext,
  type RuleFn,
  type RuleInput,
  type CommitOutcome,
  type EffectIntent,
  type LiveRecord,
  type PlannedEffect,
  type RequestPrompt,
  type ExtractSource,
  type SummariseInfo,
} from "./executors";
export type { Json, Fact, Extract, ChatMessage, Provenance, Verdict, RuleResult } from "./records";
export { extractProvenance } from "./extracts";
export { CasefileError } from "./errors";
export { PreconditionFailedError } from "./effectStep";
export { comparePrecondition, type PreconditionResult } from "./effectCompare";
export { stableHash } from "./hash";
export type { RuleInForce } from "./rules";
