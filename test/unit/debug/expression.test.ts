import assert from "node:assert/strict";
import { hitConditionMet, templateParts } from "../../../src/debug/expression";

/** What the adapter reads of breakpoints itself: logpoint templates and hit counts (the expressions are the runner's, evaluate.test.ts). */
describe("debug: logpoint templates and hit conditions", () => {
  it("a logpoint's message splits into text and {expression} parts; braces inside an expression nest", () => {
    assert.deepEqual(
      templateParts("variance {state.variance.pct}%"),
      ["variance ", { expr: "state.variance.pct" }, "%"],
      "text, part, text",
    );
    assert.deepEqual(
      templateParts("skus {state.lines.map((l) => ({ s: l.sku }))} end"),
      ["skus ", { expr: "state.lines.map((l) => ({ s: l.sku }))" }, " end"],
      "an object literal inside the part",
    );
    assert.deepEqual(templateParts("open { brace and {} empty"), ["open { brace and {} empty"], "an unclosed or empty brace is text");
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
