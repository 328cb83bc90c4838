import assert from "node:assert/strict";
import { z } from "zod";
import { WorkflowDefinitionError } from "../../../src/engine/errors";
import { agent, ApprovalAnswer, code, edge, extract, fact, loader, type ExecutorSpec } from "../../../src/engine/executors";
import { defineWorkflow, parseSafely, proposalActions, type WorkflowSpec } from "../../../src/engine/workflow";

/**
 * What defineWorkflow tells an author and the graph view (mutation testing of workflow.ts,
 * issue 18): the graph description the view and `inspect` draw, the hash that says a graph
 * changed, and every problem of a broken workflow, each with its code, executor, key and words.
 */

function problemsOf(spec: WorkflowSpec): { code: string; message: string; executor?: string; key?: string }[] {
  try {
    defineWorkflow(spec);
  } catch (e) {
    assert.ok(e instanceof WorkflowDefinitionError, `a WorkflowDefinitionError, not ${String(e)}`);
    return e.problems;
  }
  assert.fail("defineWorkflow accepted a broken workflow");
}

const proposal = z.object({ action: z.enum(["pay", "hold"]), reason: z.string(), facts: z.array(z.string()) });
const invoiceSpec = (): WorkflowSpec => ({
  name: "invoice",
  version: 1,
  state: {
    invoice: fact(z.object({ total: z.number() })),
    terms: extract(z.string(), { from: "invoice", run: () => "net 30" }),
    decision: z.string(),
  },
  start: "load",
  executors: {
    load: loader({ owns: ["invoice"], description: "reads the invoice", run: () => "loaded" }),
    decide: agent({ reads: ["invoice", "terms"], owns: ["decision"], proposal, model: { model: "m" }, context: () => [] }),
    pay: code({ reads: ["decision"], run: () => undefined }),
  },
  edges: [edge("load", "decide"), edge("decide", "pay", { when: () => true, label: "approved" })],
});

describe("workflow graph: what the graph view draws", () => {
  it("describes executors with their kind, reads, owns and description, edges with their condition and label, keys with owner and source", () => {
    const wf = defineWorkflow(invoiceSpec());
    assert.deepEqual(
      wf.graph,
      {
        start: "load",
        executors: [
          { id: "load", kind: "loader", reads: [], owns: ["invoice"], description: "reads the invoice" },
          { id: "decide", kind: "agent", reads: ["invoice", "terms"], owns: ["decision"], description: undefined },
          { id: "pay", kind: "code", reads: ["decision"], owns: [], description: undefined },
        ],
        edges: [
          { id: "load->decide", from: ["load"], to: ["decide"], conditional: false, label: undefined },
          { id: "decide->pay", from: ["decide"], to: ["pay"], conditional: true, label: "approved" },
        ],
        keys: [
          { key: "invoice", fact: true, owner: "load" },
          { key: "terms", fact: false, owner: undefined, extractOf: "invoice" },
          { key: "decision", fact: false, owner: "decide" },
        ],
      },
      "the graph view's description of the workflow",
    );
    assert.deepEqual(wf.owners, { invoice: "load", decision: "decide" }, "each key's one owner");
    assert.deepEqual([...wf.factKeys], ["invoice"], "only the fact key is a fact");
    assert.deepEqual(Object.keys(wf.extracts), ["terms"], "only the extract key is an extract");
    assert.match(wf.graphHash, /^sha256:[0-9a-f]{16}$/, "the graph hash is a short sha256");
  });

  it("names a fan-in edge by all its sources and a fan-out by all its targets", () => {
    const wf = defineWorkflow({
      name: "fan",
      version: 1,
      state: {},
      start: "a",
      executors: { a: code({ run: () => 1 }), b: code({ run: () => 1 }), c: code({ run: () => 1 }), d: code({ run: () => 1 }) },
      edges: [edge("a", ["b", "c"]), edge(["b", "c"], "d")],
    });
    assert.deepEqual(
      wf.edges.map((e) => [e.id, e.from, e.to]),
      [
        ["a->b+c", ["a"], ["b", "c"]],
        ["b+c->d", ["b", "c"], ["d"]],
      ],
      "edge ids are stable names of their ends, used to key fan-in buffers",
    );
  });

  it("changes the graph hash when a label, a condition, a key or a description changes, and not for a new version alone", () => {
    const hash = (over: (s: WorkflowSpec) => void) => {
      const s = invoiceSpec();
      over(s);
      return defineWorkflow(s).graphHash;
    };
    const same = hash(() => undefined);
    assert.equal(
      hash((s) => (s.version = 2)),
      same,
      "a new version alone keeps the graph hash",
    );
    for (const [what, change] of [
      ["a label", (s: WorkflowSpec) => (s.edges = [s.edges[0]!, { ...s.edges[1]!, label: "ok" }])],
      ["a condition", (s: WorkflowSpec) => (s.edges = [s.edges[0]!, { from: "decide", to: "pay" }])],
      ["a key", (s: WorkflowSpec) => (s.state = { ...s.state, extra: z.number() })],
      ["a description", (s: WorkflowSpec) => (s.executors.pay = code({ reads: ["decision"], description: "pays", run: () => undefined }))],
    ] as const)
      assert.notEqual(hash(change), same, `changing ${what} changes the graph hash`);
  });
});

describe("workflow graph: every problem of a broken workflow, at once", () => {
  it("names a workflow without a name, and one whose version is not a positive integer", () => {
    const ps = problemsOf({ ...invoiceSpec(), name: "", version: 0 });
    assert.deepEqual(
      ps.map((p) => [p.code, p.message]),
      [
        ["INVALID_WORKFLOW", "workflow has no name"],
        ["INVALID_WORKFLOW", 'workflow "": version must be a positive integer'],
      ],
    );
    assert.deepEqual(
      problemsOf({ ...invoiceSpec(), version: 1.5 }).map((p) => p.message),
      ['workflow "invoice": version must be a positive integer'],
      "a fractional version is refused too",
    );
    assert.equal(defineWorkflow({ ...invoiceSpec(), version: 1 }).version, 1, "version 1 is fine");
  });

  it("names each of several problems with its executor and key", () => {
    const spec = invoiceSpec();
    spec.executors = {
      ...spec.executors,
      load: loader({ owns: ["invoice", "terms", "ghost"], reads: ["nothing"], run: () => 1 }),
      pay: code({ owns: ["invoice", "decision"], run: () => undefined }),
    };
    assert.deepEqual(
      problemsOf(spec).map((p) => [p.code, p.executor, p.key, p.message]),
      [
        [
          "EXTRACT_OWNED",
          "load",
          "terms",
          'executor "load" owns extract key "terms": the engine makes extracts from their fact ("invoice"), no executor writes them',
        ],
        ["UNKNOWN_KEY", "load", "ghost", 'executor "load" owns unknown state key "ghost"'],
        ["UNKNOWN_KEY", "load", "nothing", 'executor "load" reads unknown state key "nothing"'],
        [
          "DUPLICATE_OWNER",
          "pay",
          "invoice",
          'state key "invoice" is owned by both "load" and "pay": each key has exactly one owning executor',
        ],
        ["FACT_WRITER_NOT_LOADER", "pay", "invoice", 'executor "pay" (code) owns fact key "invoice": only loaders may write facts'],
        [
          "DUPLICATE_OWNER",
          "pay",
          "decision",
          'state key "decision" is owned by both "decide" and "pay": each key has exactly one owning executor',
        ],
      ],
      "every problem, in the order the workflow declares them",
    );
  });

  it("names an agent whose proposal schema lacks a field, or is no object at all", () => {
    const withProposal = (p: unknown): WorkflowSpec => {
      const spec = invoiceSpec();
      spec.executors.decide = { ...spec.executors.decide!, proposal: p } as ExecutorSpec;
      return spec;
    };
    assert.deepEqual(
      problemsOf(withProposal(z.object({ action: z.string() }))).map((p) => [p.code, p.executor, p.message]),
      [["INVALID_WORKFLOW", "decide", 'agent "decide": proposal schema must be a z.object with "reason", "facts"']],
    );
    assert.deepEqual(
      problemsOf(withProposal(z.string())).map((p) => p.message),
      ['agent "decide": proposal schema must be a z.object with "action", "reason", "facts"'],
      "a schema with no shape lacks every field",
    );
  });

  it("names every executor no edge path reaches, following edges through executors reached later", () => {
    const ps = problemsOf({
      name: "chain",
      version: 1,
      state: {},
      start: "a",
      executors: {
        a: code({ run: () => 1 }),
        b: code({ run: () => 1 }),
        c: code({ run: () => 1 }),
        lone: code({ run: () => 1 }),
        d: code({ run: () => 1 }),
      },
      // declared out of order: c is reached only after b is, on a later pass over the edges
      edges: [edge("b", "c"), edge("a", "b"), edge("lone", "d")],
    });
    assert.deepEqual(
      ps.map((p) => [p.code, p.executor, p.message]),
      [
        ["UNREACHABLE_EXECUTOR", "lone", 'executor "lone" is unreachable: no edge path leads to it from "a"'],
        ["UNREACHABLE_EXECUTOR", "d", 'executor "d" is unreachable: no edge path leads to it from "a"'],
      ],
    );
  });

  it("names only the fan-in source no edge path reaches, not the fan-in's target, which a path reaches through its other source", () => {
    // kills workflow.ts:224 MethodExpression (`e.from.some` as `every`): the target was named too, though connecting
    // the source is the one fix the author needs
    const ps = problemsOf({
      name: "join",
      version: 1,
      state: {},
      start: "a",
      executors: {
        a: code({ run: () => 1 }),
        b: code({ run: () => 1 }),
        lone: code({ run: () => 1 }),
        both: code({ run: () => undefined }),
      },
      edges: [edge("a", "b"), edge(["b", "lone"], "both")],
    });
    assert.deepEqual(
      ps.map((p) => [p.code, p.executor, p.message]),
      [["UNREACHABLE_EXECUTOR", "lone", 'executor "lone" is unreachable: no edge path leads to it from "a"']],
    );
  });

  it("names a fan-in that waits on its own target's output: its target never runs", () => {
    // The engine fires a fan-in only once every source has sent; this was accepted, and the run
    // completed without c, a's payload left in the fan-in's buffer.
    const ps = problemsOf({
      name: "deadlock",
      version: 1,
      state: {},
      start: "s",
      executors: {
        s: code({ run: () => 1 }),
        a: code({ run: () => 1 }),
        b: code({ run: () => 1 }),
        c: code({ run: () => 1 }),
      },
      edges: [edge("s", "a"), edge(["a", "b"], "c"), edge("c", "b")],
    });
    assert.deepEqual(
      ps.map((p) => [p.code, p.executor, p.message]),
      [
        [
          "UNREACHABLE_EXECUTOR",
          "c",
          "fan-in [a, b] → c can never fire: b is reached only through c, which runs only once every source has sent",
        ],
      ],
      "one problem, for the fan-in: b and c are not named again",
    );
  });

  it("names each of two fan-ins that wait on each other, and accepts a fan-in whose target loops back to a source reached before it", () => {
    const ps = problemsOf({
      name: "mutual",
      version: 1,
      state: {},
      start: "s",
      executors: {
        s: code({ run: () => 1 }),
        a: code({ run: () => 1 }),
        x: code({ run: () => 1 }),
        y: code({ run: () => 1 }),
        c1: code({ run: () => 1 }),
        c2: code({ run: () => 1 }),
      },
      edges: [edge("s", "a"), edge(["a", "x"], "c1"), edge("c1", "y"), edge(["a", "y"], ["c2", "x"])],
    });
    assert.deepEqual(
      ps.map((p) => [p.executor, p.message]),
      [
        ["c1", "fan-in [a, x] → c1 can never fire: x is reached only through c1, which runs only once every source has sent"],
        ["c2", "fan-in [a, y] → [c2, x] can never fire: y is reached only through c2 or x, which run only once every source has sent"],
      ],
      "x waits on y, which waits on x: each fan-in is named",
    );
    const loop = defineWorkflow({
      name: "loop",
      version: 1,
      state: {},
      start: "s",
      executors: { s: code({ run: () => 1 }), a: code({ run: () => 1 }), b: code({ run: () => 1 }), c: code({ run: () => 1 }) },
      edges: [edge("s", ["a", "b"]), edge(["a", "b"], "c"), edge("c", "a")],
    });
    assert.equal(loop.edges.length, 3, "c sends back to a, which s reached before the fan-in fired");
  });

  it("names an edge to an unknown executor by its index and ends, and a start that is not defined", () => {
    const spec = invoiceSpec();
    // The fan-out edge kills workflow.ts:190 StringLiteral `to.join("")`: its targets ran together as "payphantom".
    const ps = problemsOf({
      ...spec,
      start: "begin",
      edges: [...spec.edges, edge(["load", "ghost"], "pay"), edge("decide", ["pay", "phantom"])],
    });
    assert.deepEqual(
      ps.map((p) => [p.code, p.executor, p.message]),
      [
        ["UNKNOWN_EXECUTOR", "ghost", 'edge #2 (load+ghost -> pay) names unknown executor "ghost"'],
        ["UNKNOWN_EXECUTOR", "phantom", 'edge #3 (decide -> pay+phantom) names unknown executor "phantom"'],
        ["UNKNOWN_EXECUTOR", "begin", 'start executor "begin" is not defined'],
      ],
      "each unknown end, its edge by index with every source and target, then the start",
    );
  });
});

describe("workflow graph: parsing with an author's schema", () => {
  it("turns a schema that throws into a failed parse saying so, at the root of the value", () => {
    const throwing = z.string().refine(() => {
      throw new Error("refine broke");
    });
    assert.deepEqual(parseSafely(throwing, "x"), {
      success: false,
      error: { issues: [{ path: [], message: "its schema threw: refine broke" }] },
    });
    const notAnError = z.string().refine(() => {
      throw "a string";
    });
    assert.deepEqual(parseSafely(notAnError, "x"), {
      success: false,
      error: { issues: [{ path: [], message: "its schema threw: a string" }] },
    });
    assert.deepEqual(parseSafely(z.number(), 3), { success: true, data: 3 }, "a value that parses comes back");
  });

  it("lists the fixed actions of a proposal whose action is an enum, and none otherwise", () => {
    assert.deepEqual(proposalActions(proposal), ["pay", "hold"]);
    assert.equal(proposalActions(z.object({ action: z.string() })), undefined, "a free-text action has no fixed set");
    assert.equal(proposalActions(z.object({ action: z.enum(["a"]).or(z.literal(1)) })), undefined, "a union is not a fixed set of strings");
    assert.equal(proposalActions(z.string()), undefined, "a schema without a shape has no action");
    // kills workflow.ts:302 MethodExpression (`options.every` as `some`): an enum of an object with a number among its values
    assert.equal(
      proposalActions(z.object({ action: z.enum({ pay: "pay", hold: 1 }) })),
      undefined,
      "an enum with a number in it is no set of actions",
    );
  });
});

describe("workflow graph: the default answer to a request", () => {
  it("takes approve, reject or choose, with an optional choice and comment, and refuses anything else", () => {
    for (const decision of ["approve", "reject", "choose"])
      assert.ok(ApprovalAnswer.safeParse({ decision }).success, `${decision} is an answer`);
    assert.deepEqual(ApprovalAnswer.parse({ decision: "choose", choice: "b", comment: "ok" }), {
      decision: "choose",
      choice: "b",
      comment: "ok",
    });
    for (const bad of [{ decision: "maybe" }, { decision: "choose", choice: 2 }, { decision: "approve", comment: false }, {}])
      assert.ok(!ApprovalAnswer.safeParse(bad).success, `${JSON.stringify(bad)} is refused`);
  });

  it("an extract keeps its description and source, and an edge its label and condition", () => {
    const run = () => "x";
    const schema = z.string();
    assert.deepEqual(
      extract(schema, { from: "doc", run, description: "the terms" }),
      { kind: "extract", schema, from: "doc", run, description: "the terms" },
      "the graph view shows an extract's description",
    );
    const when = () => true;
    assert.deepEqual(edge("a", ["b"], { when, label: "yes" }), { from: "a", to: ["b"], when, label: "yes" });
    assert.deepEqual(edge("a", "b"), { from: "a", to: "b" }, "an edge without options has none");
  });
});

describe("workflow graph: a workflow written in plain JavaScript, fields missing", () => {
  it("names the missing start executor when executors, state and edges are all left out, instead of throwing a TypeError", () => {
    const ps = problemsOf({ name: "bare", version: 1, start: "go" } as unknown as WorkflowSpec);
    assert.deepEqual(
      ps.map((p) => [p.code, p.executor, p.message]),
      [["UNKNOWN_EXECUTOR", "go", 'start executor "go" is not defined']],
    );
  });

  it("takes a workflow of one executor with no state and no edges", () => {
    const wf = defineWorkflow({
      name: "one",
      version: 1,
      start: "go",
      executors: { go: code({ run: () => undefined }) },
    } as unknown as WorkflowSpec);
    assert.deepEqual([wf.edges, wf.graph.keys, wf.owners], [[], [], {}], "no edges, no keys, no owners");
  });

  it("names an executor of a kind the engine does not have, before any run does the steps before it", () => {
    // Plain JavaScript can name any kind; before this check the run did every step before this one
    // (effects included) and failed only on reaching it.
    const ps = problemsOf({
      ...invoiceSpec(),
      executors: { ...invoiceSpec().executors, pay: { kind: "cron", reads: ["decision"], run: () => undefined } },
    } as unknown as WorkflowSpec);
    assert.deepEqual(
      ps.map((p) => [p.code, p.executor, p.message]),
      [["INVALID_WORKFLOW", "pay", 'executor "pay" is of kind "cron"; an executor is one of code, loader, agent, commit, effect, request']],
      "the one problem names the executor and its kind, and lists the kinds there are",
    );
  });

  it("names each state key declared as something that is no schema (a misspelled import is undefined), with what it is", () => {
    // Kills workflow.ts:73 LogicalOperator `typeof decl === "object" || decl !== null` in isExtractKey: null and
    // undefined reached `decl.kind` and threw a TypeError instead of this list. Before the check these
    // workflows were built, and the run failed at the first write saying the declared key was unknown.
    const ps = problemsOf({
      name: "js",
      version: 1,
      start: "go",
      state: { total: z.number(), missing: undefined, empty: null, three: 3, plain: { kind: "fact" } },
      executors: { go: code({ owns: ["total", "missing"], run: () => undefined }) },
    } as unknown as WorkflowSpec);
    assert.deepEqual(
      ps.map((p) => [p.code, p.key, p.message]),
      [
        [
          "INVALID_WORKFLOW",
          "missing",
          'state key "missing" is declared as undefined, not a zod schema, fact(schema) or extract(schema, ...)',
        ],
        ["INVALID_WORKFLOW", "empty", 'state key "empty" is declared as null, not a zod schema, fact(schema) or extract(schema, ...)'],
        ["INVALID_WORKFLOW", "three", 'state key "three" is declared as 3, not a zod schema, fact(schema) or extract(schema, ...)'],
        [
          "INVALID_WORKFLOW",
          "plain",
          'state key "plain" is declared as {"kind":"fact"}, not a zod schema, fact(schema) or extract(schema, ...)',
        ],
      ],
      "every key that is no schema, fact or extract, in declaration order; the zod schema is not named",
    );
  });

  it("names an edge to an executor when the workflow declares no executors at all", () => {
    const ps = problemsOf({ name: "e", version: 1, start: "a", state: {}, edges: [edge("a", "b")] } as unknown as WorkflowSpec);
    assert.deepEqual(
      ps.map((p) => p.message),
      ['edge #0 (a -> b) names unknown executor "a"', 'edge #0 (a -> b) names unknown executor "b"', 'start executor "a" is not defined'],
    );
  });
});
