import assert from "node:assert/strict";
import type { CaseResult } from "../../../src/cli/evalReport";
import { buildResults, formatExperiment } from "../../../src/cli/experimentReport";
import type { EvalCase } from "../../../src/engine/evalCase";
import { ExperimentResultsSchema, parseExperimentResults } from "../../../src/protocol/experiment";

/**
 * What `casefile experiment` makes of its runs, without running any: a cell passes only when
 * every repeat passed, a regression is a case the baseline passes and another variant does not,
 * and tokens are the provider's where it reported them.
 */

const kase = (id: string, verdict: "accepted" | "escalated"): { file: string; c: EvalCase } => ({
  file: `/evals/${id}.eval.json`,
  c: { id, step: "propose", expected: { action: "approve_variance", verdict, proposal: null } } as unknown as EvalCase,
});

function result(id: string, passed: boolean, usage?: { promptTokens: number; completionTokens: number }): CaseResult {
  return {
    file: `/evals/${id}.eval.json`,
    id,
    step: "propose",
    workflow: { name: "invoice-variance", version: 1 },
    expected: { action: "approve_variance", verdict: "accepted" },
    got: {
      action: passed ? "approve_variance" : "escalate",
      verdict: "accepted",
      reason: "every rule passed",
      rules: [],
      request: { messages: [{ role: "user", content: "Decide." }], model: "m", hash: "sha256:x" },
      ...(usage ? { usage } : {}),
      modelMs: 10,
    },
    notes: [],
    passed,
    durationMs: 12,
    provenance: { caseFile: `/cases/${id}.casefile`, runId: "run-1", superstep: 3, agentCallId: "call-1" },
  };
}

describe("experiment results and matrix", () => {
  const cases = [kase("a", "accepted"), kase("b", "escalated")];
  const build = (baseline: string | undefined) =>
    buildResults({
      createdAt: "2026-01-01T00:00:00.000Z",
      repeat: 2,
      baseline,
      cases,
      countContext: () => 7,
      junit: {},
      variants: [
        {
          name: "base",
          spec: { provider: { kind: "recorded" } },
          results: [
            [result("a", true), result("a", true)],
            [result("b", false), result("b", false)],
          ],
        },
        {
          name: "new",
          spec: { provider: { kind: "openai", model: "m" } },
          results: [
            [
              result("a", true, { promptTokens: 100, completionTokens: 20 }),
              result("a", false, { promptTokens: 100, completionTokens: 20 }),
            ],
            [result("b", false), result("b", true)],
          ],
        },
      ],
    });

  it("passes a cell only when every repeat passed, and names the regressions against the baseline only", () => {
    const r = ExperimentResultsSchema.parse(build("base"));
    const cell = (c: string, v: string) => r.cells.find((x) => x.case === c && x.variant === v)!;
    assert.equal(cell("a", "new").passRate, 0.5);
    assert.equal(cell("a", "new").passed, false, "1 of 2 repeats is a failed cell");
    assert.deepEqual(r.regressions, [{ case: "a", variant: "new" }], "b fails under the baseline: no regression");
    assert.deepEqual(build(undefined).regressions, [], "no baseline, no regressions");
    assert.deepEqual(
      r.totals.map((t) => [t.variant, t.passRate, t.casesPassed, t.tokens]),
      [
        ["base", 0.5, 1, 28],
        ["new", 0.5, 0, 254],
      ],
      "tokens: the provider's where reported (2 x 120), else the context's (2 x 7)",
    );
    assert.ok(parseExperimentResults(JSON.stringify(r)).ok, "the results file reads back");
  });

  it("prints the matrix with the rate over repeats, then the totals and the regression", () => {
    const text = formatExperiment(build("base"));
    assert.match(text, /^case\s+expected\s+base \(baseline\)\s+new$/m);
    assert.match(
      text,
      /^a\s+approve_variance \/ accepted\s+PASS 2\/2 approve_variance \/ accepted {2}7 tok {2}10 ms\s+FAIL 1\/2 approve_variance \/ accepted {2}120 tok {2}10 ms$/m,
    );
    assert.match(text, /^new\s+50%\s+0\/2\s+254\s+10 ms$/m);
    assert.match(text, /^regression: case a passes under baseline "base" and fails under "new"$/m);
  });

  it("keeps two cases of one id apart (an export and its corrected copy): each row and regression is its own", () => {
    const original = { ...kase("s", "escalated"), file: "/evals/s.eval.json" };
    const corrected = { ...kase("s", "accepted"), file: "/evals/s-corrected.eval.json" };
    const r = buildResults({
      createdAt: "2026-01-01T00:00:00.000Z",
      repeat: 1,
      baseline: "v1",
      cases: [original, corrected],
      countContext: () => 7,
      junit: {},
      variants: [
        { name: "v1", spec: { provider: { kind: "recorded" } }, results: [[result("s", true)], [result("s", false)]] },
        { name: "v2", spec: { provider: { kind: "recorded" } }, results: [[result("s", false)], [result("s", true)]] },
      ],
    });
    assert.deepEqual(
      r.cases.map((c) => c.id),
      ["s (s.eval.json)", "s (s-corrected.eval.json)"],
      "a shared id is told apart by the file",
    );
    const passed = (c: string, v: string) => r.cells.find((x) => x.case === c && x.variant === v)?.passed;
    assert.deepEqual(
      [passed("s (s-corrected.eval.json)", "v1"), passed("s (s-corrected.eval.json)", "v2")],
      [false, true],
      "the corrected copy's row shows its own results, not the first case's",
    );
    assert.deepEqual(r.regressions, [{ case: "s (s.eval.json)", variant: "v2" }], "only the original regresses");
  });

  it("refuses a results file of another version, naming the field", () => {
    const r = parseExperimentResults(JSON.stringify({ ...build("base"), v: 2 }));
    assert.equal(r.ok, false);
    assert.match(r.ok ? "" : r.error, /^not an experiment results file \(v 1\): .* at "v"$/);
    assert.match((parseExperimentResults("{") as { error: string }).error, /^not JSON/);
  });
});
