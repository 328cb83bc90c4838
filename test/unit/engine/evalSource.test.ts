import assert from "node:assert/strict";
import { z } from "zod";
import { isCasefileError } from "../../../src/engine/errors";
import { agentSpecOf, commitStateOf, commitStepAfter } from "../../../src/engine/evalSource";
import { agent, code, commit, edge } from "../../../src/engine/executors";
import { defineWorkflow } from "../../../src/engine/workflow";

/**
 * How an eval case finds its step in the workflow it is run against (`casefile eval`, export):
 * the agent step by name and the commit step its proposal goes to, or WORKFLOW_MISMATCH saying
 * what the workflow has now.
 */
const Proposal = z.object({ action: z.enum(["pay", "refuse"]), reason: z.string(), facts: z.array(z.string()) });
const wf = defineWorkflow({
  name: "claims",
  version: 3,
  state: {},
  start: "load",
  executors: {
    load: code({ run: () => "go" }),
    propose: agent({ proposal: Proposal, model: { model: "gpt-4o-mini" }, context: () => [{ role: "user", content: "pay?" }] }),
    draft: agent({ proposal: Proposal, model: { model: "gpt-4o-mini" }, context: () => [{ role: "user", content: "draft?" }] }),
    decide: commit({ rules: {}, apply: () => undefined }),
  },
  edges: [edge("load", "propose"), edge("propose", "decide"), edge("load", "draft")],
});

const mismatch = (message: string) => (e: unknown) => isCasefileError(e) && e.code === "WORKFLOW_MISMATCH" && e.message === message;

describe("eval source: the step of an eval case in the workflow now", () => {
  it("finds the agent step, or says it is gone or is now another kind of step", () => {
    assert.equal(agentSpecOf(wf, "propose", "eval case c1"), wf.executors.propose, "the workflow's own agent step");
    assert.throws(
      () => agentSpecOf(wf, "classify", "eval case c1"),
      mismatch('eval case c1 names executor "classify", which is not defined in workflow "claims" now'),
    );
    assert.throws(
      () => agentSpecOf(wf, "load", "eval case c1"),
      mismatch('eval case c1 names executor "load", which is a code step in workflow "claims" now'),
    );
  });

  it("finds the commit step the agent's proposal goes to, or says there is none", () => {
    const { target, spec } = commitStepAfter(wf, "propose", "eval case c1");
    assert.equal(target, "decide");
    assert.equal(spec.kind, "commit");
    assert.throws(
      () => commitStepAfter(wf, "draft", "eval case c2"),
      mismatch('eval case c2: agent step "draft" has no edge to a commit step in workflow "claims"'),
    );
  });

  // Reaches the `?? []` fallbacks of commitStateOf (evalSource.ts:67). Their ArrayDeclaration mutants (`["Stryker was here"]`)
  // are equivalent: a listed key the state does not hold is skipped, so no test can tell them apart.
  it("gives a commit step that reads nothing, or owns nothing, the keys it has and no others", () => {
    const all = { claim: { amount: 120 }, decision: "pay", policy: "up to 500" };
    assert.deepEqual(commitStateOf({ owns: ["decision"], rules: {}, apply: () => undefined }, all), { decision: "pay" }, "owns only");
    assert.deepEqual(commitStateOf({ reads: ["claim"], rules: {}, apply: () => undefined }, all), { claim: { amount: 120 } }, "reads only");
    assert.deepEqual(commitStateOf({ rules: {}, apply: () => undefined }, all), {}, "neither");
  });
});
