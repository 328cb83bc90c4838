import { z } from "zod";
import { JsonSchema } from "./jsonSchema";
import { ProviderConfigSchema } from "./provider";

/**
 * Messages between the extension host (or CLI) and the runner child process. Both sides parse
 * every message they receive with these schemas; anything else is dropped and logged.
 */

const json: z.ZodType<unknown> = JsonSchema;

// The CLI's --provider options parse only this schema: it is a module of its own, so a command
// builds none of the runner's message schemas below.
export { ProviderConfigSchema, type ProviderConfig } from "./provider";

/**
 * A run's default token budget for agent steps that declare none (a step's own budget wins):
 * the editor's casefile.tokenBudget setting or the CLI's --token-budget (src/runner/budget.ts).
 */
export const TokenBudgetSchema = z.object({ soft: z.number().int().positive().optional(), hard: z.number().int().positive().optional() });
export type TokenBudget = z.infer<typeof TokenBudgetSchema>;

/**
 * Send the run as an OpenTelemetry trace when the command ends (the editor's casefile.otel.*
 * settings): to `endpoint` (an OTLP/HTTP base URL), else where the runner's OTEL_EXPORTER_OTLP_*
 * variables say, else localhost:4318; message content and payloads only with `includeContent`.
 */
export const OtelConfigSchema = z.object({ endpoint: z.string().optional(), includeContent: z.boolean().default(false) });
export type OtelConfig = z.infer<typeof OtelConfigSchema>;

export const ReplayModeSchema = z.enum(["recorded", "live", "edited"]);
export type ReplayMode = z.infer<typeof ReplayModeSchema>;

export const ChatMessageSchema = z.object({ role: z.enum(["system", "user", "assistant"]), content: z.string() });

export const RunCommandSchema = z.discriminatedUnion("kind", [
  z.object({
    kind: z.literal("run"),
    workflowPath: z.string(),
    /** Left out: the case's own file, named from the input by the workflow's caseId (engine/caseName.ts). */
    caseFile: z.string().optional(),
    /** Where case files go when caseFile is left out (casefile.caseFileFolder), relative to caseFolderRoot. */
    caseFolder: z.string().optional(),
    caseFolderRoot: z.string().optional(),
    input: json.optional(),
  }),
  z.object({
    kind: z.literal("resume"),
    caseFile: z.string(),
    checkpointId: z.string(),
    /** Edit-then-fork: key -> new value, validated against the state schemas. */
    patch: z.record(z.string(), json).optional(),
    workflowPath: z.string().optional(),
    /** Always start a branch run, even from the latest checkpoint of an unfinished run (the debugger's restartFrame). */
    branch: z.boolean().optional(),
  }),
  z.object({
    kind: z.literal("respond"),
    caseFile: z.string(),
    requestId: z.string(),
    answer: json,
    /** Who answered, recorded with the answer (the CLI's --by, else the OS user). */
    by: z.string().optional(),
    workflowPath: z.string().optional(),
  }),
  /**
   * Replays one agent step as a branch from the checkpoint just before its superstep. `edited`
   * needs `messages`: the context the developer edited, sent instead of the one built from state.
   */
  z.object({
    kind: z.literal("replay"),
    caseFile: z.string(),
    /** AgentCallRecord id, e.g. `run-1a2b3c4d:3:propose`. */
    agentCallId: z.string(),
    mode: ReplayModeSchema,
    messages: z.array(ChatMessageSchema).optional(),
    workflowPath: z.string().optional(),
  }),
]);
export type RunCommand = z.infer<typeof RunCommandSchema>;

export const ControlActionSchema = z.enum(["pause", "step", "continue", "stop"]);
export type ControlAction = z.infer<typeof ControlActionSchema>;

export const HostToRunnerSchema = z.discriminatedUnion("type", [
  z.object({
    type: z.literal("start"),
    command: RunCommandSchema,
    /** Pause before every superstep until told `step` or `continue`. */
    stepMode: z.boolean().default(false),
    /**
     * Make executor functions steppable into (the debugger's Step Into with debugExecutorCode,
     * src/runner/stepInto.ts): each is called through a wrapper that can arm a one-shot breakpoint.
     */
    stepInto: z.boolean().optional(),
    provider: ProviderConfigSchema.optional(),
    defaultBudget: TokenBudgetSchema.optional(),
    otel: OtelConfigSchema.optional(),
  }),
  z.object({ type: z.literal("control"), action: ControlActionSchema }),
  /**
   * Step Into (the debugger, debugExecutorCode): run one superstep like `step`, pausing on the
   * first line of the first executor function it calls, for the JavaScript debugger attached to
   * the runner's inspector. A runner without an inspector runs the superstep as `step`.
   */
  z.object({ type: z.literal("stepInto") }),
  z.object({
    type: z.literal("modelResult"),
    id: z.string(),
    ok: z.boolean(),
    text: z.string().optional(),
    /** The editor's model that answered (its id), recorded as the call's `answeredBy`. */
    model: z.string().optional(),
    error: z.string().optional(),
  }),
]);
export type HostToRunner = z.infer<typeof HostToRunnerSchema>;

const ErrorSchema = z.object({ code: z.string(), message: z.string(), details: z.record(z.string(), json).optional() });

export const RunnerToHostSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("ready") }),
  z.object({
    type: z.literal("event"),
    event: z.object({
      seq: z.number().optional(),
      runId: z.string(),
      superstep: z.number(),
      type: z.string(),
      at: z.string(),
      data: json,
    }),
  }),
  /**
   * The run waits at a superstep boundary. `superstep` is the superstep that runs next (so "paused
   * before superstep N" is true); `checkpoint` is the one the run rests on (superstep N - 1), and
   * `executors` are the ones due in superstep N.
   */
  z.object({
    type: z.literal("paused"),
    runId: z.string(),
    superstep: z.number(),
    checkpoint: z.object({ id: z.string(), superstep: z.number() }).optional(),
    executors: z.array(z.string()).optional(),
  }),
  // A run that ended failed carries why (the run record's error), for the editor to say.
  z.object({ type: z.literal("done"), runId: z.string(), status: z.string(), caseFile: z.string(), error: ErrorSchema.optional() }),
  z.object({ type: z.literal("error"), error: ErrorSchema }),
  z.object({ type: z.literal("log"), level: z.enum(["info", "warn", "error"]), message: z.string() }),
  z.object({
    type: z.literal("modelRequest"),
    id: z.string(),
    request: z.object({ step: z.string(), messages: z.array(z.object({ role: z.string(), content: z.string() })), model: z.string() }),
  }),
]);
export type RunnerToHost = z.infer<typeof RunnerToHostSchema>;
