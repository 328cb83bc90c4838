import * as assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { openCaseFile } from "../../../src/casefile/index";
import type { CaseStore } from "../../../src/engine/store";
import { buildSuperstepDetail, COMPARE_LIMIT } from "../../../src/extension/viewModel";
import { HostToInspectorSchema, InspectorToHostSchema } from "../../../src/protocol/webview";
import type { ContextView } from "../../../src/protocol/webview";
import { diffContexts } from "../../../src/webview/contextDiff";
import {
  AMOUNT_BRANCH,
  AMOUNT_CALL,
  commitContextBranches,
  ORIGINAL_CALL,
  REVIEW_CALL,
  SAME_BRANCH,
  SAME_CALL,
} from "../../fixtures/casefile/contextBranches";
import { INVOICE_RUN } from "../../fixtures/casefile/fixture";

/**
 * The Context tab's diff from the host's side, against a real case file on disk (sql.js, reopened
 * read-only as the panel reads it): what the picker offers for an agent step, the other context as
 * the host answers `loadContext` (through the superstep's details), and the diff the webview draws
 * from the two.
 */

function context(store: CaseStore, runId: string, superstep: number, executor: string): ContextView {
  const d = buildSuperstepDetail(store, runId, superstep, { countMessageTokens: (m) => m.content.split(/\s+/).length });
  const step = d.steps.find((s) => s.stepId === `${runId}-s${superstep}-${executor}`);
  assert.ok(step && !("absent" in step.context), `${executor} in superstep ${superstep} of ${runId} has a context`);
  return step.context;
}

describe("Context diff from a case file on disk", () => {
  let store: CaseStore;
  let dir: string;

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "casefile-ctxdiff-"));
    const file = path.join(dir, "invoice.casefile");
    const writer = await openCaseFile(file, { create: true });
    commitContextBranches(writer);
    writer.close();
    store = await openCaseFile(file, { readOnly: true });
  });
  after(() => {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("offers the same executor in the other branches, same superstep first, then this run's other agent steps", () => {
    const c = context(store, AMOUNT_BRANCH, 1, "triage");
    assert.deepEqual(
      c.compareWith.map((r) => [r.relation, r.runId, r.superstep, r.executor, r.agentCallId, r.tokens]),
      [
        ["branch", INVOICE_RUN, 1, "triage", ORIGINAL_CALL, 118],
        ["branch", SAME_BRANCH, 1, "triage", SAME_CALL, 118],
        ["run", AMOUNT_BRANCH, 2, "review", REVIEW_CALL, 96],
      ],
    );
    assert.equal(c.compareMore, 0);
    const original = context(store, INVOICE_RUN, 1, "triage");
    assert.deepEqual(
      original.compareWith.map((r) => [r.relation, r.runId, r.agentCallId, r.hash === original.hash]),
      [
        ["branch", AMOUNT_BRANCH, AMOUNT_CALL, false],
        ["branch", SAME_BRANCH, SAME_CALL, true],
      ],
      "the review step is another executor in another run: not offered",
    );
    assert.ok(COMPARE_LIMIT >= 3, "expected: COMPARE_LIMIT >= 3");
  });

  it("carries everything the diff needs over the schema-checked messages, both ways", () => {
    const request = { type: "loadContext", requestId: "context-1", runId: INVOICE_RUN, superstep: 1, agentCallId: ORIGINAL_CALL };
    assert.deepEqual(InspectorToHostSchema.parse(request), request);
    assert.equal(InspectorToHostSchema.safeParse({ ...request, superstep: -1 }).success, false);
    assert.equal(InspectorToHostSchema.safeParse({ ...request, agentCallId: "" }).success, false);
    const answer = { type: "context", requestId: "context-1", context: context(store, INVOICE_RUN, 1, "triage") };
    assert.deepEqual(HostToInspectorSchema.parse(JSON.parse(JSON.stringify(answer))), answer);
    assert.equal(
      HostToInspectorSchema.safeParse({ ...answer, context: { ...answer.context, messages: [{ role: "tool" }] } }).success,
      false,
    );
  });

  it("diffs the branch's context against the original: the changed amount and the added line, token counts on both sides", () => {
    const d = diffContexts(context(store, INVOICE_RUN, 1, "triage"), context(store, AMOUNT_BRANCH, 1, "triage"));
    assert.equal(d.sameHash, false);
    assert.equal(d.sameMessages, false);
    assert.deepEqual(
      d.messages.map((m) => [m.change, m.after?.role]),
      [
        ["same", "system"],
        ["changed", "user"],
      ],
    );
    const user = d.messages[1]!;
    const marked = (change: string): string[] => user.segments.filter((s) => s.change === change).map((s) => s.text);
    // Word by word, words being what whitespace separates: the amount changed as one word.
    assert.deepEqual(marked("removed"), ["1840.50"]);
    assert.deepEqual(marked("added"), ["18405.00", "\nAmount above the auto-approval limit of 10000.00 EUR: yes"]);
    assert.equal(
      user.segments
        .filter((s) => s.change !== "added")
        .map((s) => s.text)
        .join(""),
      user.before!.content,
      "the unmarked and removed text is the other context's message",
    );
    assert.equal(
      user.segments
        .filter((s) => s.change !== "removed")
        .map((s) => s.text)
        .join(""),
      user.after!.content,
      "the unmarked and added text is this one's",
    );
    assert.ok(user.before!.tokens! < user.after!.tokens!, "the per-message counts of both sides");
  });

  it("says two contexts are the same when their hashes are", () => {
    const d = diffContexts(context(store, INVOICE_RUN, 1, "triage"), context(store, SAME_BRANCH, 1, "triage"));
    assert.equal(d.sameHash, true);
    assert.ok(
      d.messages.every((m) => m.change === "same"),
      `changes: ${JSON.stringify(d.messages.map((m) => m.change))}`,
    );
  });

  it("lines up messages added or dropped between two agent steps", () => {
    const triage = context(store, AMOUNT_BRANCH, 1, "triage");
    const review = context(store, AMOUNT_BRANCH, 2, "review");
    const d = diffContexts(triage, review);
    assert.deepEqual(
      d.messages.map((m) => m.change),
      ["changed", "same"],
    );
    const two = diffContexts(triage, {
      ...review,
      hash: "x",
      messages: [...review.messages, { role: "assistant", content: "ok", tokens: 1 }],
    });
    assert.deepEqual(
      two.messages.map((m) => m.change),
      ["changed", "same", "added"],
    );
    const none = diffContexts({ ...triage, messages: [] }, triage);
    assert.deepEqual(
      none.messages.map((m) => m.change),
      ["added", "added"],
    );
  });
});
