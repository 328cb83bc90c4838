import assert from "node:assert/strict";
import { z } from "zod";
import { errorMessage, zodIssue } from "../../../src/engine/errors";

/**
 * The one formatting of a schema's complaint that every "is invalid at ..." message uses: where
 * (a dotted path, under a state key when there is one, "(root)" for the whole value) and what.
 */
describe("zodIssue", () => {
  const schema = z.object({ order: z.object({ lines: z.array(z.object({ qty: z.number() })) }) });
  const nested = schema.safeParse({ order: { lines: [{ qty: 1 }, { qty: "two" }] } });
  const whole = schema.safeParse(7);
  if (nested.success || whole.success) throw new Error("the fixtures must fail to parse");

  it("names the dotted path to the first problem, and (root) when the whole value is wrong", () => {
    assert.deepEqual(zodIssue(nested.error), {
      at: "order.lines.1.qty",
      path: ["order", "lines", "1", "qty"],
      message: nested.error.issues[0]!.message,
    });
    assert.equal(zodIssue(whole.error).at, "(root)");
    assert.deepEqual(zodIssue(whole.error).path, []);
  });

  it("puts the path under a state key, and names the key alone when its whole value is wrong", () => {
    assert.equal(zodIssue(nested.error, "variance").at, "variance.order.lines.1.qty");
    assert.equal(zodIssue(whole.error, "variance").at, "variance");
    assert.deepEqual(zodIssue(nested.error, "variance").path, ["order", "lines", "1", "qty"]);
  });
});

describe("errorMessage", () => {
  it("is an Error's message, else the thrown value as text", () => {
    assert.equal(errorMessage(new RangeError("too far")), "too far");
    assert.equal(errorMessage("plain text"), "plain text");
    assert.equal(errorMessage(undefined), "undefined");
  });
});
