import assert from "node:assert/strict";
import { isCasefileError } from "../../../src/engine/errors";
import { toOpenAIEvalsJsonl, toOwnJson, toPromptfooYaml } from "../../../src/engine/evalCase";
import { evalCasesOfText, sniffEvalFormat } from "../../../src/engine/evalFile";
import { toOpenAIEvalConfig, toOpenAIEvalItemsJsonl } from "../../../src/engine/openaiEvals";
import { claimCase as evalCase } from "./helpers/evalCaseFixture";

/**
 * `casefile eval <file>` and the editor's Testing view read an eval file whatever it is called:
 * the format is told from the text. A file in the wrong format read as another would give the user
 * a baffling schema error (or no cases at all), so each shape that sits on the border between two
 * formats is pinned here (issue 18: the mutants of evalFile.ts, none of which the engine's tests
 * reached; test/unit/cli/inspect.test.ts sniffs a few files too, outside the mutation run).
 */
describe("eval files: the format told from the text", () => {
  it("reads each file an export writes as the format it was written in", () => {
    assert.equal(sniffEvalFormat(toOwnJson(evalCase)), "json", "our own JSON");
    assert.equal(sniffEvalFormat(toPromptfooYaml([evalCase])), "promptfoo", "promptfoo YAML");
    assert.equal(sniffEvalFormat(toOpenAIEvalsJsonl([evalCase, evalCase])), "openai-jsonl", "OpenAI evals JSONL, two lines");
    assert.equal(sniffEvalFormat(toOpenAIEvalItemsJsonl([evalCase, evalCase])), "openai-jsonl", "hosted Evals API items, two lines");
    assert.equal(sniffEvalFormat(JSON.stringify(toOpenAIEvalConfig([evalCase]), null, 2)), "openai-jsonl", "hosted Evals API config");
  });

  it("takes one JSON object as our case unless it has both input and ideal, an object item, or an eval with a data source", () => {
    assert.equal(sniffEvalFormat('{"input": []}'), "json", "input without ideal is not an OpenAI evals line");
    assert.equal(sniffEvalFormat('{"ideal": "pay"}'), "json", "ideal without input is not an OpenAI evals line");
    assert.equal(sniffEvalFormat('{"input": [], "ideal": "pay"}'), "openai-jsonl", "input and ideal make an OpenAI evals line");
    assert.equal(sniffEvalFormat('{"item": "pay"}'), "json", "an item that is no object is not a hosted Evals API item");
    assert.equal(sniffEvalFormat('{"item": null}'), "json", "a null item is not a hosted Evals API item");
    assert.equal(sniffEvalFormat('{"item": ["pay"]}'), "json", "an item that is a list is not a hosted Evals API item");
    assert.equal(sniffEvalFormat('{"item": {}}'), "openai-jsonl", "an object item is a hosted Evals API item");
    assert.equal(sniffEvalFormat('{"eval": {"name": "x"}}'), "json", "an eval with no data_source_config is not the hosted config");
    assert.equal(sniffEvalFormat('{"eval": "data_source_config"}'), "json", "an eval that is a string is not the hosted config");
    assert.equal(sniffEvalFormat('{"data_source_config": {}}'), "json", "data_source_config outside eval is not the hosted config");
    assert.equal(sniffEvalFormat('{"vars": {}}'), "promptfoo", "one promptfoo test written as a JSON object");
    assert.equal(sniffEvalFormat("[]"), "promptfoo", "a JSON list is a promptfoo test list");
  });

  it("takes lines that are each a JSON object as JSONL, blank lines or lines of spaces between them ignored", () => {
    assert.equal(sniffEvalFormat('{"a": 1}\n{"b": 2}'), "openai-jsonl", "two object lines");
    assert.equal(sniffEvalFormat('{"a": 1}\n\n{"b": 2}\n'), "openai-jsonl", "an empty line between");
    assert.equal(sniffEvalFormat('{"a": 1}\n   \n{"b": 2}\n'), "openai-jsonl", "a line of spaces between");
  });

  it("takes text whose lines are not all JSON objects as YAML, so a YAML error names the line", () => {
    assert.equal(sniffEvalFormat('{"a": 1}\nnull'), "promptfoo", "a null line is no JSON object");
    assert.equal(sniffEvalFormat('{"a": 1}\n[1]'), "promptfoo", "a list line is no JSON object");
    assert.equal(sniffEvalFormat('{"a": 1}\n"x"'), "promptfoo", "a string line is no JSON object");
    assert.equal(sniffEvalFormat('{"a": 1}\n{"b": '), "promptfoo", "a line that is not JSON");
    assert.equal(sniffEvalFormat(""), "promptfoo", "an empty file is no JSONL file");
    assert.equal(sniffEvalFormat("\n  \n"), "promptfoo", "a file of blank lines is no JSONL file");
  });
});

describe("eval files: the cases of a file's text", () => {
  it("gives back the one case of our JSON and every case of a promptfoo file", () => {
    assert.deepEqual(evalCasesOfText(toOwnJson(evalCase), "evals/clm-7.json"), [evalCase]);
    assert.deepEqual(evalCasesOfText(toPromptfooYaml([evalCase, evalCase]), "evals/claims.yaml"), [evalCase, evalCase]);
  });

  it("refuses an OpenAI evals file with USAGE, naming the file and the formats that hold a whole case", () => {
    for (const text of [toOpenAIEvalsJsonl([evalCase]), toOpenAIEvalItemsJsonl([evalCase])])
      assert.throws(
        () => evalCasesOfText(text, "evals/claims.jsonl"),
        (e: unknown) => {
          assert.ok(isCasefileError(e), "a typed error");
          assert.equal(e.code, "USAGE");
          assert.equal(
            e.message,
            "evals/claims.jsonl: an OpenAI evals file holds only the messages and the expected action, not the facts and verdict casefile eval checks; export with --format json or promptfoo",
          );
          assert.deepEqual(e.details, { file: "evals/claims.jsonl" });
          return true;
        },
      );
  });

  it("names the file when its JSON case is not valid, and reads an empty file as YAML holding no valid test", () => {
    assert.throws(() => evalCasesOfText('{"format": "casefile-eval"}', "evals/bad.json"), /evals\/bad\.json is not a valid eval case/);
    assert.throws(() => evalCasesOfText("", "evals/empty.yaml"), /evals\/empty\.yaml test 0 is not a valid eval case/);
  });
});
