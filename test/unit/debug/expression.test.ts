import assert from "node:assert/strict";
import { evaluate, ExpressionError, hitConditionMet, interpolate } from "../../../src/debug/expression";

/** The debugger's expressions over paused state: what a condition, a watch or a logpoint says. */
describe("debug: expressions over the paused state", () => {
  const scope = {
    state: { variance: { amount: 90, pct: 9 }, invoice: { value: { id: "INV-1001", lines: [{ sku: "A" }, { sku: "B" }] } } },
    message: { verdict: "escalated" },
  };

  it("reads paths, compares, combines", () => {
    assert.equal(evaluate("state.variance.pct > 5", scope), true);
    assert.equal(evaluate("state.variance.pct > 5 && message.verdict === 'accepted'", scope), false);
    assert.equal(evaluate("state.invoice.value.lines.length", scope), 2);
    assert.equal(evaluate('state.invoice.value.lines[1]["sku"]', scope), "B");
    assert.equal(evaluate("state.missing?.x ?? 'none'", scope), "none");
    assert.equal(evaluate("-state.variance.amount * 2 + 1", scope), -179);
    assert.equal(evaluate("state.variance.pct >= 10 ? 'high' : 'low'", scope), "low");
    assert.deepEqual(evaluate("variance", scope), { amount: 90, pct: 9 }, "a bare state key reads the key");
  });

  it("runs no code: calls, prototypes and globals are out of reach", () => {
    assert.throws(() => evaluate("process.exit(1)", scope), /calls are not supported/);
    assert.equal(evaluate("state.constructor", scope), undefined, "own properties only");
    assert.equal(evaluate("state.__proto__", scope), undefined);
    assert.throws(() => evaluate("globalThis", scope), /"globalThis" is not defined/);
  });

  it("says what is wrong with a bad expression", () => {
    assert.throws(
      () => evaluate("state.variance.pct >", scope),
      (e: Error) => e instanceof ExpressionError && /ends too early/.test(e.message),
    );
    assert.throws(() => evaluate("state.nope.pct", scope), /cannot read "pct" of undefined/);
    assert.throws(() => evaluate("'open", scope), /unterminated string/);
    assert.throws(() => evaluate("state # 1", scope), /unexpected "#" at column 7/);
  });

  it("logpoints interpolate {expressions}; one that fails says why in its place", () => {
    assert.equal(interpolate("variance {state.variance.pct}%", scope), "variance 9%");
    assert.equal(interpolate("{state.variance} {message.verdict}", scope), '{"amount":90,"pct":9} escalated');
    assert.equal(interpolate("x {state.nope.y}", scope), 'x <cannot read "y" of undefined>');
  });

  it("hit conditions", () => {
    assert.equal(hitConditionMet("3", 2), false);
    assert.equal(hitConditionMet("3", 3), true);
    assert.equal(hitConditionMet("3", 4), true, "a bare count stops from the Nth hit on");
    assert.equal(hitConditionMet("== 3", 4), false);
    assert.equal(hitConditionMet("% 2", 4), true);
    assert.equal(hitConditionMet("> 1", 1), false);
    assert.throws(() => hitConditionMet("often", 1), /is not a count/);
  });
});
