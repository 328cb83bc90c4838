import * as assert from "node:assert/strict";
import { isJsonValue, parseHostMessage, parseInspectorMessage } from "../../../src/protocol/webview";
import { OVERSCAN, ROW_HEIGHT, visibleRange } from "../../../src/webview/timelineWindow";

describe("Webview protocol: messages from the Run Inspector", () => {
  it("accepts each well-formed action", () => {
    const good = [
      { type: "ready" },
      { type: "resumeFrom", runId: "r1", checkpointId: "c1" },
      { type: "forkWithEditedState", runId: "r1", checkpointId: "c1" },
      { type: "replayStep", runId: "r1", stepId: "s1", mode: "edited" },
      { type: "exportStepAsEval", runId: "r1", stepId: "s1", format: "promptfoo" },
      { type: "selectRun", runId: "r2" },
    ];
    for (const m of good) assert.deepEqual(parseInspectorMessage(m), { ok: true, message: m });
  });

  it("refuses malformed and hostile messages, naming what is wrong", () => {
    const bad: [unknown, RegExp][] = [
      ["ready", /expected object/i],
      [null, /expected object/i],
      [{ type: "runShell", command: "rm -rf /" }, /type/],
      [{ type: "resumeFrom", runId: "r1" }, /checkpointId/],
      [{ type: "replayStep", runId: "r1", stepId: "s1", mode: "shell" }, /mode/],
      [{ type: "exportStepAsEval", runId: "r1", stepId: "s1", format: "../../etc/passwd" }, /format/],
      [{ type: "resumeFrom", runId: "", checkpointId: "c" }, /runId/],
      [{ type: "resumeFrom", runId: "x".repeat(201), checkpointId: "c" }, /runId/],
    ];
    for (const [m, why] of bad) {
      const r = parseInspectorMessage(m);
      assert.equal(r.ok, false, JSON.stringify(m));
      assert.match((r as { error: string }).error, why);
    }
  });

  it("strips fields the schema does not know, so nothing extra reaches a handler", () => {
    const r = parseInspectorMessage({ type: "selectRun", runId: "r", __proto__: { polluted: true }, extra: "<script>" });
    assert.deepEqual(r, { ok: true, message: { type: "selectRun", runId: "r" } });
  });
});

describe("Webview protocol: messages from the host", () => {
  it("refuses a load whose view model is not the shape the webview renders", () => {
    assert.equal(parseHostMessage({ type: "load", model: { v: 1 } }).ok, false);
    assert.equal(parseHostMessage({ type: "notice", level: "debug", message: "x" }).ok, false);
    assert.equal(parseHostMessage({ type: "notice", level: "info", message: "x" }).ok, true);
  });

  it("checks JSON values by walking them: no functions, classes, non-finite numbers or deep nesting", () => {
    assert.equal(isJsonValue({ a: [1, "x", null, true, { b: 2.5 }] }), true);
    assert.equal(isJsonValue(Number.NaN), false);
    assert.equal(isJsonValue({ f: () => 1 }), false);
    assert.equal(isJsonValue(new Date()), false);
    assert.equal(isJsonValue(undefined), false);
    let deep: unknown = 1;
    for (let i = 0; i < 100; i++) deep = [deep];
    assert.equal(isJsonValue(deep), false);
  });
});

describe("Timeline window", () => {
  it("renders the rows in view plus the overscan, clamped to the run", () => {
    assert.deepEqual(visibleRange(0, 600, 10_000), { first: 0, last: 600 / ROW_HEIGHT + OVERSCAN });
    assert.deepEqual(visibleRange(5000 * ROW_HEIGHT, 600, 10_000), { first: 5000 - OVERSCAN, last: 5000 + 600 / ROW_HEIGHT + OVERSCAN });
    assert.deepEqual(visibleRange(9_999 * ROW_HEIGHT, 600, 10_000), { first: 9_999 - OVERSCAN, last: 10_000 });
    assert.deepEqual(visibleRange(0, 600, 0), { first: 0, last: 0 });
  });
});
