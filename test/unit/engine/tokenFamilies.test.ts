import assert from "node:assert/strict";
import { isCasefileError } from "../../../src/engine/errors";
import { checkBudget, encodingFor } from "../../../src/engine/tokens";

/**
 * Which tokenizer an agent call's recorded count is made with, for model names as users write
 * them (a provider prefix, capitals, a space before or after, Azure's "gpt-35", local names that only
 * look alike), and the details of a hard-budget refusal: each row names the slip in tokens.ts
 * (an anchor or an alternative of the family patterns) it catches.
 */

describe("encodingFor: the family a model name belongs to", () => {
  for (const [model, expected] of [
    ["chatgpt-4o-latest", "o200k_base"],
    ["gpt-4.5-preview", "o200k_base"],
    ["gpt-oss-20b", "o200k_base"],
    ["gpt-5.1", "o200k_base"],
    ["gpt-4.1-nano", "o200k_base"],
    ["o3_mini", "o200k_base"],
    ["o4:latest", "o200k_base"],
    ["o3.1", "o200k_base"],
    ["GPT-4O ", "o200k_base"],
    [" gpt-4o", "o200k_base"],
    ["azure/ gpt-4-turbo", "cl100k_base"],
    ["openai/o1", "o200k_base"],
    ["azure/gpt-35-turbo", "cl100k_base"],
    ["gpt-3.5-turbo-16k", "cl100k_base"],
    ["text-embedding-3-small", "cl100k_base"],
    ["gpt-4o2", "cl100k_base"],
    ["gpt-4.10", "cl100k_base"],
    ["gpt-40", "cl100k_base"],
    ["o3pro", "approx:o200k_base"],
    ["o1x", "approx:o200k_base"],
    ["my-gpt-4o", "approx:o200k_base"],
    ["ollama", "approx:o200k_base"],
    ["my-gpt-4", "approx:o200k_base"],
    ["embedding-gpt-35", "approx:o200k_base"],
    ["gpt3.5", "approx:o200k_base"],
  ] as const) {
    it(`${JSON.stringify(model)} counts with ${expected}`, () => {
      const { encoding, approximate } = encodingFor(model);
      assert.equal(approximate ? `approx:${encoding}` : encoding, expected);
    });
  }
});

describe("checkBudget: a refusal's details hold only the budgets there are", () => {
  it("a hard budget alone: no soft and no summarisedFrom in the details, and the message word for word", () => {
    assert.throws(
      () => checkBudget(12, { hard: 10 }, "classify"),
      (e: unknown) => {
        assert.ok(isCasefileError(e), `a CasefileError: ${String(e)}`);
        assert.equal(e.message, 'step "classify": context is 12 tokens, above the hard budget of 10 tokens; the model was not called');
        assert.deepEqual(e.details, { step: "classify", count: 12, hard: 10 });
        return true;
      },
    );
  });

  it("no budget at all and a soft budget only at its count: nothing to say", () => {
    assert.equal(checkBudget(1_000_000, {}, "classify"), undefined);
    assert.equal(checkBudget(10, { soft: 10 }, "classify"), undefined);
    assert.equal(checkBudget(11, { soft: 10 }, "classify"), 'step "classify": context is 11 tokens, above the soft budget of 10 tokens');
  });
});
