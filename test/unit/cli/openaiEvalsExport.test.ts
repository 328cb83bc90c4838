import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { EvalCreateParams } from "openai/resources/evals/evals";
import type { RunCreateParams } from "openai/resources/evals/runs/runs";
import { z } from "zod";
import { main } from "../../../src/cli/main";
import { parseExportEvalResult } from "../../../src/protocol/exportEval";

/**
 * `export-eval --format openai-evals`: the hosted OpenAI Evals API's shape, checked against the
 * `openai` package's own types (node_modules/openai/resources/evals/). The zod schemas below
 * restate those types strictly (an unknown key is an error, as the API makes it); the two
 * assignments under them fail to compile if a schema lets through what the package's types do
 * not. Then `casefile eval` on the folder export-eval filled counts the case once.
 */

const ChatMessage = z.strictObject({ role: z.enum(["system", "user", "assistant"]), content: z.string() });
/** runs.d.ts, CreateEvalCompletionsRunDataSource.FileContent.Content: one line of an items file. */
const ItemLine = z.strictObject({ item: z.record(z.string(), z.unknown()), sample: z.record(z.string(), z.unknown()).optional() });
/** grader-models.d.ts, StringCheckGrader. */
const StringCheckGrader = z.strictObject({
  type: z.literal("string_check"),
  name: z.string(),
  input: z.string(),
  operation: z.enum(["eq", "ne", "like", "ilike"]),
  reference: z.string(),
});
/** evals.d.ts, EvalCreateParams with EvalCreateParams.Custom as its data source config. */
const EvalCreate = z.strictObject({
  name: z.string().optional(),
  metadata: z.record(z.string(), z.string().max(512)).optional(),
  data_source_config: z.strictObject({
    type: z.literal("custom"),
    item_schema: z.record(z.string(), z.unknown()),
    include_sample_schema: z.boolean().optional(),
  }),
  testing_criteria: z.array(StringCheckGrader).min(1),
});
/** runs.d.ts, RunCreateParams with a CreateEvalCompletionsRunDataSource (ItemReference, FileContent, SamplingParams). */
const RunCreate = z.strictObject({
  name: z.string().optional(),
  data_source: z.strictObject({
    type: z.literal("completions"),
    model: z.string().optional(),
    input_messages: z.strictObject({ type: z.literal("item_reference"), item_reference: z.string() }).optional(),
    sampling_params: z
      .strictObject({
        temperature: z.number().optional(),
        top_p: z.number().optional(),
        seed: z.number().optional(),
        max_completion_tokens: z.number().optional(),
        response_format: z
          .strictObject({
            type: z.literal("json_schema"),
            json_schema: z.strictObject({ name: z.string(), schema: z.record(z.string(), z.unknown()).optional() }),
          })
          .optional(),
      })
      .optional(),
    source: z.strictObject({ type: z.literal("file_content"), content: z.array(ItemLine) }),
  }),
});

// What the schemas accept is something the openai package's types accept (a compile-time check).
export const evalShapeIsTheSdks: (v: z.infer<typeof EvalCreate>) => EvalCreateParams = (v) => v;
export const runShapeIsTheSdks: (v: z.infer<typeof RunCreate>) => RunCreateParams = (v) => v;

const workflow = path.resolve(__dirname, "../../fixtures/rules/pallets.ts");

describe("export-eval --format openai-evals", function () {
  this.timeout(60_000);
  let dir: string;
  let caseFile: string;
  const env: NodeJS.ProcessEnv = { USER: "tester" };

  async function cli(args: string[]): Promise<{ code: number; out: string; err: string }> {
    const out: string[] = [];
    const err: string[] = [];
    const code = await main(args, { out: (l) => out.push(l), err: (l) => err.push(l), env });
    return { code, out: out.join("\n"), err: err.join("\n") };
  }

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "casefile-openai-evals-"));
    caseFile = path.join(dir, "case.casefile");
    const ran = await cli(["run", workflow, "--case-file", caseFile]);
    assert.equal(ran.code, 0, ran.err);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("writes item lines and, beside them, an eval (item_schema, string_check on the action) and a run, in the openai package's shapes", async () => {
    const exported = await cli(["export-eval", caseFile, "--step", "1:propose", "--format", "openai-evals", "--json"]);
    assert.equal(exported.code, 0, exported.err);
    const result = parseExportEvalResult(exported.out);
    assert.ok(result.ok, `the --json line parses: ${exported.out}`);
    const { id, path: items, config, format } = result.value;
    assert.equal(format, "openai-evals");
    assert.equal(items, path.join(dir, "evals", `${id}.items.jsonl`), "the items, in evals/ beside the case file");
    assert.equal(config, path.join(dir, "evals", `${id}.openai-eval.json`), "the config, beside the items");

    const lines = readFileSync(items, "utf8").trimEnd().split("\n");
    assert.equal(lines.length, 1, "one item line per case");
    const { item } = ItemLine.parse(JSON.parse(lines[0]!));
    assert.equal(item.case_id, id);
    assert.equal(item.expected_action, "book");
    assert.equal(item.expected_verdict, "escalated", "no rule says cartons per pallet, so the commit step escalated it");
    // The proposal less its free text: `reason` (a bare string) goes, the enumerated action and the number stay.
    assert.deepEqual(Object.keys(item.expected_proposal as object).sort(), ["action", "facts", "pallets"]);
    z.array(ChatMessage).min(1).parse(item.input);

    const written = z.strictObject({ eval: EvalCreate, run: RunCreate }).parse(JSON.parse(readFileSync(config!, "utf8")));
    const itemSchema = written.eval.data_source_config.item_schema as { properties: Record<string, unknown>; required: string[] };
    assert.deepEqual(Object.keys(itemSchema.properties).sort(), Object.keys(item).sort(), "item_schema describes the item lines");
    assert.deepEqual(itemSchema.required.sort(), Object.keys(item).sort(), "every field of an item is required");
    assert.deepEqual(itemSchema.properties.expected_action, { type: "string", enum: ["book"] }, "the actions the step allows");
    assert.deepEqual(written.eval.testing_criteria, [
      {
        type: "string_check",
        name: "action",
        input: "{{sample.output_json.action}}",
        operation: "eq",
        reference: "{{item.expected_action}}",
      },
    ]);
    const source = written.run.data_source;
    assert.deepEqual(
      source.input_messages,
      { type: "item_reference", item_reference: "item.input" },
      "the run asks with each item's messages",
    );
    assert.equal(source.model, "gpt-4o-mini", "the model the step was recorded with");
    assert.deepEqual(source.source.content, [{ item }], "the run carries the same items");
    const schema = source.sampling_params?.response_format?.json_schema.schema as { properties?: object; $schema?: string };
    assert.deepEqual(Object.keys(schema.properties ?? {}), ["action", "reason", "facts", "pallets"], "answers in the proposal schema");
    assert.equal(schema.$schema, undefined, "without the draft keyword");
  });

  it("eval on the folder counts the case once, whatever formats export-eval wrote there, and skips the OpenAI files, said once", async () => {
    for (const format of ["json", "promptfoo", "openai-jsonl"]) {
      const r = await cli(["export-eval", caseFile, "--step", "1:propose", "--format", format]);
      assert.equal(r.code, 0, r.err);
    }
    const evals = path.join(dir, "evals");
    assert.equal(readdirSync(evals).length, 5, `five files: ${readdirSync(evals).join(", ")}`);
    const ran = await cli(["eval", evals]);
    assert.equal(ran.code, 0, ran.out + ran.err);
    assert.match(ran.out, /^1 passed, 0 failed$/m, ran.out);
    const own = readdirSync(evals).find((f) => f.endsWith(".eval.json"))!;
    const id = own.replace(/\.eval\.json$/, "");
    assert.equal(
      ran.err,
      [
        `eval: skipping 3 OpenAI evals file(s) in ${evals} (messages and expected action only)`,
        `eval: ${path.join(evals, `${id}.promptfoo.yaml`)} holds the same case as ${path.join(evals, own)} (${id}): evaluated once`,
      ].join("\n"),
    );
  });
});
