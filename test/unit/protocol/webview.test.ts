import * as assert from "node:assert/strict";
import {
  encodeTimeline,
  isJsonValue,
  TimelineRows,
  TimelineSchema,
  parseHostMessage,
  parseInspectorMessage,
} from "../../../src/protocol/webview";
import type { SuperstepView } from "../../../src/protocol/webview";

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

describe("Webview protocol: the timeline's columns", () => {
  const rows: SuperstepView[] = [
    {
      superstep: 0,
      checkpointId: "cp0",
      at: "2026-11-30T10:00:00.000Z",
      steps: [
        {
          id: "s0-a",
          executor: "triage",
          kind: "agent",
          status: "failed",
          durationMs: 12,
          writes: ["proposal", "note"],
          error: { code: "E_MODEL", message: "timeout" },
          verdict: null,
        },
        { id: "s0-b", executor: "decide", kind: "commit", status: "ok", durationMs: 3, writes: [], error: null, verdict: "escalated" },
      ],
    },
    { superstep: 1, checkpointId: null, at: null, steps: [] },
    {
      superstep: 2,
      checkpointId: "cp2",
      at: "t",
      steps: [
        { id: "s2", executor: "triage", kind: "request", status: "waiting", durationMs: 0, writes: ["note"], error: null, verdict: null },
      ],
    },
  ];

  it("round-trips rows through the wire's columns", () => {
    const wire = encodeTimeline(rows);
    assert.equal(typeof wire.superstep, "string", "numbers travel as one string per column");
    assert.deepEqual(wire.checkpointId, { text: "cp0cp2", ends: "3,3,6", nulls: "1" }, "strings end to end, with their ends");
    assert.deepEqual(new TimelineRows(TimelineSchema.parse(JSON.parse(JSON.stringify(wire)))).all(), rows);
    assert.deepEqual(new TimelineRows(TimelineSchema.parse(encodeTimeline([]))).all(), []);
  });

  it("refuses columns that are malformed or disagree with each other", () => {
    const wire = encodeTimeline(rows);
    const bad: unknown[] = [
      { ...wire, superstep: "0,,2" },
      { ...wire, superstep: "0,-1,2" },
      { ...wire, superstep: "0,1,1e9" },
      { ...wire, superstep: "0,1,2,3" },
      { ...wire, stepCount: "2,0,2" },
      { ...wire, at: ["a", "b"] },
      { ...wire, steps: { ...wire.steps, kind: "amx" } },
      { ...wire, steps: { ...wire.steps, verdict: "-]-" } },
      { ...wire, steps: { ...wire.steps, executor: "0,1,99" } },
      { ...wire, steps: { ...wire.steps, writes: "1,2" } },
      { ...wire, steps: { ...wire.steps, errors: [{ step: 7, code: "E", message: "m" }] } },
      { ...wire, steps: { ...wire.steps, id: ["a", "b", "c"] } },
      { ...wire, steps: { ...wire.steps, id: { ...wire.steps.id, ends: "4,2,6" } } },
      { ...wire, steps: { ...wire.steps, id: { ...wire.steps.id, text: `${wire.steps.id.text}x` } } },
      { ...wire, steps: { ...wire.steps, id: { ...wire.steps.id, nulls: "1" } } },
      { ...wire, checkpointId: { ...wire.checkpointId, nulls: "1,3" } },
    ];
    for (const b of bad) assert.equal(TimelineSchema.safeParse(b).success, false, JSON.stringify(b));
  });
});
