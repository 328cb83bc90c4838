import assert from "node:assert/strict";
import type { DebugProtocol } from "@vscode/debugprotocol";
import { dapSuite, LINE, workflow } from "./dapHarness";

/**
 * Breakpoint conditions, logpoints and evaluate are JavaScript over a checkpoint's `state` and
 * `message`, evaluated by the session's runner-side debug helper: at the live boundary, at a
 * checkpoint in history after Step Back, and once the run's runner has exited. An expression that
 * never ends is cut off by the time limit and the session goes on.
 */
describe("casefile dap: JavaScript conditions, logpoints and evaluate, evaluated in the runner", function () {
  this.timeout(120_000);
  const { open, caseFile, launchArgs, launch, stopped, frames } = dapSuite();

  const evaluate = async (s: Awaited<ReturnType<typeof open>>, expression: string, frameId?: number) =>
    (await s.dc.evaluateRequest({ expression, context: "repl", ...(frameId !== undefined ? { frameId } : {}) })).body.result;

  it("a JavaScript condition (a callback, arithmetic over the message) stops where it holds and not where it does not", async () => {
    const s = await open();
    let set: DebugProtocol.SetBreakpointsResponse | undefined;
    await launch(s, launchArgs(caseFile()), async (dc) => {
      set = await dc.setBreakpointsRequest({
        source: { path: workflow },
        breakpoints: [
          { line: LINE.variance, condition: "state.invoice.value.lines.every(l => l.qty > 1e9)" },
          { line: LINE.propose, condition: "state.invoice.value.lines.some(l => l.qty > 0) && message.pct * 1.2 > 10" },
        ],
      });
    });
    assert.deepEqual(
      set!.body.breakpoints.map((b) => b.verified),
      [true, true],
      "JavaScript conditions are verified (they compile)",
    );
    const ev = await stopped(s);
    assert.equal(ev.body.reason, "breakpoint");
    assert.match(ev.body.description ?? "", /^before propose /, "the false condition on variance did not stop; propose's did");
    assert.deepEqual(ev.body.hitBreakpointIds, [set!.body.breakpoints[1]!.id], "the breakpoint that hit is named");
  });

  it("a condition that never ends is cut off by the time limit: the breakpoint stops saying so, and the session goes on", async () => {
    const s = await open();
    await launch(s, launchArgs(caseFile()), (dc) =>
      dc.setBreakpointsRequest({
        source: { path: workflow },
        breakpoints: [{ line: LINE.variance, condition: "(() => { while (true) {} })()" }],
      }),
    );
    const ev = await stopped(s);
    assert.equal(ev.body.reason, "breakpoint");
    assert.match(
      ev.body.description ?? "",
      /before variance .*condition "\(\(\) => \{ while \(true\) \{\} \}\)\(\)" failed: it ran longer than 1000 ms and was stopped/,
      `the stop says the condition was cut off: ${ev.body.description}`,
    );
    assert.ok(
      s.output.some((l) => /breakpoint on variance: condition .* failed: it ran longer than 1000 ms/.test(l)),
      `the Debug Console says so: ${s.output.join("")}`,
    );
    const frameId = (await frames(s, ev.body.threadId!))[0]!.id;
    assert.equal(await evaluate(s, "Object.keys(state).length > 0", frameId), "true", "the evaluator still answers");
    await assert.rejects(
      s.dc.evaluateRequest({ expression: "null.x", frameId, context: "repl" }),
      /EVALUATE_FAILED: TypeError: Cannot read properties of null \(reading 'x'\)/,
      "an expression that throws says why in the Debug Console, never INTERNAL",
    );
  });

  it("logpoints print JavaScript {parts}; evaluate answers at a checkpoint in history after Step Back, and after the run's runner has exited", async () => {
    const s = await open();
    await launch(s, launchArgs(caseFile()), async (dc) => {
      await dc.setBreakpointsRequest({
        source: { path: workflow },
        breakpoints: [
          {
            line: LINE.propose,
            logMessage: 'skus {state.invoice.value.lines.map(l => l.sku).join(",")} at {(message.pct / 100).toFixed(2)}',
          },
        ],
      });
      await dc.setExceptionBreakpointsRequest({ filters: ["waitingForPerson"] });
    });
    // review asks a person: the run waits, its runner exits, and the filter stops at the last checkpoint.
    const ev = await stopped(s);
    assert.equal(ev.body.reason, "exception");
    assert.match(ev.body.description ?? "", /waits for a person/);
    const logged = s.output.find((l) => l.startsWith("skus "));
    assert.match(logged ?? "", /^skus [\w-]+(,[\w-]+)* at 0\.09\n$/, `the logpoint printed its parts: ${s.output.join("")}`);
    assert.equal(await evaluate(s, "state.decision.action"), '"escalate"', "evaluate with no runner left");
    // Back to the boundary before propose: history, no runner holds it.
    const threadId = ev.body.threadId!;
    for (let i = 0; i < 5 && (await frames(s, threadId))[0]!.name !== "propose (agent)"; i++)
      await Promise.all([s.dc.stepBackRequest({ threadId }), stopped(s)]);
    const frameId = (await frames(s, threadId))[0]!.id;
    assert.equal((await frames(s, threadId))[0]!.name, "propose (agent)", "stepped back to the boundary before propose");
    assert.equal(await evaluate(s, "'decision' in state", frameId), "false", "that checkpoint's state: no decision yet");
    assert.equal(await evaluate(s, "message.amount / message.pct", frameId), "10", "propose's pending message there");
    assert.equal(
      await evaluate(s, "state.invoice.value.lines.filter(l => l.qty > 0).length > 0", frameId),
      "true",
      "callbacks in history too",
    );
  });
});
