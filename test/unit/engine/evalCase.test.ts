import assert from "node:assert/strict";
import { parse as parseYaml, stringify as stringifyYaml } from "yaml";
import { z } from "zod";
import { buildModelRequest } from "../../../src/engine/contextRequest";
import { isCasefileError } from "../../../src/engine/errors";
import {
  correctExpected,
  evalCaseFromRecords,
  EvalCaseSchema,
  parseOpenAIEvalsJsonl,
  parseOwnJson,
  parsePromptfooYaml,
  toOpenAIEvalsJsonl,
  toOwnJson,
  toPromptfooYaml,
} from "../../../src/engine/evalCase";
import type { EvalCase, EvalCaseSource } from "../../../src/engine/evalCase";
import { toOpenAIEvalConfig, toOpenAIEvalItemsJsonl } from "../../../src/engine/openaiEvals";
import type { AgentCallRecord, Json, VerdictRecord } from "../../../src/engine/records";

const proposalSchema = z.object({
  action: z.enum(["approve", "hold", "escalate"]),
  reason: z.string(),
  facts: z.array(z.string()),
});
const built = buildModelRequest({
  step: "classify",
  messages: [
    { role: "system", content: "Decide what to do with the invoice. Answer in JSON." },
    {
      role: "user",
      content:
        'Facts:\n- invoice.total = 1200.00 EUR (erp, v7)\n- po.total = 1180.00 EUR (erp, v3)\nRule: tolerance 2 %\n"quoted" and: colons # not a comment',
    },
  ],
  model: "gpt-4o-mini",
  params: { temperature: 0 },
  responseSchema: proposalSchema,
  callIndex: 0,
});
const proposal = { action: "approve", reason: "within the 2 % tolerance", facts: ["invoice.total", "po.total"] };
const raw = JSON.stringify(proposal);

const call: AgentCallRecord = {
  id: "call-7",
  runId: "run-1",
  superstep: 3,
  executor: "classify",
  request: { messages: built.messages, model: built.model, params: built.params, responseSchema: built.responseSchema },
  hash: built.hash,
  provider: "scripted",
  mode: "scripted",
  raw,
  proposal,
  at: "2026-12-01T07:00:00.000Z",
  durationMs: 12,
};
const verdict: VerdictRecord = {
  id: "verdict-7",
  runId: "run-1",
  superstep: 4,
  executor: "commitInvoice",
  agentCallId: "call-7",
  proposal,
  rules: [{ name: "withinTolerance", ok: true, message: "1.7 % <= 2 %" }],
  verdict: "accepted",
  reason: "all rules passed",
  diff: { decision: { before: undefined, after: "approve" } },
  at: "2026-12-01T07:00:01.000Z",
};
const source: EvalCaseSource = {
  caseFile: "/cases/INV-2291.casefile",
  workflow: { name: "invoice-review", version: 2 },
  call,
  verdict,
  facts: {
    "invoice.total": {
      value: 1200,
      provenance: { source: "erp", sourceVersion: "v7", readAt: "2026-12-01T06:59:00.000Z" },
    },
    "po.total": { value: 1180, provenance: { source: "erp", sourceVersion: "v3", readAt: "2026-12-01T06:59:00.000Z" } },
  },
  rules: [
    {
      id: "tolerance",
      statement: "Approve when the invoice is within 2 % of the PO",
      value: 0.02,
      proposedBy: "agent:review",
      confirmedBy: "maria",
      confirmedAt: "2026-11-30T10:00:00.000Z",
    },
  ],
  rulesFrom: "agent call",
};

const accepted = evalCaseFromRecords(source);
const rejectedEarly = evalCaseFromRecords({
  ...source,
  verdict: undefined,
  call: {
    ...call,
    id: "call-8",
    raw: "not json {",
    proposal: undefined,
    rejection: { code: "INVALID_JSON", message: "answer is not JSON" },
  },
});
const corrected = correctExpected(accepted, {
  proposal: { action: "hold", reason: "PO line missing", facts: ["po.total"] },
  verdict: "accepted",
  note: "the PO had a missing line",
});
const allCases: EvalCase[] = [accepted, rejectedEarly, corrected];

describe("eval cases", () => {
  describe("from records", () => {
    it("holds the exact request, facts, rules, answer, expected outcome and provenance", () => {
      assert.deepEqual(EvalCaseSchema.parse(accepted), accepted);
      assert.equal(accepted.id, "run-1-classify-3");
      assert.deepEqual(accepted.workflow, { name: "invoice-review", version: 2 });
      assert.equal(accepted.step, "classify");
      assert.deepEqual(accepted.request, { ...call.request, hash: built.hash });
      assert.equal(accepted.answer, raw);
      assert.deepEqual(accepted.expected, { action: "approve", verdict: "accepted", proposal });
      assert.deepEqual(accepted.provenance, {
        caseFile: "/cases/INV-2291.casefile",
        runId: "run-1",
        superstep: 3,
        agentCallId: "call-7",
      });
      assert.equal(accepted.facts["invoice.total"]!.provenance.sourceVersion, "v7");
      assert.equal(accepted.rules[0]!.id, "tolerance");
    });

    it("keeps the state the commit step read, when the export gives it, and has no commitState key otherwise", () => {
      // Kills evalCaseFromRecords's `...(src.commitState ? { commitState } : {})` as `{}`.
      assert.deepEqual(evalCaseFromRecords({ ...source, commitState: { variance: 0.017 } }).commitState, { variance: 0.017 });
      assert.equal("commitState" in accepted, false, "absent, not undefined, so the JSON has no such key");
    });

    it("expects escalation with no proposal when the answer was rejected before the commit step", () => {
      assert.deepEqual(rejectedEarly.expected, { action: null, verdict: "escalated", proposal: null });
      assert.equal(rejectedEarly.answer, "not json {");
    });

    it("refuses a call with no answer, or with neither verdict nor rejection, naming the call and step", () => {
      assert.throws(
        () => evalCaseFromRecords({ ...source, call: { ...call, raw: undefined } }),
        (e: unknown) =>
          isCasefileError(e) &&
          e.code === "USAGE" &&
          /agent call call-7 \(step "classify"\) has no recorded answer/.test(e.message) &&
          e.details.agentCallId === "call-7",
      );
      assert.throws(
        () => evalCaseFromRecords({ ...source, verdict: undefined }),
        (e: unknown) => isCasefileError(e) && e.code === "USAGE" && /neither a verdict nor a rejection/.test(e.message),
      );
    });

    it("lets the developer correct the expected outcome, marking it corrected and leaving the original alone", () => {
      assert.equal(corrected.expected.action, "hold");
      assert.equal(corrected.expected.corrected, true);
      assert.equal(corrected.expected.note, "the PO had a missing line");
      assert.equal(accepted.expected.action, "approve");
      assert.equal(accepted.expected.corrected, undefined);
      assert.equal(correctExpected(accepted, { verdict: "escalated" }).expected.action, "approve");
    });
  });

  describe("own JSON", () => {
    it("round-trips every case exactly", () => {
      for (const c of allCases) assert.deepEqual(parseOwnJson(toOwnJson(c), "case.json"), c);
    });

    it("names the file and the path of each bad field", () => {
      const bad = JSON.parse(toOwnJson(accepted)) as Record<string, unknown>;
      (bad.expected as Record<string, unknown>).verdict = "maybe";
      (bad.request as { messages: unknown[] }).messages[1] = { role: "tool", content: 3 };
      assert.throws(
        () => parseOwnJson(JSON.stringify(bad), "evals/inv.json"),
        (e: unknown) => {
          assert.ok(isCasefileError(e) && e.code === "INVALID_INPUT", 'expected: isCasefileError(e) && e.code === "INVALID_INPUT"');
          assert.match(e.message, /^evals\/inv\.json is not a valid eval case/);
          assert.match(e.message, /expected\.verdict/);
          assert.match(e.message, /request\.messages\.1\.role/);
          assert.match(e.message, /request\.messages\.1\.content/);
          return true;
        },
      );
      assert.throws(() => parseOwnJson("{", "evals/broken.json"), /evals\/broken\.json is not valid JSON/);
    });
  });

  describe("OpenAI evals JSONL", () => {
    const graded = [accepted, corrected];
    const jsonl = toOpenAIEvalsJsonl(graded);

    it("writes one line per case whose ideal is the expected action, which a string grader can match, and the proposal less its reason", () => {
      const lines = jsonl.trimEnd().split("\n");
      assert.equal(lines.length, 2, "one line per case");
      const samples = lines.map((l) => JSON.parse(l) as { input: unknown; ideal: unknown; expected_proposal: unknown });
      assert.deepEqual(
        samples.map((s) => Object.keys(s)),
        [
          ["input", "ideal", "expected_proposal"],
          ["input", "ideal", "expected_proposal"],
        ],
      );
      assert.deepEqual(
        samples.map((s) => s.ideal),
        ["approve", "hold"],
      );
      assert.deepEqual(samples[0]!.input, accepted.request.messages);
      // `reason` is free text (a bare string in the proposal schema): no exact grader could pass it.
      assert.deepEqual(samples[0]!.expected_proposal, { action: "approve", facts: ["invoice.total", "po.total"] });
      assert.deepEqual(samples[1]!.expected_proposal, { action: "hold", facts: ["po.total"] });
    });

    it("parses back the messages, the expected action and the checkable proposal", () => {
      assert.deepEqual(parseOpenAIEvalsJsonl(jsonl, "cases.jsonl"), [
        {
          request: { messages: accepted.request.messages },
          expected: { action: "approve", proposal: { action: "approve", facts: ["invoice.total", "po.total"] } },
        },
        {
          request: { messages: corrected.request.messages },
          expected: { action: "hold", proposal: { action: "hold", facts: ["po.total"] } },
        },
      ]);
    });

    it("refuses a case expecting no valid proposal, which has no action to grade, naming the case and the formats that hold it", () => {
      assert.throws(
        () => toOpenAIEvalsJsonl([rejectedEarly]),
        (e: unknown) =>
          isCasefileError(e) &&
          e.code === "USAGE" &&
          e.message ===
            "eval case run-1-classify-3 expects no valid proposal (the answer is rejected), which a grader of the action cannot check: export it with --format json or promptfoo",
      );
    });

    it("names the line at fault", () => {
      const text = jsonl + '{"input": "hello", "ideal": "approve", "expected_proposal": {}}\n';
      assert.throws(() => parseOpenAIEvalsJsonl(text, "cases.jsonl"), /cases\.jsonl line 3 is not a valid eval case:\n {2}- input/);
    });
  });

  describe("OpenAI Evals API items and config", () => {
    // The shapes against the openai package's types: test/unit/cli/openaiEvalsExport.test.ts.
    it("writes one item line per case: its messages, the expected action and verdict, the proposal less its reason", () => {
      const lines = toOpenAIEvalItemsJsonl([accepted, corrected]).trimEnd().split("\n");
      assert.deepEqual(
        lines.map((l) => JSON.parse(l) as unknown),
        [
          {
            item: {
              case_id: "run-1-classify-3",
              input: accepted.request.messages,
              expected_action: "approve",
              expected_verdict: "accepted",
              expected_proposal: { action: "approve", facts: ["invoice.total", "po.total"] },
            },
          },
          {
            item: {
              case_id: "run-1-classify-3",
              input: corrected.request.messages,
              expected_action: "hold",
              expected_verdict: "accepted",
              expected_proposal: { action: "hold", facts: ["po.total"] },
            },
          },
        ],
      );
      assert.throws(() => toOpenAIEvalItemsJsonl([rejectedEarly]), /expects no valid proposal/);
    });

    it("configures an eval over those items with a string_check on the action, and a run of the recorded model", () => {
      const { eval: created, run } = toOpenAIEvalConfig([accepted]);
      assert.equal(created.name, "invoice-review v2 / classify");
      assert.deepEqual(created.metadata, { source: "casefile export-eval", workflow: "invoice-review", step: "classify" });
      assert.deepEqual(created.data_source_config, {
        type: "custom",
        include_sample_schema: true,
        item_schema: {
          type: "object",
          properties: {
            case_id: { type: "string" },
            input: {
              type: "array",
              items: {
                type: "object",
                properties: { role: { type: "string", enum: ["system", "user", "assistant"] }, content: { type: "string" } },
                required: ["role", "content"],
              },
            },
            expected_action: { type: "string", enum: ["approve", "hold", "escalate"] },
            expected_verdict: { type: "string", enum: ["accepted", "rejected", "escalated"] },
            expected_proposal: { type: "object" },
          },
          required: ["case_id", "input", "expected_action", "expected_verdict", "expected_proposal"],
        },
      });
      assert.deepEqual(created.testing_criteria, [
        {
          type: "string_check",
          name: "action",
          input: "{{sample.output_json.action}}",
          operation: "eq",
          reference: "{{item.expected_action}}",
        },
      ]);
      const { $schema: _draft, ...schema } = accepted.request.responseSchema as Record<string, Json>;
      assert.deepEqual(run, {
        name: "invoice-review v2 / classify: gpt-4o-mini",
        data_source: {
          type: "completions",
          model: "gpt-4o-mini",
          input_messages: { type: "item_reference", item_reference: "item.input" },
          sampling_params: { temperature: 0, response_format: { type: "json_schema", json_schema: { name: "proposal", schema } } },
          source: { type: "file_content", content: [JSON.parse(toOpenAIEvalItemsJsonl([accepted])) as object] },
        },
      });
    });

    it("takes the recorded sampling parameters the API has, max_tokens as max_completion_tokens, and an action that is no enum as a string", () => {
      const params = { temperature: 0.2, top_p: 0.9, seed: 7, max_tokens: 300, frequency_penalty: 1 };
      const loose = {
        ...accepted,
        request: { ...accepted.request, params, responseSchema: { type: "object", properties: { action: { type: "string" } } } },
      };
      const { eval: created, run } = toOpenAIEvalConfig([loose]);
      const source = run.data_source as { sampling_params?: Record<string, unknown> };
      const { response_format: _format, ...sampling } = source.sampling_params!;
      assert.deepEqual(sampling, { temperature: 0.2, top_p: 0.9, seed: 7, max_completion_tokens: 300 });
      const config = created.data_source_config as unknown as { item_schema: { properties: Record<string, unknown> } };
      assert.deepEqual(config.item_schema.properties.expected_action, { type: "string" });
      assert.throws(() => toOpenAIEvalConfig([]), /needs at least one case/);
    });
  });

  describe("promptfoo YAML", () => {
    const text = toPromptfooYaml(allCases);
    const tests = parseYaml(text) as {
      description: string;
      vars: Record<string, unknown>;
      assert: { type: string; value: unknown }[];
      metadata: { casefile: Record<string, unknown> };
    }[];

    it("round-trips every case exactly", () => {
      assert.deepEqual(parsePromptfooYaml(text, "cases.yaml"), allCases);
    });

    it("writes no YAML aliases for values a case holds twice, and reads a file of one test that is not a list", () => {
      // Kills `aliasDuplicateObjects: false` as true, and parsePromptfooYaml's `[raw]` for a single test.
      const shared = { variance: 0.017 };
      const twice = {
        ...accepted,
        commitState: shared,
        provenance: { ...accepted.provenance },
        rules: [{ id: "r", statement: "s", value: shared }],
      };
      const yaml = toPromptfooYaml([twice]);
      assert.doesNotMatch(yaml, /[&*]a\d/, "no anchors or aliases (readers that do not follow them would see null)");
      assert.deepEqual(parsePromptfooYaml(yaml, "one.yaml"), [twice]);
      const single = stringifyYaml((parseYaml(text) as unknown[])[0]);
      assert.deepEqual(parsePromptfooYaml(single, "single.yaml"), [accepted]);
    });

    it("names the root when a test is not an object at all", () => {
      assert.throws(() => parsePromptfooYaml("42\n", "n.yaml"), /n\.yaml test 0 is not a valid eval case:\n {2}- \(root\): /);
    });

    it("is a list of promptfoo test cases with string vars, an is-json assert on the schema and an action check", () => {
      assert.equal(tests.length, 3);
      assert.match(text, /^# Casefile eval cases as promptfoo tests/);
      assert.doesNotMatch(text, /^\s*[&*]\w|: [&*]\w/m, "no YAML anchors or aliases");
      const t = tests[0]!;
      assert.equal(t.description, "invoice-review v2 / classify: expect approve (accepted)");
      // promptfoo accepts no null var and expands array vars into several tests.
      for (const v of tests.flatMap((x) => Object.values(x.vars))) assert.equal(typeof v, "string");
      assert.deepEqual(JSON.parse(t.vars.messages as string), accepted.request.messages);
      assert.equal(t.vars.expected_action, "approve");
      assert.equal("expected_action" in tests[1]!.vars, false);
      assert.deepEqual(
        t.assert.map((a) => a.type),
        ["is-json", "javascript"],
      );
      const schema = t.assert[0]!.value as Record<string, unknown>;
      assert.equal(schema.type, "object");
      assert.equal("$schema" in schema, false);
      assert.deepEqual(t.metadata.casefile.provenance, accepted.provenance);
    });

    it("has an action check that passes the expected action and fails another", () => {
      const check = new Function("output", "context", `return (${tests[0]!.assert[1]!.value as string});`) as (
        o: string,
        c: unknown,
      ) => boolean;
      const context = { vars: tests[0]!.vars };
      assert.equal(check(accepted.answer, context), true);
      assert.equal(check(JSON.stringify({ ...proposal, action: "hold" }), context), false);
    });

    it("takes a correction made in the YAML", () => {
      const edited = parseYaml(text) as typeof tests;
      edited[0]!.vars.expected_action = "escalate";
      edited[0]!.vars.expected_proposal = JSON.stringify({ action: "escalate", reason: "new supplier", facts: [] });
      const back = parsePromptfooYaml(stringifyYaml(edited), "edited.yaml");
      assert.equal(back[0]!.expected.action, "escalate");
      assert.deepEqual(back[0]!.expected.proposal, { action: "escalate", reason: "new supplier", facts: [] });
      assert.deepEqual(back[0]!.request, accepted.request);
    });

    it("names the file, test and field at fault", () => {
      const broken = parseYaml(text) as typeof tests;
      delete (broken[1]!.metadata.casefile as Record<string, unknown>).step;
      assert.throws(
        () => parsePromptfooYaml(stringifyYaml(broken), "cases.yaml"),
        /cases\.yaml test 1 is not a valid eval case:\n {2}- step/,
      );
      assert.throws(() => parsePromptfooYaml("- vars: [", "bad.yaml"), /bad\.yaml is not valid YAML/);
    });
  });
});
