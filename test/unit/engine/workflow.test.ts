import assert from "node:assert/strict";
import { z } from "zod";
import { WorkflowDefinitionError } from "../../../src/engine/errors";
import { code, commit, edge, fact, loader, agent } from "../../../src/engine/executors";
import { defineWorkflow } from "../../../src/engine/workflow";

const base = {
  name: "wf",
  version: 1,
  state: { a: z.number(), b: z.number(), doc: fact(z.string()) },
  start: "first",
};

function problemsOf(fn: () => unknown): { code: string; message: string; executor?: string; key?: string }[] {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof WorkflowDefinitionError, `expected WorkflowDefinitionError, got ${String(e)}`);
    return e.problems;
  }
  assert.fail("defineWorkflow accepted an invalid workflow");
}

describe("defineWorkflow: build-time validation", () => {
  it("accepts a valid graph and describes it with owners and a stable hash", () => {
    const make = () =>
      defineWorkflow({
        ...base,
        executors: {
          first: loader({ owns: ["doc"], run: () => undefined }),
          second: code({ reads: ["doc"], owns: ["a"], run: () => undefined }),
        },
        edges: [edge("first", "second")],
      });
    const wf = make();
    assert.deepEqual(wf.owners, { doc: "first", a: "second" });
    assert.equal(wf.graphHash, make().graphHash);
    assert.deepEqual(
      wf.graph.keys.find((k) => k.key === "doc"),
      { key: "doc", fact: true, owner: "first" },
    );
  });

  it("refuses two executors owning one key, naming both and the key", () => {
    const [p] = problemsOf(() =>
      defineWorkflow({
        ...base,
        executors: { first: code({ owns: ["a"], run: () => 1 }), second: code({ owns: ["a"], run: () => 1 }) },
        edges: [edge("first", "second")],
      }),
    );
    assert.equal(p!.code, "DUPLICATE_OWNER");
    assert.equal(p!.key, "a");
    assert.match(p!.message, /"a" is owned by both "first" and "second"/);
  });

  it("refuses a non-loader that owns a fact key", () => {
    const [p] = problemsOf(() => defineWorkflow({ ...base, executors: { first: code({ owns: ["doc"], run: () => 1 }) }, edges: [] }));
    assert.equal(p!.code, "FACT_WRITER_NOT_LOADER");
    assert.match(p!.message, /executor "first" \(code\) owns fact key "doc": only loaders may write facts/);
  });

  it("refuses owning or reading a key the state does not declare", () => {
    const ps = problemsOf(() =>
      defineWorkflow({ ...base, executors: { first: code({ owns: ["zz"], reads: ["yy"], run: () => 1 }) }, edges: [] }),
    );
    assert.deepEqual(
      ps.map((p) => [p.code, p.key]),
      [
        ["UNKNOWN_KEY", "zz"],
        ["UNKNOWN_KEY", "yy"],
      ],
    );
  });

  it("refuses an edge to an unknown executor, naming the edge and the executor", () => {
    const [p] = problemsOf(() =>
      defineWorkflow({ ...base, executors: { first: code({ run: () => 1 }) }, edges: [edge("first", "nowhere")] }),
    );
    assert.equal(p!.code, "UNKNOWN_EXECUTOR");
    assert.match(p!.message, /edge #0 \(first -> nowhere\) names unknown executor "nowhere"/);
  });

  it("refuses an executor no path reaches, and an unknown start", () => {
    const [p] = problemsOf(() =>
      defineWorkflow({
        ...base,
        executors: { first: code({ run: () => 1 }), island: code({ run: () => 1 }) },
        edges: [],
      }),
    );
    assert.equal(p!.code, "UNREACHABLE_EXECUTOR");
    assert.equal(p!.executor, "island");
    const [q] = problemsOf(() => defineWorkflow({ ...base, start: "ghost", executors: { first: code({ run: () => 1 }) }, edges: [] }));
    assert.equal(q!.code, "UNKNOWN_EXECUTOR");
    assert.match(q!.message, /start executor "ghost"/);
  });

  it("reports every problem at once", () => {
    const ps = problemsOf(() =>
      defineWorkflow({
        ...base,
        executors: {
          first: code({ owns: ["a", "doc"], run: () => 1 }),
          second: code({ owns: ["a"], run: () => 1 }),
        },
        edges: [edge("first", "third")],
      }),
    );
    assert.deepEqual(ps.map((p) => p.code).sort(), [
      "DUPLICATE_OWNER",
      "FACT_WRITER_NOT_LOADER",
      "UNKNOWN_EXECUTOR",
      "UNREACHABLE_EXECUTOR",
    ]);
  });

  it("refuses an agent whose proposal schema lacks action, reason and facts", () => {
    const [p] = problemsOf(() =>
      defineWorkflow({
        ...base,
        executors: {
          first: agent({ proposal: z.object({ action: z.string() }), model: { model: "gpt-4o" }, context: () => [] }),
          second: commit({ rules: {}, apply: () => undefined }),
        },
        edges: [edge("first", "second")],
      }),
    );
    assert.equal(p!.code, "INVALID_WORKFLOW");
    assert.match(p!.message, /agent "first": proposal schema must be a z.object with "reason", "facts"/);
  });
});
