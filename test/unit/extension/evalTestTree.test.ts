import assert from "node:assert/strict";
import { toOpenAIEvalsJsonl, toOwnJson, toPromptfooYaml, type EvalCase } from "../../../src/engine/evalCase";
import {
  allCases,
  buildEvalTree,
  caseItemId,
  casesAffectedBy,
  isEvalFile,
  lineOfCase,
  outcomeOf,
} from "../../../src/extension/evalTestTree";
import { EvalCaseRunSchema, type EvalCaseRun } from "../../../src/protocol/evalRun";

/**
 * The Testing view's tree from the workspace's eval files (pure: paths and texts in, nodes out),
 * and what it shows for a case's result from `casefile eval --json`.
 */

function evalCase(id: string, over: { workflow?: string; version?: number; step?: string; action?: string | null } = {}): EvalCase {
  const action = over.action === undefined ? "approve" : over.action;
  return {
    format: "casefile-eval",
    v: 1,
    id,
    workflow: { name: over.workflow ?? "invoice-variance", version: over.version ?? 1, file: "../workflow.ts" },
    step: over.step ?? "propose",
    request: { messages: [{ role: "user", content: "Decide." }], model: "gpt-4o-mini", params: {}, responseSchema: {}, hash: "h1" },
    facts: {},
    rules: [],
    answer: JSON.stringify({ action }),
    expected: { action, verdict: "escalated", proposal: action === null ? null : { action } },
    provenance: { caseFile: "/ws/invoice/INV-1.casefile", runId: "run-1", superstep: 3, agentCallId: "run-1:3:propose" },
  };
}

describe("Testing view: the eval case tree", () => {
  it("groups every case by workflow, then step, from our JSON and promptfoo YAML alike", () => {
    const tree = buildEvalTree([
      { path: "/ws/invoice/evals/b.eval.json", text: toOwnJson(evalCase("case-b", { step: "triage" })) },
      { path: "/ws/invoice/evals/a.eval.json", text: toOwnJson(evalCase("case-a")) },
      {
        path: "/ws/invoice/evals/set.promptfoo.yaml",
        text: toPromptfooYaml([evalCase("case-c", { version: 2 }), evalCase("case-d", { workflow: "supplier" })]),
      },
    ]);
    assert.deepEqual(tree.problems, []);
    assert.deepEqual(
      tree.workflows.map((w) => [w.name, w.description, w.steps.map((s) => [s.step, s.cases.map((c) => c.caseId)])]),
      [
        [
          "invoice-variance",
          "v1, v2",
          [
            ["propose", ["case-a", "case-c"]],
            ["triage", ["case-b"]],
          ],
        ],
        ["supplier", "v1", [["propose", ["case-d"]]]],
      ],
    );
    const a = allCases(tree).find((c) => c.caseId === "case-a")!;
    assert.equal(a.id, caseItemId("/ws/invoice/evals/a.eval.json", "case-a"));
    assert.equal(a.description, "expects approve (escalated)");
    assert.equal(a.workflowFile, "/ws/invoice/workflow.ts", "the workflow file resolved from the eval file's folder");
    assert.equal(a.provenance.agentCallId, "run-1:3:propose");
  });

  it("points each case at its own line: the JSON case's id, and each promptfoo test's", () => {
    const json = toOwnJson(evalCase("case-a"));
    assert.equal(json.split("\n")[lineOfCase(json, "case-a")], '  "id": "case-a",');
    const yaml = toPromptfooYaml([evalCase("case-c"), evalCase("case-d")]);
    const lines = yaml.split("\n");
    assert.match(lines[lineOfCase(yaml, "case-c")]!, /\bid: case-c$/);
    assert.ok(lineOfCase(yaml, "case-d") > lineOfCase(yaml, "case-c"), "the second test is further down");
    assert.equal(lineOfCase("{}", "nowhere"), 0);
  });

  it("lists a broken eval file with the reason, and leaves other YAML and JSONL out", () => {
    const tree = buildEvalTree([
      { path: "/ws/evals/broken.eval.json", text: '{"format":"casefile-eval","v":1}' },
      { path: "/ws/.github/workflows/ci.yml", text: "on: push\njobs: {}\n" },
      { path: "/ws/evals/openai.eval.json", text: toOpenAIEvalsJsonl([evalCase("x")]) },
    ]);
    assert.deepEqual(tree.workflows, []);
    assert.deepEqual(
      tree.problems.map((p) => p.file),
      ["/ws/evals/broken.eval.json", "/ws/evals/openai.eval.json"],
    );
    assert.match(tree.problems[0]!.message, /^INVALID_INPUT: .*not a valid eval case/);
    assert.match(tree.problems[1]!.message, /an OpenAI evals file/);
    assert.equal(isEvalFile("/ws/docker-compose.yaml", "services: {}\n"), false);
    assert.equal(isEvalFile("/ws/x.promptfoo.yaml", toPromptfooYaml([evalCase("x")])), true);
  });

  it("a saved workflow file re-runs the cases that run with it; a saved eval file its own", () => {
    const tree = buildEvalTree([
      { path: "/ws/invoice/evals/a.eval.json", text: toOwnJson(evalCase("case-a")) },
      { path: "/ws/other/evals/z.eval.json", text: toOwnJson(evalCase("case-z")) },
    ]);
    assert.deepEqual(
      casesAffectedBy(tree, "/ws/invoice/workflow.ts").map((c) => c.caseId),
      ["case-a"],
    );
    assert.deepEqual(
      casesAffectedBy(tree, "/ws/other/evals/z.eval.json").map((c) => c.caseId),
      ["case-z"],
    );
    assert.deepEqual(casesAffectedBy(tree, "/ws/README.md"), []);
  });
});

describe("Testing view: a case's result", () => {
  const base: EvalCaseRun = EvalCaseRunSchema.parse({
    v: 1,
    type: "case",
    file: "/ws/evals/a.eval.json",
    id: "case-a",
    step: "propose",
    workflow: { name: "invoice-variance", version: 1 },
    expected: { action: "approve_variance", verdict: "escalated" },
    got: {
      action: "approve_variance",
      verdict: "escalated",
      reason: "within_tolerance: variance 9% > 5%",
      rules: [
        { name: "cites_facts", ok: true, message: "pass" },
        { name: "within_tolerance", ok: false, message: "variance 9% > 5%" },
      ],
    },
    notes: [],
    passed: true,
    durationMs: 12,
    provenance: { caseFile: "/ws/INV-1.casefile", runId: "run-1", superstep: 3, agentCallId: "c1" },
  });

  it("a passing case passes", () => {
    assert.deepEqual(outcomeOf(base), { kind: "passed", durationMs: 12 });
  });

  it("a wrong action fails with expected against actual: action, verdict and each rule's result", () => {
    const o = outcomeOf({ ...base, expected: { action: "hold", verdict: "escalated" }, passed: false });
    assert.equal(o.kind, "failed");
    if (o.kind !== "failed") return;
    assert.equal(o.message, "case-a: action approve_variance, expected hold");
    assert.equal(o.expected, "action: hold\nverdict: escalated\nrules:\n  (not recorded in the eval case: a rule escalates)\n");
    assert.equal(
      o.actual,
      "action: approve_variance\nverdict: escalated\nrules:\n  cites_facts: pass\n  within_tolerance: FAIL: variance 9% > 5%\n",
    );
  });

  it("an expected acceptance expects every rule to pass, so the failing rule is the line that differs", () => {
    const o = outcomeOf({ ...base, expected: { action: "approve_variance", verdict: "accepted" }, passed: false, notes: ["model a -> b"] });
    assert.ok(o.kind === "failed", `a failure, not ${o.kind}`);
    assert.equal(o.message, "case-a: verdict escalated, expected accepted (model a -> b)");
    assert.match(o.expected, /  cites_facts: pass\n  within_tolerance: pass\n$/);
    assert.match(o.actual, /  within_tolerance: FAIL: variance 9% > 5%\n$/);
  });

  it("a case that could not run is an error with its code, not a failure", () => {
    const { got: _got, ...rest } = base;
    const o = outcomeOf({ ...rest, passed: false, error: { code: "WORKFLOW_MISMATCH", message: "other workflow" } });
    assert.deepEqual(o, { kind: "errored", durationMs: 12, message: "WORKFLOW_MISMATCH: other workflow" });
  });
});
