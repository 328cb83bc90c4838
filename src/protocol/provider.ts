import { z } from "zod";

/** Which model provider a run's agent steps call: a runner message's field and the CLI's --provider options. */
export const ProviderConfigSchema = z.discriminatedUnion("kind", [
  /**
   * Responses from a fixture file; the default is `<workflow>.responses.json` beside the workflow.
   * `latencyMs`: each answer comes that long after the call, as a hosted model's would.
   */
  z.object({ kind: z.literal("scripted"), fixture: z.string().optional(), latencyMs: z.number().int().min(0).max(600_000).optional() }),
  z.object({
    kind: z.literal("openai"),
    baseUrl: z.string().optional(),
    model: z.string().optional(),
    /** Name of the environment variable holding the key; the key itself never crosses here. */
    apiKeyEnv: z.string().optional(),
  }),
  z.object({
    kind: z.literal("azure"),
    endpoint: z.string(),
    deployment: z.string(),
    apiVersion: z.string(),
    apiKeyEnv: z.string().optional(),
  }),
  /** The VS Code Language Model API: the runner asks the host to make each call. */
  z.object({ kind: z.literal("vscode-lm"), family: z.string().optional() }),
]);
export type ProviderConfig = z.infer<typeof ProviderConfigSchema>;
