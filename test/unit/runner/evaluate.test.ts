import assert from "node:assert/strict";
import { evaluateExpressions, syntaxProblem } from "../../../src/runner/evaluate";

/** The debugger's JavaScript expressions, as the runner's debug helper evaluates them over a checkpoint's values. */
describe("runner: evaluating debugger expressions over a checkpoint's values", () => {
  const scope = {
    state: {
      variance: { amount: 90, pct: 9 },
      lines: [
        { sku: "A", qty: 4 },
        { sku: "B", qty: 12 },
      ],
    },
    message: { amount: 90 },
    messages: { propose: [{ amount: 90 }] },
  };
  const one = (expr: string) => evaluateExpressions([expr], scope, 1000)[0]!;

  it("is JavaScript: callbacks, arithmetic, methods; a state key reads by its own name", () => {
    assert.deepEqual(
      one("state.lines.some(l => l.qty > 10)"),
      { ok: true, type: "boolean", truthy: true, value: true },
      "some() with an arrow",
    );
    assert.equal((one("message.amount * 1.2 > 100") as { value: unknown }).value, true, "arithmetic over the message");
    assert.deepEqual((one("state.lines.map(l => l.sku)") as { value: unknown }).value, ["A", "B"], "an array back as data");
    assert.deepEqual((one("variance") as { value: unknown }).value, { amount: 90, pct: 9 }, "a bare state key");
    assert.deepEqual(one("undefined"), { ok: true, type: "undefined", truthy: false, display: "undefined" }, "undefined is said");
    assert.equal((one("() => 1") as { display: string }).display, "function (anonymous)", "a function is named, not sent");
  });

  it("works on copies: what an expression changes is gone by the next request, and the caller's values are untouched", () => {
    evaluateExpressions(["state.variance.pct = 99", "Array.prototype.polluted = 1"], scope, 1000);
    assert.equal(scope.state.variance.pct, 9, "the values handed in are not the ones changed");
    assert.equal((one("state.variance.pct") as { value: unknown }).value, 9, "a fresh copy each request");
    assert.equal((one("[].polluted") as { type: string }).type, "undefined", "a fresh context each request");
  });

  it("a throw, a syntax error and a loop that never ends are results that say why, never exceptions", () => {
    const started = process.hrtime.bigint();
    const [thrown, syntax, loop, after] = evaluateExpressions(
      ["state.nope.pct", "state.variance.pct >", "(() => { while (true) {} })()", "1 + 1"],
      scope,
      200,
    );
    assert.deepEqual(
      thrown,
      { ok: false, kind: "thrown", error: "TypeError: Cannot read properties of undefined (reading 'pct')" },
      "a throw",
    );
    assert.equal(syntax!.ok === false && syntax!.kind, "syntax", "a syntax error");
    assert.deepEqual(loop, { ok: false, kind: "timeout", error: "it ran longer than 200 ms and was stopped" }, "the loop is cut off");
    assert.equal((after as { value: unknown }).value, 2, "the next expression still runs");
    assert.ok(Number(process.hrtime.bigint() - started) / 1e6 < 5000, "cut off, not left to run");
    assert.match(syntaxProblem("state.x >")!, /Unexpected/, "syntax is checked without running");
    assert.equal(syntaxProblem("state.lines.some(l => l.qty > 10)"), undefined, "a good expression compiles");
  });
});
