import path from "node:path";
import type { ProviderConfig } from "../../protocol/runner";
import { CasefileError } from "../errors";
import type { ModelProvider } from "../model";
import type { RunModel } from "../modelChoice";
import { OpenAICompatibleProvider } from "./openai";
import { ScriptedProvider } from "./scripted";

export { FixedProvider } from "./fixed";
export { OpenAICompatibleProvider } from "./openai";
export type { AzureTarget, OpenAICompatibleOptions } from "./openai";
export { ScriptedProvider, parseFixture, findEntry, ScriptedFixtureSchema } from "./scripted";
export type { ScriptedFixture, ScriptedEntry } from "./scripted";

export interface CreateProviderOptions {
  /** The workflow file being run; the scripted default fixture and relative fixtures hang off it. */
  workflowPath: string;
  /** Where keys are read from: the CLI and the runner pass the environment variables they were started with. */
  env: NodeJS.ProcessEnv;
}

/**
 * The model a provider configuration names for the whole run: `model` for OpenAI-compatible
 * servers, the deployment for Azure (which routes by deployment, whatever the request names), the
 * family for the editor's Language Model API; none for the scripted provider. It replaces each
 * agent step's model unless the step pins its own (src/engine/modelChoice.ts).
 */
export function runModelOf(config: ProviderConfig | undefined): RunModel | undefined {
  switch (config?.kind) {
    case undefined:
    case "scripted":
      return undefined;
    case "openai":
      return config.model ? { model: config.model, provider: "openai" } : undefined;
    case "azure":
      return config.deployment ? { model: config.deployment, provider: "azure" } : undefined;
    case "vscode-lm":
      return config.family ? { model: config.family, provider: "vscode-lm" } : undefined;
    default:
      throw unknownKind(config);
  }
}

/**
 * Builds the provider a run uses from its configuration. Called by the CLI and the runner once
 * per run. Keys are read here, by variable name, and handed straight to the provider; a missing
 * key is reported by the variable's name, so neither the config nor an error ever holds the key.
 */
export function createProvider(config: ProviderConfig, opts: CreateProviderOptions): ModelProvider {
  switch (config.kind) {
    case "scripted": {
      const fixture = config.fixture
        ? path.resolve(path.dirname(opts.workflowPath), config.fixture)
        : defaultFixturePath(opts.workflowPath);
      return new ScriptedProvider(fixture);
    }
    case "openai": {
      const variable = config.apiKeyEnv ?? "OPENAI_API_KEY";
      // The request carries the run's model already (withRunModel); this is for a request naming none.
      const defaultModel = config.model;
      return new OpenAICompatibleProvider({
        apiKey: readKey(opts.env, variable, config.baseUrl ? ` for ${config.baseUrl}` : ""),
        ...(config.baseUrl ? { baseUrl: config.baseUrl } : {}),
        ...(defaultModel ? { defaultModel } : {}),
      });
    }
    case "azure": {
      const variable = config.apiKeyEnv ?? "AZURE_OPENAI_API_KEY";
      return new OpenAICompatibleProvider({
        apiKey: readKey(opts.env, variable, ` for Azure OpenAI deployment "${config.deployment}"`),
        azure: { endpoint: config.endpoint, deployment: config.deployment, apiVersion: config.apiVersion },
        // Azure routes by deployment; the model name is only what the request reports.
        defaultModel: config.deployment,
      });
    }
    case "vscode-lm":
      throw new CasefileError(
        "USAGE",
        'the "vscode-lm" provider (VS Code Language Model API) is only available inside VS Code, where the runner asks the editor to make each call; ' +
          'from the CLI choose "scripted", "openai" or "azure"',
        { kind: config.kind },
      );
    default:
      throw unknownKind(config);
  }
}

/** `<workflow file without its extension>.responses.json`, beside the workflow. */
export function defaultFixturePath(workflowPath: string): string {
  const resolved = path.resolve(workflowPath);
  const ext = path.extname(resolved);
  const stem = /^\.[mc]?[jt]s$/.test(ext) ? resolved.slice(0, -ext.length) : resolved;
  return `${stem}.responses.json`;
}

/** The exhaustive end of a switch on the kind: a config from a newer version, or a cast. */
function unknownKind(config: never): CasefileError {
  return new CasefileError("USAGE", `unknown provider kind ${JSON.stringify((config as { kind?: unknown }).kind)}`);
}

function readKey(env: NodeJS.ProcessEnv, variable: string, purpose: string): string {
  const key = env[variable];
  if (!key) {
    throw new CasefileError(
      "USAGE",
      `no API key${purpose}: the environment variable ${variable} is not set or empty` +
        " (a local server that needs no key accepts any value)",
      { variable },
    );
  }
  return key;
}
