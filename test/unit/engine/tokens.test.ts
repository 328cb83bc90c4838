import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import path from "node:path";
import { isCasefileError } from "../../../src/engine/errors";
import type { ChatMessage } from "../../../src/engine/records";
import { checkBudget, countTokens, encodingFor } from "../../../src/engine/tokens";

const repoRoot = path.resolve(__dirname, "../../..");

const messages: ChatMessage[] = [
  { role: "system", content: "You review supplier invoices. Answer with one JSON proposal." },
  { role: "user", content: "Invoice INV-2291 from Müller GmbH: 12 400,00 € — PO 4471 — 日本語の注記あり 🚚" },
];

describe("countTokens", () => {
  it("counts with o200k_base for the gpt-4o, gpt-4.1, o-series and gpt-5 families", () => {
    for (const model of ["gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-4.1-nano", "o1", "o3-mini", "o4-mini", "gpt-5", "openai/gpt-5-mini"]) {
      assert.equal(countTokens(messages, model).tokenizer, "o200k_base", model);
    }
  });

  it("counts with cl100k_base for gpt-4 and gpt-3.5", () => {
    for (const model of ["gpt-4", "gpt-4-turbo", "gpt-4-0613", "gpt-3.5-turbo"]) {
      assert.equal(countTokens(messages, model).tokenizer, "cl100k_base", model);
    }
  });

  it("gives different counts for the two families on the same text", () => {
    const o200k = countTokens(messages, "gpt-4o").count;
    const cl100k = countTokens(messages, "gpt-4").count;
    assert.notEqual(o200k, cl100k);
    assert.ok(o200k > 20 && cl100k > 20, `${o200k} / ${cl100k}`);
  });

  it("matches the package's own chat encoding for gpt-4o, framing included", () => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { encodeChat } = require("gpt-tokenizer/model/gpt-4o") as { encodeChat(m: ChatMessage[]): number[] };
    assert.equal(countTokens(messages, "gpt-4o").count, encodeChat(messages).length);
  });

  it("adds framing per message: 3 tokens plus the role, plus 3 to prime the reply", () => {
    assert.equal(countTokens([], "gpt-4o").count, 3);
    const one = countTokens([{ role: "user", content: "hello" }], "gpt-4o").count;
    const two = countTokens(
      [
        { role: "user", content: "hello" },
        { role: "user", content: "hello" },
      ],
      "gpt-4o",
    ).count;
    assert.equal(two - one, one - 3);
    assert.equal(one, 3 + 3 + 1 + 1); // "user" and "hello" are one token each
  });

  it("labels the fallback for unknown models such as local Llama names as an approximation", () => {
    const r = countTokens(messages, "llama3.1:8b");
    assert.equal(r.tokenizer, "approx:o200k_base");
    assert.equal(r.count, countTokens(messages, "gpt-4o").count);
    assert.deepEqual(encodingFor("my-azure-deployment"), { encoding: "o200k_base", approximate: true });
    assert.deepEqual(encodingFor("olmo-2"), { encoding: "o200k_base", approximate: true });
  });

  it("counts special-token text in content as ordinary text instead of throwing", () => {
    const r = countTokens([{ role: "user", content: "log line: <|endoftext|> <|im_start|>" }], "gpt-4");
    assert.ok(r.count > 10, "expected: r.count > 10");
  });

  // How fast repeated counts are is measured by `npm run bench:tokens` (test/bench/tokenCount.bench.ts), not asserted here.
});

describe("checkBudget", () => {
  it("returns nothing within budget, including exactly at it", () => {
    assert.equal(checkBudget(100, { soft: 100, hard: 200 }, "classify"), undefined);
    assert.equal(checkBudget(100, {}, "classify"), undefined);
  });

  it("warns above the soft budget with both numbers and the step", () => {
    const w = checkBudget(1500, { soft: 1000, hard: 2000 }, "classify");
    assert.ok(w, "expected: w");
    assert.match(w, /classify/);
    assert.match(w, /1500/);
    assert.match(w, /1000/);
  });

  it("refuses above the hard budget with TOKEN_BUDGET_EXCEEDED, both numbers and the step", () => {
    assert.throws(
      () => checkBudget(2500, { soft: 1000, hard: 2000 }, "classify"),
      (e: unknown) => {
        assert.ok(isCasefileError(e), "expected: isCasefileError(e)");
        assert.equal(e.code, "TOKEN_BUDGET_EXCEEDED");
        assert.match(e.message, /step "classify"/);
        assert.match(e.message, /2500 tokens/);
        assert.match(e.message, /hard budget of 2000/);
        assert.deepEqual(e.details, { step: "classify", count: 2500, hard: 2000, soft: 1000 });
        return true;
      },
    );
  });

  // Kills the mutant "refuse at the hard budget" (tokens.ts checkBudget, `count >= budget.hard`).
  it("a count exactly at the hard budget is within it: no refusal, and only the soft budget's warning", () => {
    assert.equal(checkBudget(10, { hard: 10 }, "s"), undefined);
    assert.equal(
      checkBudget(2000, { soft: 1000, hard: 2000 }, "classify"),
      'step "classify": context is 2000 tokens, above the soft budget of 1000 tokens',
    );
    assert.throws(() => checkBudget(2001, { soft: 1000, hard: 2000 }, "classify"), /2001 tokens, above the hard budget of 2000/);
  });

  it("refuses on a hard budget alone", () => {
    assert.throws(() => checkBudget(11, { hard: 10 }, "s"), /11 tokens, above the hard budget of 10/);
  });
});

/**
 * tokens.ts as a process's first import of it: its encodings not yet built. Every other test here
 * counts with encodings an earlier test built; this one builds them (the split rules and the
 * ranks of each family) while it counts. The module is put back as it was afterwards.
 */
function freshTokens(): typeof import("../../../src/engine/tokens") {
  const id = require.resolve("../../../src/engine/tokens");
  const kept = require.cache[id];
  delete require.cache[id];
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return require(id) as typeof import("../../../src/engine/tokens");
  } finally {
    require.cache[id] = kept;
  }
}

describe("the first count in a process", () => {
  // Text on which the two families split differently (o200k keeps "supplier's" whole, cl100k
  // splits off "'s"), single punctuation pieces, and text outside ASCII.
  const texts = [
    "The supplier's PO wasn't matched; we'll pay it.",
    "Invoice INV-2291 from Müller GmbH: 12 400,00 € — PO 4471 — 日本語の注記あり 🚚",
    "I'M SURE THEY'RE RIGHT, aren't they?",
    "a, b; c.",
  ];

  for (const [name, model] of [
    ["o200k_base", "gpt-4o"],
    ["cl100k_base", "gpt-4"],
  ] as const) {
    it(`builds ${name} with gpt-tokenizer's own split rules and ranks: every count is the package's`, () => {
      const { countTokens: firstCount } = freshTokens();
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const pkg = require(`gpt-tokenizer/encoding/${name}`) as { countTokens(text: string, o: { disallowedSpecial: Set<string> }): number };
      const plain = { disallowedSpecial: new Set<string>() };
      for (const t of texts) {
        // Chat framing: 3 tokens per message plus its role, 3 to prime the reply.
        const expected = 3 + 3 + pkg.countTokens("user", plain) + pkg.countTokens(t, plain);
        assert.deepEqual(firstCount([{ role: "user", content: t }], model), { count: expected, tokenizer: name }, `${model}: ${t}`);
      }
    });
  }
});

describe("tokens module loading", () => {
  it("loads no rank table at import time, and then only the counted family's", () => {
    const script = `
      require("./src/engine/tokens.ts");
      const loaded = () => Object.keys(require.cache).filter((k) => k.includes("gpt-tokenizer")).map((k) => k.replace(/.*gpt-tokenizer/, ""));
      const before = loaded();
      require("./src/engine/tokens.ts").countTokens([{ role: "user", content: "hi" }], "gpt-4");
      console.log(JSON.stringify({ before, after: loaded() }));`;
    const out = execFileSync(process.execPath, ["-r", "tsx/cjs", "-e", script], { cwd: repoRoot, encoding: "utf8" });
    const { before, after } = JSON.parse(out) as { before: string[]; after: string[] };
    assert.deepEqual(before, []);
    // The rank tables (bpeRanks/*) are the megabytes worth deferring.
    const tables = after.filter((p) => p.includes("bpeRanks"));
    assert.deepEqual(tables, ["/cjs/bpeRanks/cl100k_base.js"]);
  });
});
