import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { root } from "./helpers";

/**
 * The tokenizer as the CLI, the runner and the inspector load it from dist/ (npm run build):
 * each encoding's vendor bundle carries the package's rank table as JSON (esbuild.mjs,
 * encodingEntry) instead of the package's module. A count recorded by a run must be the count
 * the package itself gives, for every kind of text a context holds.
 */
interface Encoding {
  countTokens(text: string, options?: { disallowedSpecial?: Set<string> }): number;
  encode(text: string, options?: { disallowedSpecial?: Set<string> }): number[];
  decode(tokens: number[]): string;
}

const texts = [
  "",
  "hello world",
  "Invoice INV-2291 from Müller GmbH: 12 400,00 € — PO 4471 — 日本語の注記あり 🚚",
  "a pasted log line with <|endoftext|> and <|im_start|> in it",
  "\u0000\u0001 bytes \uD83D\uDE00 \u2028 тұрған 彭 \t\r\n",
  readFileSync(path.join(root, "README.md"), "utf8"),
];

describe("the tokenizer bundles in dist/", () => {
  for (const name of ["o200k_base", "cl100k_base"]) {
    it(`vendor-${name}.js counts and encodes every text as gpt-tokenizer's ${name} does`, () => {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const bundled = require(path.join(root, "dist", `vendor-${name}.js`)) as Encoding;
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const pkg = require(`gpt-tokenizer/encoding/${name}`) as Encoding;
      const plain = { disallowedSpecial: new Set<string>() };
      for (const t of texts) {
        assert.equal(bundled.countTokens(t, plain), pkg.countTokens(t, plain), `count of ${JSON.stringify(t.slice(0, 40))}`);
        assert.deepEqual(bundled.encode(t, plain), pkg.encode(t, plain), `tokens of ${JSON.stringify(t.slice(0, 40))}`);
        assert.equal(bundled.decode(bundled.encode(t, plain)), t, `round trip of ${JSON.stringify(t.slice(0, 40))}`);
      }
    });
  }
});
