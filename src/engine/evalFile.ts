import { CasefileError } from "./errors";
import { parseOwnJson, parsePromptfooYaml, type EvalCase } from "./evalCase";

/**
 * An eval file's text as eval cases, whatever the file is called: the format is told from the
 * content. Pure (text in, cases out), so `casefile eval` (which reads the file) and the editor's
 * Testing view (which lists the workspace's cases without running anything) read files alike.
 */

/**
 * A JSON object is our eval case; a JSON array, an object with `vars`, or any other YAML is a
 * promptfoo test list; lines that are each a JSON object (or one object with `input` and `ideal`,
 * or `item`) are OpenAI evals JSONL, and an object with `eval.data_source_config` the hosted
 * eval's config: "openai-jsonl" for both.
 */
export function sniffEvalFormat(text: string): "json" | "promptfoo" | "openai-jsonl" {
  const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);
  const isJsonlLine = (v: unknown) =>
    isObject(v) &&
    (("input" in v && "ideal" in v) || ("item" in v && isObject(v.item)) || (isObject(v.eval) && "data_source_config" in v.eval));
  let whole: unknown;
  try {
    whole = JSON.parse(text);
  } catch {
    const lines = text.split("\n").filter((l) => l.trim() !== "");
    const jsonLines =
      lines.length > 0 &&
      lines.every((l) => {
        try {
          return isObject(JSON.parse(l));
        } catch {
          return false;
        }
      });
    // Not one JSON document: JSON lines, or YAML (a parse error there names the line).
    return jsonLines ? "openai-jsonl" : "promptfoo";
  }
  if (Array.isArray(whole) || (isObject(whole) && "vars" in whole)) return "promptfoo";
  if (isJsonlLine(whole)) return "openai-jsonl";
  return "json";
}

/** The cases of one eval file's text; OpenAI evals files are refused, as they hold too little to evaluate. */
export function evalCasesOfText(text: string, file: string): EvalCase[] {
  const format = sniffEvalFormat(text);
  if (format === "openai-jsonl") {
    throw new CasefileError(
      "USAGE",
      `${file}: an OpenAI evals file holds only the messages and the expected action, not the facts and verdict casefile eval checks; export with --format json or promptfoo`,
      { file },
    );
  }
  return format === "promptfoo" ? parsePromptfooYaml(text, file) : [parseOwnJson(text, file)];
}
