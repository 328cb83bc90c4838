import { z } from "zod";

/**
 * The results file of `casefile experiment` (`<name>.experiment.json`, beside the cases): one
 * eval set run under several variants, every run of every case kept. The CLI builds it
 * (src/cli/experimentCommand.ts) and parses it with this schema before writing; the Experiment
 * panel (src/extension/experimentPanel.ts) parses it on reading, so a hand-edited or newer file
 * is refused naming the field. `v` changes only when a field is removed or changes meaning.
 */

const VerdictSchema = z.enum(["accepted", "rejected", "escalated"]);
const MessageSchema = z.object({ role: z.enum(["system", "user", "assistant"]), content: z.string() });

/** What a variant changes: the provider (and its model, temperature), the workflow file, or neither (the recorded answer). */
export const VariantSpecSchema = z.object({
  /** The provider's kind and what names it (model, base URL, deployment); never a key. "recorded": the case's own answer. */
  provider: z.object({ kind: z.string(), model: z.string().optional(), baseUrl: z.string().optional() }),
  temperature: z.number().optional(),
  /** Another version of the workflow (its context or commit rules), relative to the results file's folder. */
  workflow: z.string().optional(),
});

export const ExperimentRunSchema = z.object({
  /** null: no valid proposal; absent with `error`. */
  action: z.string().nullable().optional(),
  verdict: VerdictSchema.optional(),
  reason: z.string().optional(),
  passed: z.boolean(),
  /** The case could not be run (workflow, provider or case file fault), as `CODE: message`. */
  error: z.string().optional(),
  tokens: z.object({
    /** The request's messages counted with the model's tokenizer. */
    context: z.number().int().nonnegative().optional(),
    /** As the provider reported them. */
    prompt: z.number().int().nonnegative().optional(),
    completion: z.number().int().nonnegative().optional(),
  }),
  /** The model call alone, in milliseconds. */
  latencyMs: z.number().nonnegative(),
  notes: z.array(z.string()),
});

export const ExperimentCellSchema = z.object({
  case: z.string(),
  variant: z.string(),
  runs: z.array(ExperimentRunSchema).min(1),
  /** Runs passed / runs. */
  passRate: z.number().min(0).max(1),
  /** Every run passed. */
  passed: z.boolean(),
  /** The request of the first run that got one: what the model was sent under this variant. */
  request: z.object({ messages: z.array(MessageSchema), model: z.string(), hash: z.string() }).optional(),
});

export const ExperimentTotalsSchema = z.object({
  variant: z.string(),
  /** Runs passed / runs, over every case. */
  passRate: z.number().min(0).max(1),
  casesPassed: z.number().int().nonnegative(),
  cases: z.number().int().nonnegative(),
  /** Provider-reported tokens (prompt + completion) where reported, else the context's count. */
  tokens: z.number().int().nonnegative(),
  /** Mean model-call latency per run. */
  meanLatencyMs: z.number().nonnegative(),
});

export const ExperimentResultsSchema = z.object({
  format: z.literal("casefile-experiment"),
  v: z.literal(1),
  createdAt: z.string(),
  repeat: z.number().int().positive(),
  baseline: z.string().optional(),
  cases: z.array(
    z.object({
      id: z.string(),
      /** The eval case file, relative to the results file's folder. */
      file: z.string(),
      step: z.string(),
      expected: z.object({ action: z.string().nullable(), verdict: VerdictSchema }),
    }),
  ),
  variants: z.array(z.object({ name: z.string(), spec: VariantSpecSchema })).min(1),
  /** One per case and variant, in case order then variant order. */
  cells: z.array(ExperimentCellSchema),
  totals: z.array(ExperimentTotalsSchema),
  /** Cases the baseline variant passes and another variant fails. */
  regressions: z.array(z.object({ case: z.string(), variant: z.string() })),
  /** The JUnit file written per variant, relative to the results file's folder. */
  junit: z.record(z.string(), z.string()),
});

export type ExperimentResults = z.infer<typeof ExperimentResultsSchema>;
export type ExperimentCell = z.infer<typeof ExperimentCellSchema>;
export type ExperimentRun = z.infer<typeof ExperimentRunSchema>;
export type VariantSpec = z.infer<typeof VariantSpecSchema>;

/** A results file's text, parsed; the problem in one sentence naming the field when it does not parse. */
export function parseExperimentResults(text: string): { ok: true; value: ExperimentResults } | { ok: false; error: string } {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (e) {
    return { ok: false, error: `not JSON: ${(e as Error).message}` };
  }
  const r = ExperimentResultsSchema.safeParse(data);
  if (r.success) return { ok: true, value: r.data };
  const issue = r.error.issues[0]!;
  return { ok: false, error: `not an experiment results file (v 1): ${issue.message} at "${issue.path.join(".") || "(root)"}"` };
}

/** A run's tokens as the matrix and totals count them: provider-reported where reported, else the context's count. */
export function runTokens(run: ExperimentRun): number {
  const { prompt, completion, context } = run.tokens;
  return prompt !== undefined || completion !== undefined ? (prompt ?? 0) + (completion ?? 0) : (context ?? 0);
}

// ---- the Experiment panel's messages (src/extension/experimentPanel.ts <-> src/webview/experiment.ts) ----

export const HostToExperimentSchema = z.discriminatedUnion("type", [
  /** A results file, parsed; `file` is its path as the workspace names it; `case`, the case to compare first (from the Testing view). */
  z.object({ type: z.literal("load"), file: z.string(), results: ExperimentResultsSchema, case: z.string().optional() }),
  z.object({ type: z.literal("notice"), level: z.enum(["info", "warning", "error"]), message: z.string() }),
]);

export const ExperimentToHostSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("ready") }),
  /** The person asked to see a case: the host opens its eval case file. */
  z.object({ type: z.literal("openCase"), case: z.string().min(1) }),
]);

export type HostToExperiment = z.infer<typeof HostToExperimentSchema>;
export type ExperimentToHost = z.infer<typeof ExperimentToHostSchema>;

type Parsed<T> = { ok: true; message: T } | { ok: false; error: string };

function parseWith<T>(schema: z.ZodType<T>, data: unknown): Parsed<T> {
  const r = schema.safeParse(data);
  return r.success ? { ok: true, message: r.data } : { ok: false, error: z.prettifyError(r.error) };
}

/** Parses a message from the Experiment webview (host side). */
export const parseExperimentMessage = (data: unknown): Parsed<ExperimentToHost> => parseWith(ExperimentToHostSchema, data);
/** Parses a message from the host (webview side). */
export const parseExperimentHostMessage = (data: unknown): Parsed<HostToExperiment> => parseWith(HostToExperimentSchema, data);
