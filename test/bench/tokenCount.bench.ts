/**
 * Token counting after first use: 200 counts of a two-message context with gpt-4o's tokenizer.
 * An agent step counts its context once per call, and the inspector counts every recorded call
 * it shows, so this has to stay cheap once the rank table is loaded.
 *
 * Run: npm run bench:tokens. Prints the time; exits 1 above the target (500 ms for 200 counts).
 * Moved here from tokens.test.ts: absolute times depend on the machine and belong in benchmarks.
 */
import type { ChatMessage } from "../../src/engine/records";
import { countTokens } from "../../src/engine/tokens";

const COUNTS = 200;
const TARGET_MS = 500;

const messages: ChatMessage[] = [
  { role: "system", content: "You review supplier invoices. Answer with one JSON proposal." },
  { role: "user", content: "Invoice INV-2291 from Müller GmbH: 12 400,00 € — PO 4471 — 日本語の注記あり 🚚" },
];

countTokens(messages, "gpt-4o"); // first use loads the rank table: not what is measured
const started = process.hrtime.bigint();
for (let i = 0; i < COUNTS; i++) countTokens(messages, "gpt-4o");
const ms = Number(process.hrtime.bigint() - started) / 1e6;
console.log(`${COUNTS} token counts (gpt-4o, after first use): ${ms.toFixed(1)} ms (target under ${TARGET_MS} ms)`);
if (ms >= TARGET_MS) process.exitCode = 1;
