import { readFileSync } from "node:fs";
import path from "node:path";
import { CasefileError } from "./errors";
import { buildRankTable, RankTable, type RankEntry } from "./rankTable";
import type { ChatMessage } from "./records";

/**
 * Token counting for the context an agent step is about to send, with a real BPE tokenizer
 * (gpt-tokenizer, pure JS) chosen by model family. Called by the agent step right after the
 * request is built and before the model is called, so the budget check can refuse the call.
 *
 * Encodings are large tables: each one is required the first time a model of its family is
 * counted and kept for the life of the process, so importing this module costs nothing and every
 * count after the first is synchronous and fast.
 */

export type EncodingName = "o200k_base" | "cl100k_base";

/** What counting needs of an encoding. */
interface Encoding {
  countTokens(text: string): number;
}

/**
 * Chat framing, as in OpenAI's token-counting recipe for the chat models: every message is
 * wrapped as `<|im_start|>{role}<|im_sep|>{content}<|im_end|>` (3 tokens plus the role), and
 * every reply is primed with `<|im_start|>assistant<|im_sep|>` (3 tokens).
 */
const tokensPerMessage = 3;
const replyPrimingTokens = 3;

/** Tokenizer label for models whose tokenizer we do not ship; see `encodingFor`. */
const approximatePrefix = "approx:";

const loaded = new Map<EncodingName, Encoding>();

/**
 * An encoding, the first time a model of its family is counted: gpt-tokenizer's own BPE (its
 * split regex and merge loop, so counts are the package's) over the rank table in its compact
 * form (src/engine/rankTable.ts), read from beside the bundle (esbuild.mjs writes
 * dist/<name>.ranks) or, running from source, built from the package's ranks.
 */
function loadEncoding(name: EncodingName): Encoding {
  let enc = loaded.get(name);
  if (!enc) {
    const { BytePairEncodingCore } =
      require("gpt-tokenizer/cjs/BytePairEncodingCore") as typeof import("gpt-tokenizer/cjs/BytePairEncodingCore");
    const params =
      name === "o200k_base"
        ? (
            require("gpt-tokenizer/cjs/encodingParams/o200k_base") as typeof import("gpt-tokenizer/cjs/encodingParams/o200k_base")
          ).O200KBase([])
        : (
            require("gpt-tokenizer/cjs/encodingParams/cl100k_base") as typeof import("gpt-tokenizer/cjs/encodingParams/cl100k_base")
          ).Cl100KBase([]);
    const table = rankTable(name);
    const core = new BytePairEncodingCore(params);
    // The core's only rank lookups (private in its types): a whole split piece by its text, and
    // byte pairs while merging. Every other lookup goes through these two.
    const lookups = core as unknown as { getBpeRankFromString(key: string): unknown; getBpeRankFromBytes(key: Uint8Array): unknown };
    lookups.getBpeRankFromString = (key) => table.rankOfString(key);
    lookups.getBpeRankFromBytes = (key) => table.rankOfBytes(key);
    // No special token is allowed: model text may legitimately hold "<|endoftext|>" (a pasted
    // document, a log line), counted as the ordinary text it is, as the API counts user content.
    enc = { countTokens: (text) => core.countNative(text, undefined) };
    loaded.set(name, enc);
  }
  return enc;
}

function rankTable(name: EncodingName): RankTable {
  let data: Uint8Array | undefined;
  try {
    data = readFileSync(path.join(__dirname, `${name}.ranks`));
  } catch {
    // No table beside this file: running from source (tests, tsx), not from dist/.
  }
  const table = data && RankTable.from(data);
  if (table) return table;
  // Literal paths, external to every bundle (esbuild.mjs): the package's ranks as JavaScript.
  const ranks =
    name === "o200k_base"
      ? (require("gpt-tokenizer/cjs/bpeRanks/o200k_base") as { default: RankEntry[] }).default
      : (require("gpt-tokenizer/cjs/bpeRanks/cl100k_base") as { default: RankEntry[] }).default;
  return RankTable.from(buildRankTable(ranks))!;
}

/**
 * Which encoding a model name uses. Provider prefixes ("openai/gpt-4o", "azure/…") are ignored.
 * - o200k_base: gpt-4o, gpt-4.1, gpt-4.5, gpt-5, chatgpt-4o, the o-series (o1, o3, o4…), gpt-oss.
 * - cl100k_base: gpt-4 and gpt-4-turbo, gpt-3.5, the text-embedding models.
 * - anything else (local Llama, Mistral, Qwen names, Azure deployment names): o200k_base as an
 *   approximation, labelled `approx:o200k_base` so the record shows the count is an estimate.
 *   Their own tokenizers are not available as maintained pure-JS packages; o200k is the closest
 *   modern large-vocabulary BPE and errs on the side of a slightly higher count than cl100k.
 */
export function encodingFor(model: string): { encoding: EncodingName; approximate: boolean } {
  const name = (model.split("/").pop() ?? model).trim().toLowerCase();
  if (/^(gpt-4o|chatgpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|gpt-oss|o\d)(\b|[-.:_]|$)/.test(name)) {
    return { encoding: "o200k_base", approximate: false };
  }
  if (/^(gpt-4|gpt-3\.5|gpt-35|text-embedding-)/.test(name)) {
    return { encoding: "cl100k_base", approximate: false };
  }
  return { encoding: "o200k_base", approximate: true };
}

/**
 * Tokens the messages take as a chat request to `model`, framing included. `tokenizer` names the
 * encoding used (`approx:` prefixed when the model is not a known OpenAI family) and is recorded
 * beside the count in the agent call record.
 */
export function countTokens(messages: readonly ChatMessage[], model: string): { count: number; tokenizer: string } {
  const { encoding, approximate } = encodingFor(model);
  const enc = loadEncoding(encoding);
  let count = replyPrimingTokens;
  for (const m of messages) {
    count += tokensPerMessage + enc.countTokens(m.role) + enc.countTokens(m.content);
  }
  return { count, tokenizer: approximate ? approximatePrefix + encoding : encoding };
}

export interface TokenBudget {
  /** Above this, the step runs and a warning is recorded. */
  soft?: number;
  /** Above this, the step is refused before the model is called. */
  hard?: number;
}

/**
 * Checks a counted context against the step's budget. Called by the agent step after
 * `countTokens`: returns a warning (for the run's events) when above the soft budget, throws
 * TOKEN_BUDGET_EXCEEDED when above the hard one, and returns undefined otherwise. A count equal
 * to a budget is within it.
 */
export function checkBudget(count: number, budget: TokenBudget, step: string, summarisedFrom?: number): string | undefined {
  // After the step's summarise hook shortened the context, the messages name both counts.
  const context =
    summarisedFrom === undefined ? `context is ${count} tokens` : `context is ${count} tokens after summarising (${summarisedFrom} before)`;
  if (budget.hard !== undefined && count > budget.hard) {
    throw new CasefileError(
      "TOKEN_BUDGET_EXCEEDED",
      `step "${step}": ${context}, above the hard budget of ${budget.hard} tokens; the model was not called`,
      {
        step,
        count,
        hard: budget.hard,
        ...(budget.soft !== undefined ? { soft: budget.soft } : {}),
        ...(summarisedFrom !== undefined ? { summarisedFrom } : {}),
      },
    );
  }
  if (budget.soft !== undefined && count > budget.soft) {
    return `step "${step}": ${context}, above the soft budget of ${budget.soft} tokens`;
  }
  return undefined;
}
