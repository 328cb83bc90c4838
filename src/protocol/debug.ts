import { z } from "zod";
import { JsonSchema } from "./jsonSchema";
import { OtelConfigSchema, ProviderConfigSchema } from "./runner";

/**
 * The `casefile` debug type's launch attributes, as a DAP client sends them in `launch` (VS Code
 * from launch.json or the DebugConfigurationProvider; nvim-dap, the tests). The debug adapter
 * (src/debug/session.ts) parses them with this schema and refuses a bad one naming the attribute.
 */

const json: z.ZodType<unknown> = JsonSchema;

export const ResumeFromSchema = z.object({
  /** The case file holding the checkpoint; defaults to the launch's `caseFile`. */
  caseFile: z.string().min(1).optional(),
  /** A checkpoint id (`run-1a2b3c4d:2`); a branch run starts when it is not the run's latest. */
  checkpoint: z.string().min(1),
});

export const LaunchArgumentsSchema = z
  .object({
    /** The workflow file (workflow.ts). Needed for a new run; a resume finds it in the case file. */
    workflow: z.string().min(1).optional(),
    /** The run's input, as JSON (any JSON value). */
    input: json.optional(),
    /** A file holding the input as JSON; instead of `input`. */
    inputFile: z.string().min(1).optional(),
    /** The case file; defaults to `<workflow>.casefile` beside the workflow. */
    caseFile: z.string().min(1).optional(),
    provider: ProviderConfigSchema.optional(),
    /** The hard token budget of agent steps that declare none. */
    tokenBudget: z.number().int().positive().optional(),
    /** Send the session's runs as OpenTelemetry traces (default: the casefile.otel.* settings). */
    otel: OtelConfigSchema.optional(),
    /** Pause at the first superstep boundary. */
    stopOnEntry: z.boolean().optional(),
    resumeFrom: ResumeFromSchema.optional(),
    /** Edit-then-fork at the resumed checkpoint: state key -> new value (needs `resumeFrom`). */
    patch: z.record(z.string(), json).optional(),
    /** Start the runner with --inspect on loopback and announce the port (event `casefile/inspector`). */
    debugExecutorCode: z.boolean().optional(),
    /** Log the DAP traffic to the Debug Console (LoggingDebugSession's verbose log). */
    trace: z.boolean().optional(),
  })
  // VS Code adds its own attributes (type, request, name, __sessionId, ...): let them through.
  .passthrough()
  .superRefine((a, ctx) => {
    if (a.input !== undefined && a.inputFile !== undefined)
      ctx.addIssue({ code: "custom", path: ["inputFile"], message: "give the input as `input` or `inputFile`, not both" });
    if (!a.resumeFrom && !a.workflow)
      ctx.addIssue({ code: "custom", path: ["workflow"], message: "a new run needs the workflow file (or `resumeFrom` a checkpoint)" });
    if (a.resumeFrom && !a.resumeFrom.caseFile && !a.caseFile)
      ctx.addIssue({ code: "custom", path: ["resumeFrom", "caseFile"], message: "resuming needs the case file holding the checkpoint" });
    if (a.patch && !a.resumeFrom)
      ctx.addIssue({ code: "custom", path: ["patch"], message: "a patch edits a checkpoint's state: it needs `resumeFrom`" });
  });
export type LaunchArguments = z.infer<typeof LaunchArgumentsSchema>;

/**
 * Custom DAP events the adapter sends besides the protocol's own. `casefile/inspector`: the runner
 * started with --inspect (debugExecutorCode) and listens on this loopback port; the extension
 * attaches js-debug to it as a child session.
 */
export const InspectorEventSchema = z.object({
  port: z.number().int().positive(),
  host: z.string(),
  /** The runner's pid, for the attach configuration's `processId`-less attach. */
  pid: z.number().int().optional(),
  /** The inspector's websocket URL as the runner printed it. */
  url: z.string(),
});
export type InspectorEvent = z.infer<typeof InspectorEventSchema>;
export const INSPECTOR_EVENT = "casefile/inspector";

/**
 * Custom DAP request the client sends once a JavaScript debugger is attached to the runner whose
 * inspector `casefile/inspector` announced (its breakpoints set). An adapter created with
 * `waitForExecutorDebugger` lets no superstep of that runner start before it (or a timeout), so a
 * breakpoint in an executor's run() cannot be missed because js-debug was still attaching.
 * `failed` (why): the client's debugger could not attach; the supersteps go on at once without it
 * (breakpoints in executor code unbound, Step Into is Next), rather than after the timeout.
 */
export const EXECUTOR_DEBUGGER_ATTACHED = "casefile/executorDebuggerAttached";
export const ExecutorDebuggerAttachedSchema = z.object({ pid: z.number().int(), failed: z.string().min(1).optional() });

/** The exception-breakpoint filters the adapter offers (initialize's exceptionBreakpointFilters). */
export const EXCEPTION_FILTERS = [
  { filter: "proposalRejected", label: "Proposal rejected or escalated", default: false },
  { filter: "stepFailed", label: "Step failed", default: true },
  { filter: "beforeEffect", label: "Before an effect acts", default: false },
  { filter: "waitingForPerson", label: "Run waits for a person", default: true },
  { filter: "drift", label: "Precondition drifted or extract went stale", default: true },
] as const;
export type ExceptionFilter = (typeof EXCEPTION_FILTERS)[number]["filter"];

/**
 * The patch checker: dist/runner.js started with `--check-patch` (src/runner/patchCheck.ts) loads
 * a workflow once and parses state values with the keys' own schemas, so the debugger's
 * setVariable refuses an invalid value in place, before any branch is made.
 */
export const PatchCheckRequestSchema = z.object({
  type: z.literal("check"),
  id: z.number().int(),
  workflowPath: z.string(),
  patch: z.record(z.string(), json),
});
export type PatchCheckRequest = z.infer<typeof PatchCheckRequestSchema>;

export const PatchProblemSchema = z.object({
  code: z.string(),
  key: z.string(),
  /** Where in the key's value, e.g. `["pct"]`; empty for the value as a whole. */
  path: z.array(z.string()),
  message: z.string(),
});
export type PatchProblem = z.infer<typeof PatchProblemSchema>;

export const PatchCheckResultSchema = z.object({
  type: z.literal("checked"),
  id: z.number().int(),
  problems: z.array(PatchProblemSchema),
  /** The workflow could not be loaded (a bundling error): why. */
  error: z.object({ code: z.string(), message: z.string() }).optional(),
});
export type PatchCheckResult = z.infer<typeof PatchCheckResultSchema>;

/**
 * Evaluate: the debug helper (the same process, src/runner/debugHelper.ts) evaluates JavaScript
 * expressions over a checkpoint's values, which the adapter read from the case file and sends:
 * breakpoint conditions, logpoint parts, hovers and Debug Console evaluate (src/runner/evaluate.ts).
 */
export const EvaluationScopeSchema = z.object({
  state: z.record(z.string(), json),
  /** The pending message of the executor the expression is about (null when none). */
  message: json,
  /** Every pending message, per executor (Debug Console evaluate). */
  messages: json.optional(),
});
export type EvaluationScope = z.infer<typeof EvaluationScopeSchema>;

export const EvaluateRequestSchema = z.object({
  type: z.literal("evaluate"),
  id: z.number().int(),
  expressions: z.array(z.string()).min(1),
  scope: EvaluationScopeSchema,
  /** Each expression's time limit. */
  timeoutMs: z.number().int().positive(),
});
export type EvaluateRequest = z.infer<typeof EvaluateRequestSchema>;

export const EvaluationSchema = z.discriminatedUnion("ok", [
  z.object({
    ok: z.literal(true),
    /** typeof, with "null" and "array". */
    type: z.string(),
    truthy: z.boolean(),
    /** The value as JSON data, when it is JSON; else `display` says what it is. */
    value: json.optional(),
    display: z.string().optional(),
  }),
  z.object({ ok: z.literal(false), kind: z.enum(["syntax", "thrown", "timeout"]), error: z.string() }),
]);
export type Evaluation = z.infer<typeof EvaluationSchema>;

export const EvaluateResultSchema = z.object({ type: z.literal("evaluated"), id: z.number().int(), results: z.array(EvaluationSchema) });
export type EvaluateResult = z.infer<typeof EvaluateResultSchema>;

/** Every request the debug helper answers, and every answer. */
export const DebugHelperRequestSchema = z.discriminatedUnion("type", [PatchCheckRequestSchema, EvaluateRequestSchema]);
export type DebugHelperRequest = z.infer<typeof DebugHelperRequestSchema>;
export const DebugHelperResultSchema = z.discriminatedUnion("type", [PatchCheckResultSchema, EvaluateResultSchema]);
export type DebugHelperResult = z.infer<typeof DebugHelperResultSchema>;
