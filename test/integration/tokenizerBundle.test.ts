import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { root } from "./helpers";

/**
 * The tokenizer as the CLI, the runner and the inspector load it from dist/ (npm run build):
 * gpt-tokenizer's BPE over the rank tables esbuild.mjs writes beside the bundles
 * (dist/<encoding>.ranks, src/engine/rankTable.ts) instead of the package's JavaScript ranks.
 * A count recorded by a run must be the count the package itself gives, for every kind of text
 * a context holds.
 */
interface Encoding {
  countTokens(text: string, options?: { disallowedSpecial?: Set<string> }): number;
}
type CountTokens = (messages: { role: string; content: string }[], model: string) => { count: number; tokenizer: string };

const texts = [
  "",
  "hello world",
  "Invoice INV-2291 from Müller GmbH: 12 400,00 € — PO 4471 — 日本語の注記あり 🚚",
  "a pasted log line with <|endoftext|> and <|im_start|> in it",
  "\u0000\u0001 bytes \uD83D\uDE00 \u2028 тұрған 彭 \t\r\n",
  "a lone surrogate \uD83D here and \uDE00 there, Ġ ĉ bytes",
  readFileSync(path.join(root, "README.md"), "utf8"),
];

describe("the tokenizer in dist/", () => {
  for (const [name, model] of [
    ["o200k_base", "gpt-4o"],
    ["cl100k_base", "gpt-4"],
  ] as const) {
    it(`tokenCounter.js counts every text as gpt-tokenizer's ${name} does, from dist/${name}.ranks`, () => {
      // Counted in a process of its own, so what it loaded is its own: the table, not the package's ranks.
      const script = `
        const { countTokens } = require(${JSON.stringify(path.join(root, "dist/tokenCounter.js"))});
        const counts = JSON.parse(process.argv[1]).map((t) => countTokens([{ role: "user", content: t }], ${JSON.stringify(model)}));
        const ranks = Object.keys(require.cache).filter((k) => k.includes("bpeRanks"));
        console.log(JSON.stringify({ counts, ranks }));`;
      const out = execFileSync(process.execPath, ["-e", script, JSON.stringify(texts)], { encoding: "utf8" });
      const { counts, ranks } = JSON.parse(out) as { counts: ReturnType<CountTokens>[]; ranks: string[] };
      assert.deepEqual(ranks, [], "the bundle reads dist's table, not gpt-tokenizer's JavaScript ranks");
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const pkg = require(`gpt-tokenizer/encoding/${name}`) as Encoding;
      const plain = { disallowedSpecial: new Set<string>() };
      texts.forEach((t, i) => {
        // Chat framing: 3 tokens per message plus its role, 3 to prime the reply.
        const expected = 3 + 3 + pkg.countTokens("user", plain) + pkg.countTokens(t, plain);
        assert.deepEqual(counts[i], { count: expected, tokenizer: name }, `count of ${JSON.stringify(t.slice(0, 40))}`);
      });
    });
  }
});
