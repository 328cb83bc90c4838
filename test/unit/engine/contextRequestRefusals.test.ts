import assert from "node:assert/strict";
import { z } from "zod";
import { buildModelRequest, type BuildModelRequestInput } from "../../../src/engine/contextRequest";
import { isCasefileError } from "../../../src/engine/errors";
import type { ChatMessage } from "../../../src/engine/records";

/**
 * What buildModelRequest refuses in a context or its params, worded as the workflow's author
 * reads it (INVALID_WORKFLOW naming the step, the message or the JSON path) with the details a
 * caller gets, and what it copies into the request: each test names the slip in
 * contextRequest.ts it catches.
 */

const proposal = z.object({ action: z.enum(["approve", "hold"]) });

function input(overrides: Partial<BuildModelRequestInput> = {}): BuildModelRequestInput {
  return {
    step: "classify",
    messages: [{ role: "user", content: "Facts: invoice.total = 1200" }],
    model: "gpt-4o-mini",
    params: {},
    responseSchema: proposal,
    callIndex: 2,
    ...overrides,
  };
}

/** Asserts buildModelRequest refuses `overrides` with exactly this message and these details. */
function refuses(overrides: Partial<BuildModelRequestInput>, message: string, details: Record<string, unknown>): void {
  assert.throws(
    () => buildModelRequest(input(overrides)),
    (e: unknown) => {
      assert.ok(isCasefileError(e), `a CasefileError: ${String(e)}`);
      assert.equal(e.code, "INVALID_WORKFLOW");
      assert.equal(e.message, message);
      assert.deepEqual(e.details, details);
      return true;
    },
  );
}

describe("buildModelRequest: refusals, word for word", () => {
  // kills contextRequest.ts:37 ObjectLiteral {}
  it("a model that is no name", () => {
    refuses({ model: "" }, 'step "classify": no model given for the request', { step: "classify" });
    refuses({ model: 7 as unknown as string }, 'step "classify": no model given for the request', { step: "classify" });
  });

  // kills contextRequest.ts:84 ObjectLiteral {}
  it("a proposal schema JSON Schema cannot express names the step, with what zod said", () => {
    let zod = "";
    try {
      z.toJSONSchema(z.object({ at: z.date() }));
    } catch (e) {
      zod = (e as Error).message;
    }
    refuses(
      { responseSchema: z.object({ at: z.date() }) },
      `step "classify": the response schema cannot be expressed as JSON Schema: ${zod}`,
      { step: "classify" },
    );
  });

  it("a context that returned no array says what it returned", () => {
    refuses(
      { messages: "hi" as unknown as ChatMessage[] },
      'step "classify": context returned "hi", not an array of { role, content } messages',
      {
        step: "classify",
      },
    );
    refuses(
      { messages: undefined as unknown as ChatMessage[] },
      'step "classify": context returned undefined, not an array of { role, content } messages',
      {
        step: "classify",
      },
    );
  });

  // kills contextRequest.ts:90 ConditionalExpression false and LogicalOperator &&, :93 OptionalChaining (m).role, :94 ObjectLiteral {},
  // :97 ConditionalExpression false and BlockStatement {}, :98 StringLiteral `` and ObjectLiteral {}
  it("a message that is no { role, content }: named by its index", () => {
    const bad = (m: unknown) => [{ role: "system", content: "ok" }, m] as ChatMessage[];
    refuses({ messages: bad(null) }, 'step "classify": context message 1 has role undefined; expected system, user or assistant', {
      step: "classify",
      index: 1,
    });
    refuses({ messages: bad("user: hi") }, 'step "classify": context message 1 has role undefined; expected system, user or assistant', {
      step: "classify",
      index: 1,
    });
    refuses(
      { messages: bad({ role: "tool", content: "x" }) },
      'step "classify": context message 1 has role "tool"; expected system, user or assistant',
      {
        step: "classify",
        index: 1,
      },
    );
    refuses({ messages: bad({ role: "user", content: 42 }) }, 'step "classify": context message 1 content is not a string', {
      step: "classify",
      index: 1,
    });
  });

  for (const [what, params, at, is] of [
    ["Infinity", { maxTokens: Number.POSITIVE_INFINITY }, "params.maxTokens", "Infinity"],
    ["NaN deep in a list", { stop: [1, { x: Number.NaN }] }, "params.stop[1].x", "NaN"],
    ["a function", { seed: () => 7 }, "params.seed", "function"],
    ["undefined in a list", { stop: ["a", undefined] }, "params.stop[1]", "undefined"],
    ["a Date", { when: new Date(0) }, "params.when", "a Date instance"],
    ["a Map", { m: new Map() }, "params.m", "a Map instance"],
    ["a bigint", { n: 1n }, "params.n", "bigint"],
    [
      "an object whose prototype has no constructor",
      { o: Object.create(Object.create(null) as object) as object },
      "params.o",
      "a class instance",
    ],
  ] as const) {
    // kills contextRequest.ts:113 ObjectLiteral {}, :121 StringLiteral `` (the list cases), :124 StringLiteral "" and
    // OptionalChaining constructor.name (the prototype with no constructor)
    it(`params holding ${what} are refused at ${at}`, () => {
      refuses({ params: params as never }, `step "classify": ${at} is ${is}, which is not JSON`, { step: "classify", path: at });
    });
  }
});

describe("buildModelRequest: what the request holds", () => {
  // kills contextRequest.ts:127 ConditionalExpression x === undefined -> false
  it("only each message's role and content, and params without their undefined members", () => {
    const r = buildModelRequest(
      input({
        messages: [{ role: "assistant", content: "earlier answer", name: "bot" } as ChatMessage, { role: "system", content: "s" }],
        params: { temperature: 0, seed: undefined, nested: { keep: true, drop: undefined }, list: [1, null, "x"] } as never,
      }),
    );
    assert.deepEqual(r.messages, [
      { role: "assistant", content: "earlier answer" },
      { role: "system", content: "s" },
    ]);
    assert.deepEqual(r.params, { temperature: 0, nested: { keep: true }, list: [1, null, "x"] });
    assert.equal(r.callIndex, 2);
  });

  // kills contextRequest.ts:124 ConditionalExpression proto !== null -> true
  it("params of a null prototype are plain JSON; no params at all are {}", () => {
    const bare = Object.assign(Object.create(null) as object, { top_p: 1 });
    assert.deepEqual(buildModelRequest(input({ params: bare as never })).params, { top_p: 1 });
    assert.deepEqual(buildModelRequest(input({ params: undefined })).params, {});
  });
});
