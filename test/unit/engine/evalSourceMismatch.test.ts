import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { z } from "zod";
import { SqlJsStore } from "../../../src/casefile/sqlJsStore";
import { isCasefileError } from "../../../src/engine/errors";
import { commitStepAfter, evalSourceOf } from "../../../src/engine/evalSource";
import { agent, code, commit, edge } from "../../../src/engine/executors";
import { defineWorkflow } from "../../../src/engine/workflow";
import { agentCall, checkpoint, run } from "../casefile/builders";

/**
 * `casefile export-eval` on a case file whose workflow has changed since the call was recorded
 * (issue 18: the mutants of evalSource.ts's messages): the refusal names the recorded call, so a
 * person knows which of the file's calls no longer fits, and what the workflow has now.
 */
describe("eval source: a recorded call the workflow no longer fits", () => {
  let dir: string;
  let store: SqlJsStore;
  const call = agentCall("call-9", "R", { executor: "propose", superstep: 1 });
  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "casefile-s18d-mismatch-"));
    const file = path.join(dir, "CLM-9.casefile");
    const writer = await SqlJsStore.open(file, { create: true });
    writer.commit({ runs: [run("R")], checkpoints: [checkpoint("R:0", "R", 0), checkpoint("R:1", "R", 1)], agentCalls: [call] });
    writer.close();
    store = await SqlJsStore.open(file, { readOnly: true });
  });
  after(() => {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const Proposal = z.object({ action: z.string(), reason: z.string(), facts: z.array(z.string()) });
  /** The refusal's code, its message, and its details naming the step (the CLI's JSON error carries them). */
  const mismatch = (message: string) => (e: unknown) =>
    isCasefileError(e) && e.code === "WORKFLOW_MISMATCH" && e.message === message && JSON.stringify(e.details) === '{"executor":"propose"}';

  it("names the call when its step is now another kind of step", () => {
    const now = defineWorkflow({
      name: "claims",
      version: 5,
      state: {},
      start: "propose",
      executors: { propose: code({ run: () => 1 }) },
      edges: [],
    });
    assert.throws(
      () => evalSourceOf(store, "CLM-9.casefile", store.getAgentCall("call-9")!, now),
      mismatch('agent step "call-9" names executor "propose", which is a code step in workflow "claims" now'),
    );
  });

  it("names the call when its step no longer sends its proposal to a commit step", () => {
    const now = defineWorkflow({
      name: "claims",
      version: 5,
      state: {},
      start: "start",
      executors: {
        start: code({ run: () => 1 }),
        propose: agent({ proposal: Proposal, model: { model: "m" }, context: () => [{ role: "user", content: "?" }] }),
      },
      edges: [edge("start", "propose")],
    });
    assert.throws(
      () => evalSourceOf(store, "CLM-9.casefile", store.getAgentCall("call-9")!, now),
      mismatch('agent step "call-9": agent step "propose" has no edge to a commit step in workflow "claims"'),
    );
  });

  it("finds the commit step among the step's targets, past a step of another kind", () => {
    const now = defineWorkflow({
      name: "claims",
      version: 5,
      state: {},
      start: "propose",
      executors: {
        propose: agent({ proposal: Proposal, model: { model: "m" }, context: () => [{ role: "user", content: "?" }] }),
        log: code({ run: () => undefined }),
        decide: commit({ rules: {}, apply: () => undefined }),
      },
      edges: [edge("propose", ["log", "decide"])],
    });
    assert.equal(commitStepAfter(now, "propose", "eval case c1").target, "decide", "the commit step, not the first target");
  });
});
