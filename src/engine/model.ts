import type { ChatMessage, Json } from "./records";

/**
 * The exact request an agent step sends. It is built from state by the step's `context`
 * function, hashed (contextHash) and recorded before the model is called.
 */
export interface ModelRequest {
  /** Executor id of the agent step, used by the scripted provider to key responses. */
  step: string;
  messages: ChatMessage[];
  model: string;
  params: Record<string, Json>;
  /** JSON schema of the proposal, derived from the step's zod schema. */
  responseSchema: Json;
  /** Stable hash of messages, model, params and responseSchema. */
  hash: string;
  /** How many times this step has been called before in this run (0 for the first call). */
  callIndex: number;
}

export interface ModelResponse {
  /** The raw text the model answered; parsed and validated by the agent step, never trusted. */
  text: string;
  usage?: { promptTokens?: number; completionTokens?: number; totalTokens?: number };
  /** Provider-specific facts worth keeping (model actually used, request id). Never a key. */
  meta?: Record<string, Json>;
}

/**
 * A model provider. Implementations: scripted (fixture file, offline default), OpenAI-compatible
 * (the `openai` package), and in the editor the VS Code Language Model API via the host.
 */
export interface ModelProvider {
  readonly name: string;
  complete(request: ModelRequest, signal?: AbortSignal): Promise<ModelResponse>;
}
