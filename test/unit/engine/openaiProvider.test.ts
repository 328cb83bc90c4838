import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { IncomingHttpHeaders, Server, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { inspect } from "node:util";
import { z } from "zod";
import { buildModelRequest } from "../../../src/engine/contextRequest";
import { isCasefileError } from "../../../src/engine/errors";
import type { ModelRequest } from "../../../src/engine/model";
import { OpenAICompatibleProvider } from "../../../src/engine/providers/openai";

/**
 * A real HTTP server on loopback that speaks enough of the Chat Completions API for the provider:
 * each test queues what the next requests get (status, body, headers, delay), and the server
 * records what it received.
 */
interface Received {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: Record<string, unknown>;
  /** When it arrived (performance.now(): monotonic, for the waits between retries). */
  at: number;
}
interface Reply {
  status?: number;
  body?: unknown;
  headers?: Record<string, string>;
  delayMs?: number;
}

class ChatCompletionsServer {
  readonly received: Received[] = [];
  private replies: Reply[] = [];
  private server: Server | undefined;
  /** Delayed replies not sent yet (cleared by reset and stop). */
  private readonly timers = new Set<NodeJS.Timeout>();
  /** Replies written so far. */
  replied = 0;
  url = "";

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        const received: Received = {
          method: req.method ?? "",
          url: req.url ?? "",
          headers: req.headers,
          body: text ? (JSON.parse(text) as Record<string, unknown>) : {},
          at: performance.now(),
        };
        this.received.push(received);
        const reply = this.replies.shift() ?? {};
        const status = reply.status ?? 200;
        const body = reply.body ?? (status >= 400 ? { error: { message: "error" } } : completion(received.body, "{}"));
        const send = (): void => {
          this.replied++;
          sendJson(res, status, body, reply.headers);
        };
        if (reply.delayMs) {
          const timer = setTimeout(() => {
            this.timers.delete(timer);
            send();
          }, reply.delayMs);
          this.timers.add(timer);
        } else send();
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}`;
  }

  queue(...replies: Reply[]): void {
    this.replies.push(...replies);
  }

  /** Called before each test: forget what earlier tests received or left queued. */
  reset(): void {
    this.received.length = 0;
    this.replies.length = 0;
    this.replied = 0;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }

  async stop(): Promise<void> {
    this.reset();
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server!.close(() => resolve()));
  }
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.destroyed) return;
  res.writeHead(status, { "content-type": "application/json", "x-request-id": "req_loopback_1", ...headers });
  res.end(JSON.stringify(body));
}

function completion(body: Record<string, unknown>, content: string | null, extra: Record<string, unknown> = {}): unknown {
  return {
    id: "chatcmpl-loopback",
    object: "chat.completion",
    created: 1_700_000_000,
    model: (body.model as string) ?? "unknown",
    choices: [
      {
        index: 0,
        message: { role: "assistant", content, refusal: null, ...extra },
        finish_reason: "stop",
        logprobs: null,
      },
    ],
    usage: { prompt_tokens: 42, completion_tokens: 7, total_tokens: 49 },
  };
}

const proposal = z.object({ action: z.enum(["approve", "hold"]), reason: z.string(), facts: z.array(z.string()) });
const answer = '{"action":"approve","reason":"within tolerance","facts":["invoice.total"]}';
const key = "sk-casefile-test-KEY-0123456789abcdef";

function request(overrides: Partial<ModelRequest> = {}): ModelRequest {
  return {
    ...buildModelRequest({
      step: "classify invoice",
      messages: [
        { role: "system", content: "Decide." },
        { role: "user", content: "invoice.total = 1200" },
      ],
      model: "gpt-4o-mini",
      params: { temperature: 0, seed: 3 },
      responseSchema: proposal,
      callIndex: 0,
    }),
    ...overrides,
  };
}

describe("OpenAICompatibleProvider against a loopback Chat Completions server", function () {
  this.timeout(15_000);
  const server = new ChatCompletionsServer();
  before(() => server.start());
  after(() => server.stop());
  beforeEach(() => server.reset());

  const provider = (opts: Partial<ConstructorParameters<typeof OpenAICompatibleProvider>[0]> = {}): OpenAICompatibleProvider =>
    new OpenAICompatibleProvider({
      apiKey: key,
      baseUrl: `${server.url}/v1`,
      timeoutMs: 5_000,
      maxRetries: 3,
      ...opts,
    });

  it("posts the request with structured output and returns the text, usage and meta", async () => {
    server.queue({ body: completion({ model: "gpt-4o-mini-2024-07-18" }, answer) });
    const r = await provider().complete(request());
    assert.equal(r.text, answer);
    assert.deepEqual(r.usage, { promptTokens: 42, completionTokens: 7, totalTokens: 49 });
    assert.deepEqual(r.meta, {
      model: "gpt-4o-mini-2024-07-18",
      id: "chatcmpl-loopback",
      requestId: "req_loopback_1",
      finishReason: "stop",
    });

    assert.equal(server.received.length, 1);
    const got = server.received[0]!;
    assert.equal(got.method, "POST");
    assert.equal(got.url, "/v1/chat/completions");
    assert.equal(got.headers.authorization, `Bearer ${key}`);
    assert.equal(got.body.model, "gpt-4o-mini");
    assert.equal(got.body.temperature, 0);
    assert.equal(got.body.seed, 3);
    assert.deepEqual(got.body.messages, request().messages);
    const format = got.body.response_format as {
      type: string;
      json_schema: { name: string; strict: boolean; schema: Record<string, unknown> };
    };
    assert.equal(format.type, "json_schema");
    assert.equal(format.json_schema.name, "classify_invoice");
    assert.equal(format.json_schema.strict, true);
    const { $schema: _dropped, ...expected } = request().responseSchema as Record<string, unknown>;
    assert.deepEqual(format.json_schema.schema, expected);
    assert.equal("$schema" in format.json_schema.schema, false);
  });

  /**
   * The waits between attempts, as the server saw them. Each is at least the wait the client slept
   * (the first arrival precedes the reply the client waits after), less 1 ms of timer rounding.
   * Only lower bounds: how much longer a loaded machine takes is not the provider's doing.
   */
  const waits = (): number[] => server.received.slice(1).map((r, i) => r.at - server.received[i]!.at);

  it("retries a 429 after the retry-after-ms the server asks for, and then succeeds", async () => {
    // 1.2 s: longer than the package's own first wait (0.5 s at most), so only the header explains it.
    server.queue({
      status: 429,
      body: { error: { message: "Rate limit reached", type: "rate_limit" } },
      headers: { "retry-after-ms": "1200" },
    });
    server.queue({ body: completion({ model: "gpt-4o-mini" }, answer) });
    const r = await provider().complete(request());
    assert.equal(r.text, answer);
    assert.equal(server.received.length, 2);
    assert.deepEqual(server.received[1]!.body, server.received[0]!.body);
    assert.ok(waits()[0]! >= 1199, `waited ${waits()[0]} ms, asked for 1200 ms`);
  });

  it("retries a 500 after the retry-after seconds the server asks for, and then succeeds", async () => {
    server.queue({ status: 500, body: { error: { message: "upstream exploded" } }, headers: { "retry-after": "1" } });
    server.queue({ body: completion({ model: "gpt-4o-mini" }, answer) });
    const r = await provider().complete(request());
    assert.equal(r.text, answer);
    assert.equal(server.received.length, 2);
    assert.ok(waits()[0]! >= 999, `waited ${waits()[0]} ms, asked for 1 s`);
  });

  it("backs off exponentially when the server gives no retry-after", async () => {
    server.queue({ status: 503, body: { error: { message: "busy" } } }, { status: 502, body: { error: { message: "busy" } } });
    server.queue({ body: completion({ model: "gpt-4o-mini" }, answer) });
    await provider().complete(request());
    assert.equal(server.received.length, 3);
    // The package's schedule: 0.5 s then 1 s, each less up to 25 % jitter, so at least 375 and
    // 750 ms; the second at least is longer than the first can ever be.
    const [first, second] = waits() as [number, number];
    assert.ok(first >= 374, `first wait ${first} ms, at least 375 ms expected`);
    assert.ok(second >= 749, `second wait ${second} ms, at least 750 ms expected (doubled)`);
  });

  it("gives up after maxRetries with MODEL_CALL_FAILED naming the step and the status", async () => {
    const limited = {
      status: 429,
      body: { error: { message: "Rate limit reached" } },
      headers: { "retry-after-ms": "10" },
    };
    server.queue(limited, limited, limited);
    await assert.rejects(provider({ maxRetries: 1 }).complete(request()), (e: unknown) => {
      assert.ok(isCasefileError(e), "expected: isCasefileError(e)");
      assert.equal(e.code, "MODEL_CALL_FAILED");
      assert.match(
        e.message,
        /step "classify invoice": model call to http:\/\/127\.0\.0\.1:\d+\/v1 failed with HTTP 429: Rate limit reached/,
      );
      assert.equal(e.details.status, 429);
      return true;
    });
    assert.equal(server.received.length, 2);
  });

  it("refuses a completion with no choices as MODEL_CALL_FAILED, naming the step and the server", async () => {
    server.queue({ body: { ...(completion({ model: "gpt-4o-mini" }, answer) as object), choices: [] } });
    await assert.rejects(provider().complete(request()), (e: unknown) => {
      assert.ok(isCasefileError(e), "a typed error");
      assert.equal(e.code, "MODEL_CALL_FAILED");
      assert.match(e.message, /^step "classify invoice": http:\/\/127\.0\.0\.1:\d+\/v1 answered with no choices$/);
      assert.deepEqual(e.details, { step: "classify invoice" });
      return true;
    });
  });

  it("refuses to be made without an API key, as USAGE", () => {
    assert.throws(
      () => new OpenAICompatibleProvider({ apiKey: "" }),
      (e: unknown) =>
        isCasefileError(e) && e.code === "USAGE" && e.message === "the OpenAI-compatible provider needs an API key; none was given",
    );
  });

  it("does not retry a 400", async () => {
    server.queue({ status: 400, body: { error: { message: "Invalid schema for response_format" } } });
    await assert.rejects(provider().complete(request()), /HTTP 400: Invalid schema for response_format/);
    assert.equal(server.received.length, 1);
  });

  it("calls Azure OpenAI on the deployment URL with api-version and the api-key header", async () => {
    server.queue({ body: completion({ model: "gpt-4o" }, answer) });
    const azure = new OpenAICompatibleProvider({
      apiKey: key,
      azure: { endpoint: `${server.url}/`, deployment: "invoices-prod", apiVersion: "2024-10-21" },
      timeoutMs: 5_000,
    });
    assert.equal(azure.name, "azure");
    const r = await azure.complete(request());
    assert.equal(r.text, answer);
    const got = server.received[0]!;
    assert.equal(got.url, "/openai/deployments/invoices-prod/chat/completions?api-version=2024-10-21");
    assert.equal(got.headers["api-key"], key);
    assert.equal(got.headers.authorization, undefined);
    assert.equal((got.body.response_format as { type: string }).type, "json_schema");
  });

  it("times out a slow server with MODEL_CALL_FAILED naming the step", async () => {
    // The server would answer after a minute: the test can only pass by the provider giving up first
    // (no clock read; a provider that waited would hit mocha's timeout).
    server.queue({ delayMs: 60_000, body: completion({ model: "gpt-4o-mini" }, answer) });
    await assert.rejects(provider({ timeoutMs: 200, maxRetries: 0 }).complete(request()), (e: unknown) => {
      assert.ok(isCasefileError(e), "expected: isCasefileError(e)");
      assert.equal(e.code, "MODEL_CALL_FAILED");
      assert.match(e.message, /step "classify invoice": model call to .* timed out/);
      return true;
    });
    assert.equal(server.received.length, 1, "the request reached the server once (no retry)");
    assert.equal(server.replied, 0, "the server replied before the provider gave up: nothing timed out");
  });

  it("reports an unreachable server as MODEL_CALL_FAILED", async () => {
    const dead = new OpenAICompatibleProvider({
      apiKey: key,
      baseUrl: "http://127.0.0.1:9/v1",
      maxRetries: 0,
      timeoutMs: 2_000,
    });
    await assert.rejects(dead.complete(request()), /step "classify invoice": model call to http:\/\/127\.0\.0\.1:9\/v1 could not connect/);
  });

  it("honours an abort signal", async () => {
    server.queue({ delayMs: 2_000, body: completion({ model: "gpt-4o-mini" }, answer) });
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 100);
    await assert.rejects(provider({ maxRetries: 0 }).complete(request(), ac.signal), /was aborted/);
  });

  it("returns a structured-output refusal as empty text with the refusal in meta", async () => {
    server.queue({ body: completion({ model: "gpt-4o-mini" }, null, { refusal: "I can't help with that." }) });
    const r = await provider().complete(request());
    assert.equal(r.text, "");
    assert.equal(r.meta?.refusal, "I can't help with that.");
  });

  it("sends no response_format when the request has no schema object, and uses the default model for an empty one", async () => {
    server.queue({ body: completion({ model: "llama3.1" }, "plain") });
    const r = await provider({ defaultModel: "llama3.1" }).complete(request({ responseSchema: null, model: "" }));
    assert.equal(r.text, "plain");
    assert.equal(server.received[0]!.body.model, "llama3.1");
    assert.equal("response_format" in server.received[0]!.body, false);
  });

  it("keeps a model's answer intact when the key is a short placeholder for a local server", async () => {
    server.queue({ body: completion({ model: "llama3.1" }, '{"action":"hold","reason":"x-ray of box x"}') });
    const r = await provider({ apiKey: "x" }).complete(request());
    assert.equal(r.text, '{"action":"hold","reason":"x-ray of box x"}');
    assert.equal(server.received[0]!.headers.authorization, "Bearer x");
  });

  it("refuses a base URL with credentials in it without quoting them", () => {
    assert.throws(
      () => new OpenAICompatibleProvider({ apiKey: key, baseUrl: "http://someone:hunter2-password@127.0.0.1:9/v1?x=1" }),
      (e: unknown) => {
        assert.ok(isCasefileError(e) && e.code === "USAGE", 'expected: isCasefileError(e) && e.code === "USAGE"');
        assert.match(e.message, /the base URL http:\/\/127\.0\.0\.1:9\/v1 carries a user name or password/);
        assert.ok(!JSON.stringify(e).includes("hunter2") && !e.message.includes("hunter2"), e.message);
        return true;
      },
    );
  });

  it("never lets the key appear in an answer, an error, its fields or meta, even when the server echoes it", async () => {
    const seen: string[] = [];
    const record = (v: unknown): void => {
      seen.push(typeof v === "string" ? v : JSON.stringify(v));
      seen.push(inspect(v, { depth: 20, showHidden: true }));
    };
    const echo = (): string => String(server.received.at(-1)?.headers.authorization ?? key);
    const p = provider({ maxRetries: 0 });
    record(p);

    // 1. A compatible server whose 401 body repeats the key it was given.
    server.queue({ status: 401, body: { error: { message: `Incorrect API key provided: ${key}`, code: key } } });
    await p.complete(request()).then(
      () => assert.fail("expected a 401"),
      (e: unknown) => {
        record(e);
        record((e as Error).stack);
        record((e as { details?: unknown }).details);
        assert.match((e as Error).message, /HTTP 401: Incorrect API key provided: \[redacted\]/);
      },
    );
    // 2. An answer, model name, id and refusal that contain the key.
    server.queue({
      body: { ...(completion({ model: `m-${key}` }, `you sent ${key}`, { refusal: key }) as object), id: key },
      headers: { "x-request-id": key },
    });
    const ok = await p.complete(request());
    record(ok);
    assert.equal(ok.text, "you sent [redacted]");
    // 3. A 5xx whose body is plain text with the key; a timeout; an unreachable server.
    server.queue({ status: 503, body: `overloaded for ${key}`, headers: { "content-type": "text/plain" } });
    await p.complete(request()).catch((e: unknown) => record(e));
    server.queue({ delayMs: 1_000, body: completion({ model: "x" }, "late") });
    await provider({ timeoutMs: 100, maxRetries: 0 })
      .complete(request())
      .catch((e: unknown) => record(e));
    await new OpenAICompatibleProvider({ apiKey: key, baseUrl: "http://127.0.0.1:9/v1", maxRetries: 0 })
      .complete(request())
      .catch((e: unknown) => record(e));

    assert.ok(echo().includes(key), "the server did receive the key");
    assert.ok(seen.length >= 14, "expected: seen.length >= 14");
    for (const text of seen) assert.ok(!text.includes(key), `key found in: ${text.slice(0, 300)}`);
  });
});
