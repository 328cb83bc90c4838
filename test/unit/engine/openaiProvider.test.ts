import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { IncomingHttpHeaders, Server, ServerResponse } from "node:http";
import { connect, createServer as createNetServer } from "node:net";
import type { AddressInfo } from "node:net";
import { inspect } from "node:util";
import { z } from "zod";
import { buildModelRequest } from "../../../src/engine/contextRequest";
import { isCasefileError } from "../../../src/engine/errors";
import type { ModelRequest } from "../../../src/engine/model";
import { connectionFailure, OpenAICompatibleProvider } from "../../../src/engine/providers/openai";

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
  /** JSON, or a function of the request received (to echo what the client sent). */
  body?: unknown;
  /** Sent as it is instead of `body` as JSON (still with a JSON content type unless headers say otherwise). */
  raw?: string;
  headers?: Record<string, string>;
  /** Send no x-request-id header (the server sends one by default). */
  noRequestId?: boolean;
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
        const given: unknown = typeof reply.body === "function" ? (reply.body as (got: Received) => unknown)(received) : reply.body;
        const body = given ?? (status >= 400 ? { error: { message: "error" } } : completion(received.body, "{}"));
        const send = (): void => {
          this.replied++;
          sendJson(res, status, reply.raw ?? JSON.stringify(body), reply.headers, reply.noRequestId);
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

function sendJson(res: ServerResponse, status: number, text: string, headers: Record<string, string> = {}, noRequestId = false): void {
  if (res.destroyed) return;
  const all: Record<string, string> = { "content-type": "application/json", "x-request-id": "req_loopback_1", ...headers };
  if (noRequestId) delete all["x-request-id"];
  res.writeHead(status, all);
  res.end(text);
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

/** A loopback port nothing listens on: one the system just gave a server, which is closed again. */
async function closedPort(): Promise<number> {
  const s = createNetServer();
  await new Promise<void>((resolve) => s.listen(0, "127.0.0.1", resolve));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

describe("connectionFailure: why a connection failed", () => {
  it("is the reason under undici's \"fetch failed\", each address's when several were tried", async () => {
    // A real failure of a connect that tried two addresses (as "localhost" does where it has both):
    // Node throws an AggregateError with an empty message; undici would wrap it as fetch failed's cause.
    const port = await closedPort();
    const both = await new Promise<Error>((resolve) => {
      const socket = connect({
        host: "twofold.test",
        port,
        autoSelectFamily: true,
        lookup: (_host, _opts, cb) =>
          (cb as (e: null, a: { address: string; family: number }[]) => void)(null, [
            { address: "::1", family: 6 },
            { address: "127.0.0.1", family: 4 },
          ]),
      });
      socket.on("error", resolve);
    });
    assert.ok(both instanceof AggregateError, `an AggregateError: ${String(both)}`);
    assert.equal(
      connectionFailure(new TypeError("fetch failed", { cause: both })),
      `connect ECONNREFUSED ::1:${port}; connect ECONNREFUSED 127.0.0.1:${port}`,
    );
    // The same refusal twice is said once; an error with no message is named by its kind.
    assert.equal(
      connectionFailure(new AggregateError([both.errors[1], both.errors[1], "no route"])),
      `connect ECONNREFUSED 127.0.0.1:${port}; no route`,
    );
    assert.equal(connectionFailure(new TypeError("fetch failed", { cause: new AggregateError([]) })), "AggregateError");
  });
});

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
      assert.match(e.message, /^step "classify invoice": http:\/\/127\.0\.0\.1:\d+\/v1 answered with no message$/);
      assert.deepEqual(e.details, { step: "classify invoice" });
      return true;
    });
  });

  it("refuses a 200 with no completion in it (empty, null, no choices, a choice without a message) the same way", async () => {
    // Kills openai.ts:137 OptionalChaining: `{}` (no choices key) and `null` are a typed refusal, not a TypeError.
    const sloppy: [string, Reply][] = [
      ["an empty body", { raw: "", headers: { "content-length": "0" } }],
      ["null", { raw: "null" }],
      ["an object without choices", { body: {} }],
      ["a choice without a message", { body: { id: "c1", choices: [{ index: 0, finish_reason: "stop" }] } }],
    ];
    for (const [what, reply] of sloppy) {
      server.queue(reply);
      await assert.rejects(provider({ maxRetries: 0 }).complete(request()), (e: unknown) => {
        assert.ok(isCasefileError(e), `${what}: a typed error, got ${String(e)}`);
        assert.equal(e.code, "MODEL_CALL_FAILED", what);
        assert.equal(e.message, `step "classify invoice": ${server.url}/v1 answered with no message`, what);
        assert.deepEqual(e.details, { step: "classify invoice" }, what);
        return true;
      });
    }
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
    const t0 = performance.now();
    await assert.rejects(provider({ timeoutMs: 200, maxRetries: 0 }).complete(request()), (e: unknown) => {
      const outer = performance.now() - t0;
      assert.ok(isCasefileError(e), "expected: isCasefileError(e)");
      assert.equal(e.code, "MODEL_CALL_FAILED");
      // Word for word: a timeout is not reported as a failure to connect (openai.ts:168).
      assert.equal(e.message, `step "classify invoice": model call to ${server.url}/v1 timed out`);
      // The details name the step and where the call went, and how long it took (openai.ts:135, 165):
      // at least the timeout, at most what the test saw from outside (Date.now, so 5 ms of slack).
      const { elapsedMs, ...rest } = e.details as { elapsedMs: number };
      assert.deepEqual(rest, { step: "classify invoice", target: `${server.url}/v1` });
      assert.ok(elapsedMs >= 198 && elapsedMs <= outer + 5, `elapsedMs ${elapsedMs}: between 200 ms and ${outer} ms expected`);
      return true;
    });
    assert.equal(server.received.length, 1, "the request reached the server once (no retry)");
    assert.equal(server.replied, 0, "the server replied before the provider gave up: nothing timed out");
  });

  it("reports an unreachable server as MODEL_CALL_FAILED naming the server, without its query, and why it could not connect", async () => {
    const port = await closedPort();
    const dead = new OpenAICompatibleProvider({
      apiKey: key,
      baseUrl: `http://127.0.0.1:${port}/v1?token=abc`,
      maxRetries: 0,
      timeoutMs: 2_000,
    });
    const r = await failure(dead.complete(request()));
    assert.equal(r.code, "MODEL_CALL_FAILED");
    // Not undici's "fetch failed": the reason under it.
    assert.equal(
      r.message,
      `step "classify invoice": model call to http://127.0.0.1:${port}/v1 could not connect: connect ECONNREFUSED 127.0.0.1:${port}`,
    );
    assert.equal(r.details.target, `http://127.0.0.1:${port}/v1`);
  });

  it("names a TLS failure by OpenSSL's reason and code, not its line of internals", async () => {
    // https:// to the loopback server, which speaks plain HTTP: the handshake fails. OpenSSL's
    // reason differs between its versions ("wrong version number", "packet length too long").
    const base = `${server.url.replace("http:", "https:")}/v1`;
    const r = await failure(provider({ baseUrl: base, maxRetries: 0 }).complete(request()));
    const said = r.message.slice(`step "classify invoice": model call to ${base} could not connect: `.length);
    assert.ok(r.message.startsWith(`step "classify invoice": model call to ${base} could not connect: `), r.message);
    assert.match(said, /^[a-z][a-z ]+ \(ERR_SSL_[A-Z_]+\)$/, r.message);
    assert.equal(server.received.length, 0, "no request got through");
  });

  it("honours an abort signal", async () => {
    server.queue({ delayMs: 2_000, body: completion({ model: "gpt-4o-mini" }, answer) });
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 100);
    await assert.rejects(provider({ maxRetries: 0 }).complete(request(), ac.signal), (e: unknown) => {
      // Word for word: an abort is not reported as an HTTP failure (openai.ts:170).
      assert.ok(isCasefileError(e) && e.code === "MODEL_CALL_FAILED", `a typed error: ${String(e)}`);
      assert.equal(e.message, `step "classify invoice": model call to ${server.url}/v1 was aborted`);
      assert.equal(e.details.status, undefined, "no status: nothing was answered");
      return true;
    });
  });

  it("names OpenAI's own API as the target when no base URL is given", async () => {
    // Kills openai.ts:95 StringLiteral. The signal is aborted before the call, so nothing leaves the machine.
    const ac = new AbortController();
    ac.abort();
    await assert.rejects(new OpenAICompatibleProvider({ apiKey: key }).complete(request(), ac.signal), (e: unknown) => {
      assert.ok(isCasefileError(e), `a typed error: ${String(e)}`);
      assert.equal(e.message, 'step "classify invoice": model call to https://api.openai.com/v1 was aborted');
      assert.equal(e.details.target, "https://api.openai.com/v1");
      return true;
    });
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
    // Kills openai.ts:113 ObjectLiteral: the refusal for no model at all names the step in its details.
    await assert.rejects(provider().complete(request({ model: "" })), (e: unknown) => {
      assert.ok(isCasefileError(e) && e.code === "MODEL_CALL_FAILED", `a typed error: ${String(e)}`);
      assert.equal(e.message, 'step "classify invoice": no model named in the request or the provider');
      assert.deepEqual(e.details, { step: "classify invoice" });
      return true;
    });
    assert.equal(server.received.length, 1, "nothing sent without a model");
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

  /** The typed error `p` rejects with. */
  async function failure(p: Promise<unknown>): Promise<{ code: string; message: string; details: Record<string, unknown> }> {
    try {
      await p;
    } catch (e) {
      assert.ok(isCasefileError(e), `a CasefileError: ${String(e)}`);
      return { code: e.code, message: e.message, details: e.details };
    }
    throw new Error("not refused");
  }

  it("an HTTP failure's details hold the step, the target, the time taken, the status and the request id only when sent", async () => {
    // Kills openai.ts:176 ConditionalExpression: no x-request-id, no requestId key.
    server.queue({ status: 400, body: { error: { message: "bad" } }, noRequestId: true });
    const without = await failure(provider().complete(request()));
    assert.equal(without.message, `step "classify invoice": model call to ${server.url}/v1 failed with HTTP 400: bad`);
    assert.deepEqual(Object.keys(without.details).sort(), ["elapsedMs", "status", "step", "target"]);
    assert.deepEqual(
      { ...without.details, elapsedMs: 0 },
      { step: "classify invoice", target: `${server.url}/v1`, elapsedMs: 0, status: 400 },
    );
    server.queue({ status: 400, body: { error: { message: "bad" } } });
    assert.equal((await failure(provider().complete(request()))).details.requestId, "req_loopback_1");
  });

  it("an error message from the server loses the whitespace after its status, and an empty one says so", async () => {
    // Kills openai.ts:177 Regex (\s for \s*) and StringLiteral ("no message").
    server.queue({ status: 400, body: { error: { message: "\n  Invalid value for temperature" } } });
    assert.equal(
      (await failure(provider().complete(request()))).message,
      `step "classify invoice": model call to ${server.url}/v1 failed with HTTP 400: Invalid value for temperature`,
    );
    server.queue({ status: 400, body: { error: { message: "   " } } });
    assert.equal(
      (await failure(provider().complete(request()))).message,
      `step "classify invoice": model call to ${server.url}/v1 failed with HTTP 400: no message`,
    );
  });

  it("drops the user and password of a URL a server's error quotes, keeping the rest of the URL", async () => {
    // Kills the four survivors of openai.ts:193 (the user:password@ pattern and its "$1").
    server.queue({ status: 502, body: { error: { message: "upstream http://svc:s3cret@10.0.0.5/v1 refused, see //ops@wiki/x" } } });
    const r = await failure(provider({ maxRetries: 0 }).complete(request()));
    assert.equal(
      r.message,
      `step "classify invoice": model call to ${server.url}/v1 failed with HTTP 502: upstream http://10.0.0.5/v1 refused, see //wiki/x`,
    );
  });

  it("names any other failure with what went wrong: an answer that says it is JSON and is not", async () => {
    // Kills openai.ts:179 StringLiteral. The parser's own words differ between Node versions.
    server.queue({ raw: "not json" });
    const r = await failure(provider({ maxRetries: 0 }).complete(request()));
    assert.equal(r.code, "MODEL_CALL_FAILED");
    assert.match(r.message, new RegExp(`^step "classify invoice": model call to ${server.url}/v1 failed: .*JSON`));
  });

  it("names a base URL that is not a URL without its query or fragment, even with a line break after it", async () => {
    // Kills openai.ts:221 (displayUrl for what new URL() refuses; "$" did not match before a trailing newline).
    for (const baseUrl of ["127.0.0.1:9/v1?token=abc", "127.0.0.1:9/v1#token=abc", "127.0.0.1:9/v1?token=abc\n"]) {
      const r = await failure(new OpenAICompatibleProvider({ apiKey: key, baseUrl, maxRetries: 0 }).complete(request()));
      assert.equal(r.message, 'step "classify invoice": model call to 127.0.0.1:9/v1 failed: Invalid URL', JSON.stringify(baseUrl));
      assert.equal(r.details.target, "127.0.0.1:9/v1", JSON.stringify(baseUrl));
    }
  });

  it("names the target without the trailing slashes of a base URL or an Azure endpoint", async () => {
    // Kills openai.ts:92 (the Azure target's trailing slashes) and openai.ts:219 StringLiteral.
    const base = await failure(
      new OpenAICompatibleProvider({ apiKey: key, baseUrl: "http://127.0.0.1:9/v1/", maxRetries: 0, timeoutMs: 2_000 }).complete(request()),
    );
    assert.match(base.message, /^step "classify invoice": model call to http:\/\/127\.0\.0\.1:9\/v1 could not connect/);
    const azure = await failure(
      new OpenAICompatibleProvider({
        apiKey: key,
        azure: { endpoint: "http://127.0.0.1:9///", deployment: "invoices-prod", apiVersion: "2024-10-21" },
        maxRetries: 0,
        timeoutMs: 2_000,
      }).complete(request()),
    );
    assert.match(
      azure.message,
      /^step "classify invoice": model call to http:\/\/127\.0\.0\.1:9\/openai\/deployments\/invoices-prod could not connect/,
    );
    assert.equal(azure.details.target, "http://127.0.0.1:9/openai/deployments/invoices-prod");
  });

  it("refuses credentials only in the base URL's own authority, not an @ further along its path", async () => {
    // Kills openai.ts:96 Regex (unanchored): a proxy route carrying another URL is a base URL like any other.
    server.queue({ body: completion({ model: "gpt-4o-mini" }, answer) });
    const r = await provider({ baseUrl: `${server.url}/proxy/https://team@example.com/v1` }).complete(request());
    assert.equal(r.text, answer);
    assert.equal(server.received[0]!.url, "/proxy/https://team@example.com/v1/chat/completions");
  });

  it("squeezes the step into a response_format name of at most 64 characters, and names an empty step 'proposal'", async () => {
    // Kills openai.ts:207 MethodExpression (slice) and StringLiteral ("proposal").
    const long = "review the supplier's bank details against the master record, then decide".repeat(2);
    const names: string[] = [];
    for (const step of [long, ""]) {
      server.queue({ body: completion({ model: "gpt-4o-mini" }, answer) });
      await provider().complete(request({ step }));
      names.push((server.received.at(-1)!.body.response_format as { json_schema: { name: string } }).json_schema.name);
    }
    assert.deepEqual(names, [long.replace(/[^a-zA-Z0-9_-]/g, "_").slice(0, 64), "proposal"]);
    assert.equal(names[0]!.length, 64);
  });

  it("redacts the key from an answer from 8 characters on, and leaves shorter placeholders alone", async () => {
    // Kills openai.ts:152 EqualityOperator (>= 8, not > 8).
    const texts: string[] = [];
    for (const apiKey of ["k8-chars", "k7chars"]) {
      server.queue({ body: completion({ model: "llama3.1" }, `echo ${apiKey}`) });
      texts.push((await provider({ apiKey }).complete(request())).text);
    }
    assert.deepEqual(texts, ["echo [redacted]", "echo k7chars"]);
  });

  it("redacts a placeholder key from an error only where it stands alone, never inside the words around it", async () => {
    // "k" is in "key", "check", "localhost"; "sk" in "task" and "sk-1"; "local" in "localhost":
    // a placeholder removed from inside words garbled the message, the host and the step's name.
    // One that names a field of the details ("status") leaves the field alone.
    for (const [apiKey, host] of [
      ["k", "127.0.0.1"],
      ["sk", "127.0.0.1"],
      ["local", "localhost"],
      ["status", "127.0.0.1"],
    ] as const) {
      const baseUrl = `${server.url.replace("127.0.0.1", host)}/v1`;
      const said = "Ask for a key at https://platform.example/api-keys (task sk-1, localhost)";
      server.queue({
        status: 401,
        body: { error: { message: `Incorrect API key provided: ${apiKey}. ${said}` } },
        headers: { "x-request-id": `req-${apiKey}` },
      });
      const r = await failure(provider({ apiKey, baseUrl, maxRetries: 0 }).complete(request({ step: "check key" })));
      assert.equal(
        r.message,
        `step "check key": model call to ${baseUrl} failed with HTTP 401: Incorrect API key provided: [redacted]. ${said}`,
        apiKey,
      );
      assert.deepEqual(
        { ...r.details, elapsedMs: 0 },
        { step: "check key", target: baseUrl, elapsedMs: 0, status: 401, requestId: `req-${apiKey}` },
        apiKey,
      );
      // Meta the same way: a lone key goes, one inside a name stays.
      server.queue({ body: completion({ model: `llama-${apiKey}` }, "{}", { refusal: `no ${apiKey} here, ok` }) });
      const ok = await provider({ apiKey, baseUrl }).complete(request());
      assert.deepEqual([ok.meta?.model, ok.meta?.refusal], [`llama-${apiKey}`, "no [redacted] here, ok"], apiKey);
    }
  });

  it("never shows a key of 8 characters or more, even inside a URL, glued to other text or in headers a server echoes back", async () => {
    for (const apiKey of ["k8secret", key]) {
      const seen: string[] = [];
      const record = (v: unknown): void => {
        seen.push(typeof v === "string" ? v : JSON.stringify(v), inspect(v, { depth: 20, showHidden: true }));
      };
      const p = provider({ apiKey, maxRetries: 0 });
      // The request's headers echoed back in an error, and in an answer.
      server.queue({ status: 401, body: (got: Received) => ({ error: { message: `you sent ${JSON.stringify(got.headers)}` } }) });
      const echoed = await failure(p.complete(request()));
      record(echoed);
      assert.match(echoed.message, /"authorization":"Bearer \[redacted\]"/, apiKey);
      server.queue({
        body: (got: Received) => completion(got.body, `you sent ${JSON.stringify(got.headers)}`),
        headers: { "x-request-id": apiKey },
      });
      const answer = await p.complete(request());
      record(answer);
      assert.match(answer.text, /"authorization":"Bearer \[redacted\]"/, apiKey);
      assert.equal(answer.meta?.requestId, "[redacted]", apiKey);
      // In a URL's query, URL-encoded in its path, and glued to letters on both sides.
      server.queue({
        status: 400,
        body: {
          error: {
            message: `see https://proxy.test/v1?api_key=${apiKey}&x=1 or https://proxy.test/Bearer%20${apiKey}/v1 (token${apiKey}x)`,
          },
        },
        headers: { "x-request-id": `id-${apiKey}` },
      });
      const quoted = await failure(p.complete(request()));
      record(quoted);
      assert.equal(
        quoted.message,
        `step "classify invoice": model call to ${server.url}/v1 failed with HTTP 400: ` +
          "see https://proxy.test/v1?api_key=[redacted]&x=1 or https://proxy.test/Bearer%20[redacted]/v1 (token[redacted]x)",
        apiKey,
      );
      assert.equal(quoted.details.requestId, "id-[redacted]", apiKey);

      assert.ok(
        server.received.every((r) => r.headers.authorization === `Bearer ${apiKey}`),
        "the server did receive the key",
      );
      for (const text of seen) assert.ok(!text.includes(apiKey), `key ${apiKey} found in: ${text.slice(0, 300)}`);
      server.reset();
    }
  });

  it("keeps only what a sparse completion has in meta: no id, no finish reason, no request id, no usage", async () => {
    // Kills openai.ts:144 and 146 ConditionalExpression (an absent id or finish_reason adds no key).
    const sparse = completion({ model: "llama3.1" }, answer) as { choices: Record<string, unknown>[] } & Record<string, unknown>;
    const { id: _id, usage: _usage, ...rest } = sparse;
    server.queue({ body: { ...rest, choices: [{ ...sparse.choices[0], finish_reason: null }] }, noRequestId: true });
    const r = await provider().complete(request());
    assert.deepEqual(r, { text: answer, meta: { model: "llama3.1" } });
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
