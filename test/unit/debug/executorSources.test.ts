import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { evaluateExpressions } from "../../../src/runner/evaluate";
import { Breakpoints, type Evaluator } from "../../../src/debug/breakpoints";
import { executorAtLine, scanExecutors } from "../../../src/debug/executorSources";

/** Where the Call Stack's frames point and where line breakpoints bind, from the workflow file's text. */
describe("debug: executor definitions in a workflow file", () => {
  const invoice = path.resolve(__dirname, "../../../examples/invoice/workflow.ts");
  const src = readFileSync(invoice, "utf8");
  const lines = src.split("\n");

  it("finds each executor of the invoice example on its `name: kind({` line, with its kind and extent", () => {
    const found = scanExecutors(src);
    assert.deepEqual(
      found.map((f) => [f.name, f.kind]),
      [
        ["load", "loader"],
        ["variance", "code"],
        ["propose", "agent"],
        ["decide", "commit"],
        ["review", "request"],
        ["settle", "code"],
      ],
    );
    for (const f of found) {
      assert.match(lines[f.line - 1]!, new RegExp(`^\\s*${f.name}: ${f.kind}<State>\\(\\{`));
      assert.match(lines[f.endLine - 1]!, /^\s*\}\),?$/, `${f.name} ends on its closing line`);
    }
    const propose = found.find((f) => f.name === "propose")!;
    assert.equal(executorAtLine(found, propose.line + 10)?.name, "propose");
    assert.equal(executorAtLine(found, 20), undefined);
  });

  it("skips strings, comments and regexes; follows shorthand and bound names to their const", () => {
    const text = [
      'import { code, agent, defineWorkflow } from "casefile";',
      "const shout = code({",
      '  run() { return "}"; },',
      "});",
      "export default defineWorkflow({",
      '  name: "x",',
      "  executors: {",
      "    // a: code({ not this })",
      "    shout,",
      "    'quoted-name': agent({ context: () => [{ role: 'user', content: `{${'{'}` }] }),",
      "    re: code({ run: () => /[}{]/.test('x') }),",
      "  },",
      "});",
    ].join("\n");
    const found = scanExecutors(text);
    assert.deepEqual(
      found.map((f) => [f.name, f.kind, f.line, f.endLine]),
      [
        ["shout", "code", 2, 4],
        ["quoted-name", "agent", 10, 10],
        ["re", "code", 11, 11],
      ],
    );
  });

  it("line breakpoints bind to the executor they fall in, on its first line; elsewhere unverified with a reason", () => {
    const found = scanExecutors(src);
    const bps = new Breakpoints(invoice, found);
    const propose = found.find((f) => f.name === "propose")!;
    const [inside, outside, badCondition] = bps.setLineBreakpoints(invoice, [
      { line: propose.line + 5 },
      { line: 3 },
      { line: propose.line, condition: "state.variance.pct >" },
    ]);
    assert.deepEqual([inside!.verified, inside!.line, inside!.executor], [true, propose.line, "propose"]);
    assert.equal(outside!.verified, false);
    assert.match(outside!.message!, /line 3 is not inside an executor's definition/);
    assert.equal(badCondition!.verified, false);
    assert.match(badCondition!.message!, /condition "state.variance.pct >": Unexpected end of input/);
    const [other] = bps.setLineBreakpoints("/elsewhere/file.ts", [{ line: 1 }]);
    assert.match(other!.message!, /not the workflow file/);
  });

  it("a boundary hits a breakpoint by a JavaScript condition and hit count; logpoints print without stopping; a failing condition stops saying why", async () => {
    const found = scanExecutors(src);
    const bps = new Breakpoints(invoice, found);
    const line = (n: string) => found.find((f) => f.name === n)!.line;
    bps.setLineBreakpoints(invoice, [
      { line: line("propose"), condition: "state.variance.pct > 5" },
      { line: line("decide"), hitCondition: "2" },
      { line: line("variance"), logMessage: "pct {state.variance.pct}" },
    ]);
    bps.setFunctionBreakpoints(
      [{ name: "settle" }, { name: "nope" }],
      found.map((f) => f.name),
    );
    // The runner's own evaluator (the debug helper runs the same function), over the values given.
    const ev: Evaluator = (exprs, scope) => Promise.resolve(evaluateExpressions(exprs, scope, 1000));
    const scope = () => ({ state: { variance: { pct: 9 } }, message: null });
    assert.equal((await bps.check({ executors: ["propose"], scope }, ev)).stop.length, 1, "pct 9 > 5 stops");
    const low = await bps.check({ executors: ["propose"], scope: () => ({ state: { variance: { pct: 2 } }, message: null }) }, ev);
    assert.equal(low.stop.length, 0, "pct 2 does not");
    assert.equal((await bps.check({ executors: ["decide"] }, ev)).stop.length, 0, "first hit of a `2` hit count");
    assert.equal((await bps.check({ executors: ["decide"] }, ev)).stop.length, 1, "second");
    const logged = await bps.check({ executors: ["variance"], scope }, ev);
    assert.deepEqual([logged.stop.length, logged.logs], [0, ["pct 9"]], "the logpoint prints and does not stop");
    assert.equal((await bps.check({ executors: ["settle"] }, ev)).stop[0]?.kind, "function", "the function breakpoint stops");
    const failing = await bps.check({ executors: ["propose"], scope: () => ({ state: {}, message: null }) }, ev);
    assert.equal(failing.stop.length, 1, "a condition that throws stops its breakpoint");
    assert.match(
      failing.problems[0]!,
      /breakpoint on propose: condition "state.variance.pct > 5" failed: TypeError: Cannot read properties of undefined/,
    );
    assert.equal(bps.needsScope(["decide"]), false);
    assert.equal(bps.needsScope(["propose"]), true);
  });
});
