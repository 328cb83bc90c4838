import assert from "node:assert/strict";
import { isCasefileError } from "../../../src/engine/errors";
import { correctExpected, evalCaseFromRecords, parseOpenAIEvalsJsonl, toOpenAIEvalsJsonl, toOwnJson } from "../../../src/engine/evalCase";
import { claimCase, claimSource } from "./helpers/evalCaseFixture";

/**
 * Eval cases at the edges evalCase.test.ts does not reach (issue 18: the mutants of evalCase.ts
 * it left alive): what a refusal carries for a caller, a correction naming both the proposal and
 * the action, the file as written to disk, and JSONL lines a hand edit leaves blank.
 */
describe("eval cases: edges of export, correction and the JSONL reader", () => {
  it("refuses a call with neither a verdict nor a rejection, naming the call in the error's details", () => {
    assert.throws(
      () => evalCaseFromRecords({ ...claimSource, verdict: undefined }),
      (e: unknown) => {
        assert.ok(isCasefileError(e), "a typed error");
        assert.equal(e.code, "USAGE");
        assert.equal(
          e.message,
          'agent call call-1 (step "propose") has neither a verdict nor a rejection recorded; it cannot say what was expected',
        );
        assert.deepEqual(e.details, { agentCallId: "call-1" }, "the CLI's JSON error names the call");
        return true;
      },
    );
  });

  it("refuses to grade a case expecting no valid proposal, naming the case in the error's details", () => {
    const rejected = evalCaseFromRecords({
      ...claimSource,
      verdict: undefined,
      call: { ...claimSource.call, proposal: undefined, rejection: { code: "INVALID_JSON", message: "not JSON" } },
    });
    assert.throws(
      () => toOpenAIEvalsJsonl([rejected]),
      (e: unknown) => isCasefileError(e) && e.code === "USAGE" && JSON.stringify(e.details) === JSON.stringify({ caseId: rejected.id }),
      "the CLI's JSON error names the case",
    );
  });

  it("keeps the action a developer gives beside a corrected proposal, and takes it from the proposal only when none is given", () => {
    const both = correctExpected(claimCase, { proposal: { action: "refuse", reason: "not covered" }, action: "escalate" });
    assert.equal(both.expected.action, "escalate", "the action given wins over the proposal's");
    assert.deepEqual(both.expected.proposal, { action: "refuse", reason: "not covered" });
    const proposalOnly = correctExpected(claimCase, { proposal: { action: "refuse", reason: "not covered" } });
    assert.equal(proposalOnly.expected.action, "refuse", "the proposal's action when no action is given");
  });

  it("writes our JSON indented by two spaces and ending in a newline, as a file in a repository should", () => {
    const text = toOwnJson(claimCase);
    assert.ok(text.endsWith("}\n"), `ends with one newline: ${JSON.stringify(text.slice(-3))}`);
    assert.ok(text.startsWith('{\n  "format": "casefile-eval",\n  "v": 1,\n'), `indented by two: ${text.slice(0, 40)}`);
  });

  it("skips JSONL lines that are empty or only spaces, still naming a bad line by its number in the file", () => {
    const line = toOpenAIEvalsJsonl([claimCase]);
    const text = `${line}   \n\n${line}\t\n{"input": 1}\n`;
    assert.throws(
      () => parseOpenAIEvalsJsonl(text, "cases.jsonl"),
      /cases\.jsonl line 6 is not a valid eval case/,
      "blank lines skipped, and still counted in the line number",
    );
    assert.equal(parseOpenAIEvalsJsonl(`${line}   \n\n${line}`, "cases.jsonl").length, 2, "two cases, blank lines skipped");
  });
});
