import type { ProviderConfig } from "../protocol/runner";

/**
 * The editor's side of choosing a model, without `vscode` so it is tested in plain Node: the
 * casefile.* settings as a provider configuration, and which of the editor's language models
 * answers a request for the vscode-lm provider. runSessions.ts reads the settings and the models
 * and calls these.
 *
 * `casefile.model` is the run's model (the openai `model`, the Azure deployment, the vscode-lm
 * family): it replaces each agent step's model unless the step pins its own, which refuses the
 * run (src/engine/modelChoice.ts). Empty: each step asks for its own model.
 */

/** Environment variable (and SecretStorage name) holding each provider's key. */
export const API_KEY_SECRETS = { openai: "OPENAI_API_KEY", azure: "AZURE_OPENAI_API_KEY" } as const;

export interface ProviderSettings {
  provider?: string;
  baseUrl?: string;
  model?: string;
  azureApiVersion?: string;
}

/** The provider from the casefile.* settings' values; undefined means the runner's default (scripted). */
export function providerFromSettingValues(settings: ProviderSettings): ProviderConfig | undefined {
  const baseUrl = settings.baseUrl?.trim() || undefined;
  const model = settings.model?.trim() || undefined;
  switch (settings.provider ?? "scripted") {
    case "openai":
      return { kind: "openai", apiKeyEnv: API_KEY_SECRETS.openai, ...(baseUrl ? { baseUrl } : {}), ...(model ? { model } : {}) };
    case "azure":
      return {
        kind: "azure",
        endpoint: baseUrl ?? "",
        deployment: model ?? "",
        apiVersion: settings.azureApiVersion || "2024-10-21",
        apiKeyEnv: API_KEY_SECRETS.azure,
      };
    case "vscode-lm":
      return { kind: "vscode-lm", ...(model ? { family: model } : {}) };
    default:
      return undefined;
  }
}

/** What the picker needs of a `vscode.LanguageModelChat`. */
export interface LanguageModelInfo {
  readonly id: string;
  readonly family: string;
  readonly vendor?: string;
}

/**
 * The editor's model that answers a request for `requested` (the request's model: casefile.model
 * when set, else the step's own): the first of that family, else the one with that id. None: an
 * error naming the model and what the editor offers. Never another model in its place, so the
 * model the case file records is the model that was called.
 */
export function pickLanguageModel<M extends LanguageModelInfo>(requested: string, models: readonly M[]): M {
  const found = models.find((m) => m.family === requested) ?? models.find((m) => m.id === requested);
  if (found) return found;
  const offered = models.map((m) => `${m.family} (${m.id})`);
  throw new Error(
    `no language model is available in this editor (vscode.lm) for model "${requested}"` +
      (offered.length
        ? `; it offers: ${offered.join(", ")}; set casefile.model to one of these families` +
          ` (a step that pins "${requested}" refuses any other: remove its pin first)`
        : ": it offers none"),
  );
}
