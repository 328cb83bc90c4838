import type OpenAI from "openai";
import { CasefileError, errorMessage } from "../errors";
import type { ModelProvider, ModelRequest, ModelResponse } from "../model";
import type { Json } from "../records";

/**
 * A provider on the `openai` package's Chat Completions client. One class covers OpenAI itself,
 * any server speaking the same API under another base URL (Ollama, vLLM, LM Studio) and Azure
 * OpenAI (endpoint + deployment + api-version, `api-key` header), because the package's
 * AzureOpenAI client differs only in how it builds the URL and authenticates.
 *
 * Timeouts and retries are the package's: `timeout` applies to each attempt, and `maxRetries`
 * retries 408, 409, 429, 5xx and connection failures with exponential backoff and jitter
 * (0.5 s doubling to 8 s), honouring `retry-after` / `retry-after-ms` from the server.
 *
 * The API key is held only by the client in a private field. Every string this class hands
 * back (answer text, error messages, error details, meta) has the key removed, in case a server
 * echoes it, as some compatible servers do in their 401 bodies (keyPattern says how).
 */

export interface AzureTarget {
  /** e.g. https://my-resource.openai.azure.com */
  endpoint: string;
  deployment: string;
  apiVersion: string;
}

export interface OpenAICompatibleOptions {
  /** Supplied by the caller (the CLI reads it from the environment); never logged or returned. */
  apiKey: string;
  /** A compatible server, e.g. http://localhost:11434/v1 for Ollama. Default: OpenAI's API. */
  baseUrl?: string;
  /** Azure OpenAI instead of a base URL. */
  azure?: AzureTarget;
  /** Used when a request carries an empty model name. */
  defaultModel?: string;
  /** Per attempt, in milliseconds. Default 60 s. */
  timeoutMs?: number;
  /** Retries after the first attempt on 429, 5xx, timeouts and connection errors. Default 3. */
  maxRetries?: number;
  /** Shown in records (AgentCallRecord.provider). Default "openai" or "azure". */
  name?: string;
}

/**
 * The `openai` package, required the first time a provider is made: it is the largest part of a
 * run's code after zod and only runs that call an OpenAI-compatible model need it (in dist/ it is
 * a bundle of its own beside the CLI and the runner, esbuild.mjs).
 */
function openaiPackage(): typeof import("openai") {
  return require("openai") as typeof import("openai");
}

const defaultTimeoutMs = 60_000;
const defaultMaxRetries = 3;
const redacted = "[redacted]";
/**
 * Keys shorter than this are placeholders for local servers that ignore them ("ollama", "sk",
 * "x"), not secrets: a model's answer is never redacted for them (removing every "x" from it would
 * corrupt it), and errors and meta lose them only as whole tokens (keyPattern).
 */
const minSecretKey = 8;

export class OpenAICompatibleProvider implements ModelProvider {
  readonly name: string;
  readonly #client: OpenAI;
  /** Where the key occurs in a string, for #redact. */
  readonly #key: RegExp;
  readonly #keyIsSecret: boolean;
  readonly #defaultModel: string | undefined;
  /** Where calls go, without credentials or query: for error messages. */
  readonly #target: string;

  constructor(options: OpenAICompatibleOptions) {
    if (!options.apiKey) {
      throw new CasefileError("USAGE", "the OpenAI-compatible provider needs an API key; none was given");
    }
    this.#key = keyPattern(options.apiKey);
    this.#keyIsSecret = options.apiKey.length >= minSecretKey;
    this.#defaultModel = options.defaultModel;
    const common = {
      apiKey: options.apiKey,
      timeout: options.timeoutMs ?? defaultTimeoutMs,
      maxRetries: options.maxRetries ?? defaultMaxRetries,
      // The package's own log lines would go to the runner's stdout; we report failures
      // ourselves, redacted, through the step record.
      logLevel: "off" as const,
      // Explicit, so ambient OPENAI_ORG_ID / OPENAI_PROJECT_ID never change a request silently.
      organization: null,
      project: null,
    };
    if (options.azure) {
      const { endpoint, deployment, apiVersion } = options.azure;
      this.#client = new (openaiPackage().AzureOpenAI)({ ...common, endpoint, deployment, apiVersion });
      this.#target = `${displayUrl(endpoint).replace(/\/+$/, "")}/openai/deployments/${deployment}`;
      this.name = options.name ?? "azure";
    } else {
      const baseURL = options.baseUrl ?? "https://api.openai.com/v1";
      if (/^[a-z][a-z0-9+.-]*:\/\/[^/?#]*@/i.test(baseURL)) {
        // fetch refuses such URLs, and the refusal would quote the password.
        throw new CasefileError(
          "USAGE",
          `the base URL ${displayUrl(baseURL)} carries a user name or password; pass the key as the API key instead`,
        );
      }
      this.#client = new (openaiPackage().OpenAI)({ ...common, baseURL });
      this.#target = displayUrl(baseURL);
      this.name = options.name ?? "openai";
    }
  }

  /** Called by the agent step for each live model call, with the recorded request. */
  async complete(request: ModelRequest, signal?: AbortSignal): Promise<ModelResponse> {
    const model = request.model || this.#defaultModel;
    if (!model) {
      throw new CasefileError("MODEL_CALL_FAILED", `step "${request.step}": no model named in the request or the provider`, {
        step: request.step,
      });
    }
    const body = {
      // Workflow params (temperature, seed, max_tokens…) first, so they cannot replace what
      // makes the request this request.
      ...request.params,
      model,
      messages: request.messages,
      ...responseFormat(request),
    } as unknown as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming;
    const started = Date.now();
    let completion: OpenAI.Chat.ChatCompletion;
    let requestId: string | null | undefined;
    try {
      const { data, request_id } = await this.#client.chat.completions
        .create({ ...body, stream: false }, signal ? { signal } : {})
        .withResponse();
      completion = data;
      requestId = request_id;
    } catch (e) {
      throw this.#failure(request, e, Date.now() - started);
    }
    // Whatever the types say, a compatible server may answer 200 with an empty or `null` body (the
    // package then hands back undefined or null), no choices, or a choice without a message.
    const choice = completion?.choices?.[0];
    if (!choice?.message) {
      throw new CasefileError("MODEL_CALL_FAILED", `step "${request.step}": ${this.#target} answered with no message`, {
        step: request.step,
      });
    }
    const meta: Record<string, Json> = { model: this.#redact(completion.model ?? model) };
    if (completion.id) meta.id = this.#redact(completion.id);
    if (requestId) meta.requestId = this.#redact(requestId);
    if (choice.finish_reason) meta.finishReason = choice.finish_reason;
    // A structured-output refusal has no content: the step gets "" (rejected as bad JSON and
    // escalated, like any unusable answer) and the refusal is kept beside it.
    if (choice.message.refusal) meta.refusal = this.#redact(choice.message.refusal);
    const u = completion.usage;
    const content = choice.message.content ?? "";
    const text = this.#keyIsSecret ? this.#redact(content) : content;
    const response: ModelResponse = { text, meta };
    if (u)
      response.usage = {
        promptTokens: u.prompt_tokens,
        completionTokens: u.completion_tokens,
        totalTokens: u.total_tokens,
      };
    return response;
  }

  /** A typed, redacted error for a failed call; the package's error is not kept as `cause`. */
  #failure(request: ModelRequest, e: unknown, elapsedMs: number): CasefileError {
    const details: Record<string, unknown> = { step: request.step, target: this.#target, elapsedMs };
    let what: string;
    const OpenAI = openaiPackage().OpenAI;
    if (e instanceof OpenAI.APIConnectionTimeoutError) {
      what = "timed out";
    } else if (e instanceof OpenAI.APIUserAbortError) {
      what = "was aborted";
    } else if (e instanceof OpenAI.APIConnectionError) {
      what = `could not connect: ${connectionFailure(e)}`;
    } else if (e instanceof OpenAI.APIError) {
      details.status = e.status;
      if (e.requestID) details.requestId = e.requestID;
      what = `failed with HTTP ${e.status}: ${e.message.replace(/^\d{3}\s*/, "") || "no message"}`;
    } else {
      what = `failed: ${errorMessage(e)}`;
    }
    // Value by value: redacting the details' JSON text could rename a key or break the JSON
    // (a placeholder key "1" inside `"status":401`).
    for (const [k, v] of Object.entries(details)) if (typeof v === "string") details[k] = this.#redact(v);
    return new CasefileError("MODEL_CALL_FAILED", this.#redact(`step "${request.step}": model call to ${this.#target} ${what}`), details);
  }

  #redact(text: string): string {
    // Also drop any user:password@ in a URL quoted by an underlying error.
    return text.replace(this.#key, redacted).replace(/(\/\/)[^\s/@]*@/g, "$1");
  }
}

/**
 * Where #redact finds the key. A secret key (8 characters or more) goes wherever it occurs, even
 * inside a longer string: a server may echo it URL-encoded (`Bearer%20sk-…`) or glued to other
 * text, and an 8-character run matching it by chance is no loss worth a leak. A placeholder goes
 * only where it stands as a token of its own, with no letter, digit, "_" or "-" beside it, so the
 * key "k" leaves "key" alone and "sk" leaves "task" and "sk-proj" alone.
 */
function keyPattern(key: string): RegExp {
  const escaped = key.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
  if (key.length >= minSecretKey) return new RegExp(escaped, "g");
  return new RegExp(`(?<![\\p{L}\\p{N}_-])${escaped}(?![\\p{L}\\p{N}_-])`, "gu");
}

/**
 * Why a connection failed, in the words of whatever refused it. undici says only "fetch failed"
 * and keeps the reason as that error's cause (`connect ECONNREFUSED 127.0.0.1:8080`, `getaddrinfo
 * ENOTFOUND host`, a TLS error); a connect that tried several addresses throws an AggregateError
 * of one error each.
 */
export function connectionFailure(e: Error): string {
  let inner = e;
  while (inner.cause instanceof Error) inner = inner.cause;
  const each = inner instanceof AggregateError && inner.errors.length > 0 ? (inner.errors as unknown[]) : [inner];
  return [...new Set(each.map(describeCause))].join("; ");
}

function describeCause(e: unknown): string {
  if (!(e instanceof Error)) return String(e);
  const { code, reason } = e as { code?: unknown; reason?: unknown };
  // OpenSSL's message is a line of its internals ("80EC…:error:0A00010B:SSL routines:…"); its
  // reason is the part a person reads.
  const text = (typeof reason === "string" && reason) || e.message.trim() || e.name;
  return typeof code === "string" && !text.includes(code) ? `${text} (${code})` : text;
}

/**
 * Structured output from the request's JSON Schema. OpenAI requires a name of at most 64
 * characters from [a-zA-Z0-9_-], so the step id is squeezed into one; `$schema` is dropped because
 * strict mode accepts only a subset of keywords. The recorded request (and its hash) keeps the
 * schema exactly as built.
 */
function responseFormat(request: ModelRequest): { response_format?: Json } {
  const schema = request.responseSchema;
  if (!schema || typeof schema !== "object" || Array.isArray(schema)) return {};
  const { $schema: _ignored, ...rest } = schema;
  const name = request.step.replace(/[^a-zA-Z0-9_-]/g, "_").slice(0, 64) || "proposal";
  return { response_format: { type: "json_schema", json_schema: { name, schema: rest, strict: true } } };
}

/** A URL for messages: without user:password, query or fragment, which may carry credentials. */
function displayUrl(url: string): string {
  try {
    const u = new URL(url);
    u.username = "";
    u.password = "";
    u.search = "";
    u.hash = "";
    return u.toString().replace(/\/$/, "");
  } catch {
    // `s`: a value pasted with a line break after its query (a trailing newline) loses it all.
    return url.replace(/[?#].*/s, "");
  }
}
