import type { EvalCreateParams } from "openai/resources/evals/evals";
import type { RunCreateParams } from "openai/resources/evals/runs/runs";
import { checkableProposal, gradedAction, withoutSchemaKeyword, type EvalCase } from "./evalCase";
import type { Json } from "./records";

/**
 * An eval case in the shape of OpenAI's hosted Evals API (`client.evals`): the data as `item`
 * lines (JSONL, what the Files API takes with purpose "evals"), and beside them a config holding
 * the eval (a custom data source whose `item_schema` describes those lines, and a `string_check`
 * grader comparing the model's action with the expected one) and a run that samples the recorded
 * model on the items' messages with the proposal schema as its response format.
 *
 * The types are the `openai` package's own, so a shape the API does not take fails to compile.
 */

/** One item: the messages the step got, the expected action, and what else a grader can use. */
export type OpenAIEvalItem = {
  case_id: string;
  input: EvalCase["request"]["messages"];
  expected_action: string;
  expected_verdict: EvalCase["expected"]["verdict"];
  /** The expected proposal less its free-text fields (see checkableProposal). */
  expected_proposal: Json;
};

/** What `--format openai-evals` writes beside the items: `client.evals.create(config.eval)`, then `client.evals.runs.create(id, config.run)`. */
export interface OpenAIEvalConfig {
  eval: EvalCreateParams;
  run: RunCreateParams;
}

export function toOpenAIEvalItem(c: EvalCase): { item: OpenAIEvalItem } {
  return {
    item: {
      case_id: c.id,
      input: c.request.messages,
      expected_action: gradedAction(c),
      expected_verdict: c.expected.verdict,
      expected_proposal: checkableProposal(c),
    },
  };
}

/** The items file: one `{"item": …}` line per case. */
export function toOpenAIEvalItemsJsonl(cases: readonly EvalCase[]): string {
  return cases.map((c) => JSON.stringify(toOpenAIEvalItem(c)) + "\n").join("");
}

/**
 * The eval and run for the cases of one step (the first case gives the step's proposal schema and
 * model). The run carries the items inline (`file_content`); upload the items file and use
 * `{ type: "file_id", id }` instead to keep them in one place.
 */
export function toOpenAIEvalConfig(cases: readonly EvalCase[]): OpenAIEvalConfig {
  const first = cases[0];
  if (!first) throw new Error("toOpenAIEvalConfig needs at least one case");
  const actions = enumOf(first.request.responseSchema, "action");
  const name = `${first.workflow.name} v${first.workflow.version} / ${first.step}`;
  const itemSchema: Record<string, unknown> = {
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
      expected_action: actions ? { type: "string", enum: actions } : { type: "string" },
      expected_verdict: { type: "string", enum: ["accepted", "rejected", "escalated"] },
      expected_proposal: { type: "object" },
    },
    required: ["case_id", "input", "expected_action", "expected_verdict", "expected_proposal"],
  };
  const schema = withoutSchemaKeyword(first.request.responseSchema);
  return {
    eval: {
      name,
      metadata: { source: "casefile export-eval", workflow: first.workflow.name, step: first.step },
      data_source_config: { type: "custom", item_schema: itemSchema, include_sample_schema: true },
      testing_criteria: [
        {
          type: "string_check",
          name: "action",
          input: "{{sample.output_json.action}}",
          operation: "eq",
          reference: "{{item.expected_action}}",
        },
      ],
    },
    run: {
      name: `${name}: ${first.request.model}`,
      data_source: {
        type: "completions",
        model: first.request.model,
        input_messages: { type: "item_reference", item_reference: "item.input" },
        sampling_params: {
          ...samplingParams(first.request.params),
          response_format: {
            type: "json_schema",
            json_schema: { name: "proposal", schema: (schema ?? {}) as Record<string, unknown> },
          },
        },
        source: { type: "file_content", content: cases.map(toOpenAIEvalItem) },
      },
    },
  };
}

/** The recorded model parameters the completions data source takes. */
function samplingParams(params: Record<string, Json>): {
  temperature?: number;
  top_p?: number;
  seed?: number;
  max_completion_tokens?: number;
} {
  const num = (v: Json | undefined) => (typeof v === "number" ? v : undefined);
  const out = {
    temperature: num(params.temperature),
    top_p: num(params.top_p),
    seed: num(params.seed),
    max_completion_tokens: num(params.max_completion_tokens) ?? num(params.max_tokens),
  };
  return Object.fromEntries(Object.entries(out).filter(([, v]) => v !== undefined));
}

function enumOf(schema: Json, key: string): string[] | undefined {
  if (!schema || typeof schema !== "object" || Array.isArray(schema)) return undefined;
  const props = schema.properties;
  const prop = props && typeof props === "object" && !Array.isArray(props) ? props[key] : undefined;
  const values = prop && typeof prop === "object" && !Array.isArray(prop) ? prop.enum : undefined;
  return Array.isArray(values) && values.every((v) => typeof v === "string") ? (values as string[]) : undefined;
}
