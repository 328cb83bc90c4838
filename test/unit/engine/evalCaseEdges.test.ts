import assert from "node:assert/strict";
import { parse as parseYaml, stringify as stringifyYaml } from "yaml";
import { isCasefileError } from "../../../src/engine/errors";
import {
  correctExpected,
  evalCaseFromRecords,
  parseOpenAIEvalsJsonl,
  parseOwnJson,
  parsePromptfooYaml,
  toOpenAIEvalsJsonl,
  toOwnJson,
  toPromptfooYaml,
  withoutSchemaKeyword,
  type EvalCase,
} from "../../../src/engine/evalCase";
import { toOpenAIEvalConfig } from "../../../src/engine/openaiEvals";
import type { Json } from "../../../src/engine/records";
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

describe("eval cases: what a grader is given", () => {
  const withSchema = (responseSchema: Json, proposal: Json): EvalCase => ({
    ...claimCase,
    request: { ...claimCase.request, responseSchema },
    expected: { ...claimCase.expected, proposal },
  });

  it("drops only the proposal's free-text fields: a bare string, not one with an enum, const, pattern or format", () => {
    const schema = {
      type: "object",
      properties: {
        action: { type: "string", enum: ["pay", "refuse"] },
        reason: { type: "string" },
        kind: { type: "string", const: "claim" },
        ref: { type: "string", pattern: "^CLM-" },
        day: { type: "string", format: "date" },
        amount: { type: "number" },
        loose: true,
      },
    };
    const proposal = {
      action: "pay",
      reason: "covered",
      kind: "claim",
      ref: "CLM-7",
      day: "2026-12-01",
      amount: 120,
      loose: "x",
      extra: "y",
    };
    const { expected_proposal } = JSON.parse(toOpenAIEvalsJsonl([withSchema(schema, proposal)])) as { expected_proposal: Json };
    assert.deepEqual(
      expected_proposal,
      { action: "pay", kind: "claim", ref: "CLM-7", day: "2026-12-01", amount: 120, loose: "x", extra: "y" },
      "only reason is free text",
    );
  });

  it("keeps the whole proposal when the schema says nothing of its fields", () => {
    const proposal = { action: "pay", reason: "covered" };
    for (const schema of [
      true,
      { type: "object" },
      { type: "object", properties: ["reason"] },
      { type: "object", properties: null },
    ] as Json[]) {
      const { expected_proposal } = JSON.parse(toOpenAIEvalsJsonl([withSchema(schema, proposal)])) as { expected_proposal: Json };
      assert.deepEqual(expected_proposal, proposal, `schema ${JSON.stringify(schema)}`);
    }
  });

  it("keeps a proposal that is not an object as it is", () => {
    const schema = { type: "object", properties: { reason: { type: "string" } } };
    for (const proposal of ["pay", ["pay"]] as Json[]) {
      const c = { ...withSchema(schema, proposal), expected: { ...withSchema(schema, proposal).expected, action: "pay" } };
      const { expected_proposal } = JSON.parse(toOpenAIEvalsJsonl([c])) as { expected_proposal: Json };
      assert.deepEqual(expected_proposal, proposal, `proposal ${JSON.stringify(proposal)}`);
    }
  });

  it("keeps a schema that is not an object as it is when it drops $schema for promptfoo", () => {
    assert.equal(withoutSchemaKeyword(true), true);
    assert.deepEqual(withoutSchemaKeyword(["a"]), ["a"]);
    assert.equal(withoutSchemaKeyword(null), null);
    assert.deepEqual(withoutSchemaKeyword({ $schema: "draft-07", type: "object" }), { type: "object" });
  });

  it("takes only numeric sampling parameters, max_completion_tokens before max_tokens, and an action enum only of strings", () => {
    const params = { temperature: "0.2", top_p: null, seed: 7, max_completion_tokens: 200, max_tokens: 300 };
    const mixedEnum = { type: "object", properties: { action: { type: "string", enum: ["pay", 1] } } };
    const c = { ...withSchema(mixedEnum, { action: "pay" }), request: { ...withSchema(mixedEnum, { action: "pay" }).request, params } };
    const { eval: created, run } = toOpenAIEvalConfig([c]);
    const { response_format: _format, ...sampling } = (run.data_source as unknown as { sampling_params: Record<string, unknown> })
      .sampling_params;
    assert.deepEqual(sampling, { seed: 7, max_completion_tokens: 200 }, "a string or null parameter is not sent");
    const config = created.data_source_config as unknown as { item_schema: { properties: Record<string, unknown> } };
    assert.deepEqual(config.item_schema.properties.expected_action, { type: "string" }, "an enum holding a number is no action enum");
    for (const schema of [
      true,
      { type: "object" },
      { properties: { action: true } },
      { properties: { action: { enum: "pay" } } },
    ] as Json[]) {
      const loose = toOpenAIEvalConfig([withSchema(schema, { action: "pay" })]).eval.data_source_config as unknown as {
        item_schema: { properties: Record<string, unknown> };
      };
      assert.deepEqual(loose.item_schema.properties.expected_action, { type: "string" }, `no enum in ${JSON.stringify(schema)}`);
    }
    const noSchema = toOpenAIEvalConfig([withSchema(null, { action: "pay" })]).run.data_source as {
      sampling_params: { response_format: { json_schema: { schema: unknown } } };
    };
    assert.deepEqual(noSchema.sampling_params.response_format.json_schema.schema, {}, "no schema recorded: an empty one");
  });
});

describe("eval cases: the promptfoo file as a person reads it", () => {
  it("opens with a comment saying how to use it and how to correct an expectation", () => {
    const text = toPromptfooYaml([claimCase]);
    assert.ok(
      text.startsWith(
        [
          "# Casefile eval cases as promptfoo tests. Use with a prompt that is the messages themselves,",
          "# prompts: ['{{ messages }}'] (a JSON chat), and tests: file://this-file.yaml.",
          "# Correct an expectation by editing vars.expected_action / vars.expected_proposal (JSON) and",
          "# metadata.casefile.expected.verdict.",
          "",
        ].join("\n"),
      ),
      `the header: ${text.slice(0, 400)}`,
    );
  });

  it("describes a case expecting no valid proposal as such", () => {
    const rejected = evalCaseFromRecords({
      ...claimSource,
      verdict: undefined,
      call: { ...claimSource.call, proposal: undefined, rejection: { code: "INVALID_JSON", message: "not JSON" } },
    });
    const [test] = parseYaml(toPromptfooYaml([rejected])) as { description: string }[];
    assert.equal(test!.description, "claims v3 / propose: expect no valid proposal (escalated)");
  });

  it("names the file in the details of every refusal, and each bad field in the problems", () => {
    const details = (f: () => unknown) => {
      try {
        f();
      } catch (e) {
        assert.ok(isCasefileError(e) && e.code === "INVALID_INPUT", `INVALID_INPUT: ${String(e)}`);
        return e.details;
      }
      assert.fail("not refused");
    };
    assert.deepEqual(
      details(() => parsePromptfooYaml("- vars: [", "bad.yaml")),
      { file: "bad.yaml" },
      "not YAML",
    );
    assert.deepEqual(
      details(() => parseOwnJson("{", "bad.json")),
      { file: "bad.json" },
      "not JSON",
    );
    const [test] = parseYaml(toPromptfooYaml([claimCase])) as { vars: Record<string, string> }[];
    test!.vars.messages = "[";
    assert.deepEqual(
      details(() => parsePromptfooYaml(stringifyYaml([test]), "c.yaml")),
      { file: "c.yaml test 0 vars.messages" },
      "a var not JSON",
    );
    assert.deepEqual(
      details(() => parseOwnJson(JSON.stringify({ ...claimCase, step: "", v: 2 }), "c.json")),
      { file: "c.json", problems: ["v: Invalid input: expected 1", "step: Too small: expected string to have >=1 characters"] },
      "every bad field, by its path",
    );
  });

  it("says which var is not JSON when it is the expected proposal, and lists each bad field on a line of its own", () => {
    // kills evalCase.ts:299 StringLiteral (the expected proposal's `where` as "") and :344 StringLiteral (the problems joined by "")
    const [test] = parseYaml(toPromptfooYaml([claimCase])) as { vars: Record<string, string> }[];
    test!.vars.expected_proposal = '{"action": "pay",';
    assert.throws(
      () => parsePromptfooYaml(stringifyYaml([test]), "c.yaml"),
      (e: unknown) => {
        assert.ok(isCasefileError(e) && e.code === "INVALID_INPUT", `INVALID_INPUT: ${String(e)}`);
        assert.match(e.message, /^c\.yaml test 0 vars\.expected_proposal is not valid JSON: /);
        assert.deepEqual(e.details, { file: "c.yaml test 0 vars.expected_proposal" });
        return true;
      },
    );
    assert.throws(
      () => parseOwnJson(JSON.stringify({ ...claimCase, step: "", v: 2 }), "c.json"),
      (e: unknown) => {
        assert.ok(isCasefileError(e), `a typed error: ${String(e)}`);
        assert.equal(
          e.message,
          "c.json is not a valid eval case:\n  - v: Invalid input: expected 1\n  - step: Too small: expected string to have >=1 characters",
        );
        return true;
      },
    );
  });

  it("writes a long message or proposal on one line, so a person edits the JSON where it stands", () => {
    // kills evalCase.ts:283 ObjectLiteral (`{ lineWidth: 0 }` as `{}`): YAML's default folds a long string at 80 columns
    const content = "Decide the claim below. " + "The policy covers water damage to the kitchen floor and the cabinets. ".repeat(3);
    const reason = "covered under section 4.2 of the policy, water damage, no exclusion applies, amount below the limit";
    const long: EvalCase = {
      ...claimCase,
      request: { ...claimCase.request, messages: [{ role: "user", content }] },
      expected: { ...claimCase.expected, proposal: { action: "pay", reason } },
    };
    const lines = toPromptfooYaml([long]).split("\n");
    assert.ok(
      lines.includes(`    messages: '${JSON.stringify([{ role: "user", content }])}'`),
      `the messages on one line: ${lines.filter((l) => l.includes("messages")).join(" / ")}`,
    );
    assert.ok(
      lines.includes(`    expected_proposal: '${JSON.stringify({ action: "pay", reason })}'`),
      `the proposal on one line: ${lines.filter((l) => l.includes("expected_proposal")).join(" / ")}`,
    );
  });
});
