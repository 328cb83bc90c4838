import { createProvider, type CreateProviderOptions } from "../engine/providers/index";
import type { ModelProvider } from "../engine/model";
import type { ProviderConfig } from "../protocol/provider";

/**
 * The provider a command's agent steps call, from its configuration: the engine's
 * (createProvider), answering after `latencyMs` when the scripted configuration asks for it. Called
 * by the runner's session, `casefile worker` and `casefile eval` once per command.
 */
export function providerFor(config: ProviderConfig, opts: CreateProviderOptions): ModelProvider {
  const provider = createProvider(config, opts);
  if (config.kind !== "scripted" || !config.latencyMs) return provider;
  return withLatency(provider, config.latencyMs);
}

/**
 * Each call answered `ms` after it is made, as a hosted model's would be: rehearses offline how
 * workers overlap model waits. An abort ends the wait at once; the provider then refuses the call
 * as it refuses any aborted one.
 */
function withLatency(provider: ModelProvider, ms: number): ModelProvider {
  return {
    name: provider.name,
    complete: async (request, signal) => {
      await new Promise<void>((resolve) => {
        const done = (): void => {
          clearTimeout(timer);
          signal?.removeEventListener("abort", done);
          resolve();
        };
        const timer = setTimeout(done, ms);
        signal?.addEventListener("abort", done, { once: true });
      });
      return provider.complete(request, signal);
    },
  };
}
