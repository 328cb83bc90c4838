/**
 * Context tokens over a long case: a 200-step loop whose state grows with every step, while each
 * agent step's context is rebuilt from the current state (the one item to decide, its fact with
 * provenance, and a few summary fields), beside what an agent replaying its transcript (every
 * earlier prompt and answer, then the new prompt) would send at the same step.
 *
 * The case runs through the real engine on a MemoryStore with the scripted provider; context
 * token counts are the ones the agent step recorded (gpt-tokenizer, o200k_base for gpt-4o-mini);
 * transcript counts are computed from the recorded requests and answers with the same tokenizer.
 *
 * Run: npm run bench:context. Prints a table and writes test/bench/results/contextTokens.json.
 * Target: the context at step 200 within 1.2x of step 1; the process exits 1 when it is not.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { z } from "zod";
import { MemoryStore } from "../../src/casefile/memoryStore";
import { Engine } from "../../src/engine/engine";
import { agent, commit, edge, fact, loader } from "../../src/engine/executors";
import { ScriptedProvider } from "../../src/engine/providers/scripted";
import type { ChatMessage } from "../../src/engine/records";
import { countTokens } from "../../src/engine/tokens";
import { defineWorkflow } from "../../src/engine/workflow";

const STEPS = 200;
const REPORT_AT = [1, 50, 100, 150, 200];
const TARGET = 1.2;
const MODEL = "gpt-4o-mini";

/** The system of record the loader reads: 200 card transactions to review, deterministic. */
const transactions = Array.from({ length: STEPS }, (_, i) => ({
  id: `TX-${String(i + 1).padStart(4, "0")}`,
  merchant: ["Office Depot", "Lufthansa", "Hilton Munich", "AWS", "Deutsche Bahn"][i % 5]!,
  amount: Math.round((i * 7919) % 2400) + 12.5,
  currency: "EUR",
  cardholder: ["a.meyer", "j.schulz", "k.wagner"][i % 3]!,
}));

const Tx = z.object({ id: z.string(), merchant: z.string(), amount: z.number(), currency: z.string(), cardholder: z.string() });
const Result = z.object({ tx: z.string(), action: z.string(), verdict: z.string(), reason: z.string() });
const Proposal = z.object({ action: z.enum(["approve", "flag"]), reason: z.string(), facts: z.array(z.string()) });

const workflow = defineWorkflow({
  name: "expense-review",
  version: 1,
  state: {
    tx: fact(Tx),
    /** Every step's result, kept whole: this is what grows. */
    results: z.array(Result),
    /** What the next decision needs of the history, kept small by code. */
    summary: z.object({
      processed: z.number(),
      approved: z.number(),
      flagged: z.number(),
      approvedTotal: z.number(),
      lastFlag: z.string().nullable(),
    }),
  },
  start: "fetch",
  executors: {
    fetch: loader({
      reads: ["summary"],
      owns: ["tx"],
      run(ctx) {
        const tx = transactions[ctx.state.summary?.processed ?? 0]!;
        ctx.fact("tx", tx, { source: `bank://card-transactions/${tx.id}`, sourceVersion: "v1" });
        return tx.id;
      },
    }),
    review: agent({
      reads: ["tx", "summary"],
      proposal: Proposal,
      model: { model: MODEL, params: { temperature: 0 } },
      budget: { soft: 600, hard: 2000 },
      // Built from current state only: the item, its provenance and the summary fields the
      // decision uses. Never the earlier prompts and answers.
      context: (s) => {
        const sum = s.summary ?? { processed: 0, approved: 0, flagged: 0, approvedTotal: 0, lastFlag: null };
        return [
          {
            role: "system",
            content:
              "You review corporate card transactions. Approve ordinary business expenses; flag anything unusual " +
              "(amount above 2000 EUR, personal merchants, duplicates). Cite the facts you used. Answer JSON {action, reason, facts}.",
          },
          {
            role: "user",
            content: [
              `Fact "tx" (source ${s.tx.provenance.source}, version ${s.tx.provenance.sourceVersion}): ${JSON.stringify(s.tx.value)}`,
              `So far: ${sum.processed} reviewed, ${sum.approved} approved (${sum.approvedTotal} EUR), ${sum.flagged} flagged; last flagged: ${sum.lastFlag ?? "none"}.`,
              "Decide: approve or flag this transaction?",
            ].join("\n"),
          },
        ];
      },
    }),
    record: commit({
      reads: ["tx", "results", "summary"],
      owns: ["results", "summary"],
      rules: {
        flagLarge: ({ proposal, state }) =>
          proposal.action === "flag" || state.tx.value.amount <= 2000
            ? { ok: true, message: "ok" }
            : { ok: false, message: `${state.tx.value.amount} EUR is above the 2000 EUR approval limit`, onFail: "reject" },
      },
      apply(o, ctx) {
        const tx = ctx.state.tx.value;
        const action = o.verdict === "accepted" ? String(o.proposal!.action) : "flag";
        const prev = ctx.state.summary ?? { processed: 0, approved: 0, flagged: 0, approvedTotal: 0, lastFlag: null };
        ctx.write("results", [...(ctx.state.results ?? []), { tx: tx.id, action, verdict: o.verdict, reason: o.reason }]);
        ctx.write("summary", {
          processed: prev.processed + 1,
          approved: prev.approved + (action === "approve" ? 1 : 0),
          flagged: prev.flagged + (action === "flag" ? 1 : 0),
          approvedTotal: Math.round((prev.approvedTotal + (action === "approve" ? tx.amount : 0)) * 100) / 100,
          lastFlag: action === "flag" ? tx.id : prev.lastFlag,
        });
        return { processed: prev.processed + 1 };
      },
    }),
  },
  edges: [
    edge("fetch", "review"),
    edge("review", "record"),
    edge("record", "fetch", { when: (m) => (m as { processed: number }).processed < STEPS }),
  ],
});

async function main(): Promise<void> {
  const tmp = mkdtempSync(path.join(os.tmpdir(), "casefile-bench-context-"));
  try {
    const fixture = path.join(tmp, "answers.json");
    writeFileSync(
      fixture,
      JSON.stringify({
        responses: [
          {
            step: "review",
            response: { action: "approve", reason: "A routine business expense from a known merchant, within policy.", facts: ["tx"] },
          },
        ],
      }),
    );
    const store = new MemoryStore();
    const t0 = performance.now();
    const result = await new Engine(workflow, store, { provider: new ScriptedProvider(fixture) }).run();
    const seconds = (performance.now() - t0) / 1000;
    if (result.status !== "completed") throw new Error(`the case did not complete: ${result.status} ${result.error?.message ?? ""}`);
    const calls = store.listAgentCalls(result.runId);
    if (calls.length !== STEPS) throw new Error(`expected ${STEPS} agent steps, got ${calls.length}`);

    // State size at each reported step: the checkpoint after that step's commit.
    const stateBytes = (step: number) => {
      const cp = store.getCheckpoint(`${result.runId}:${calls[step - 1]!.superstep + 1}`)!;
      return Buffer.byteLength(JSON.stringify(store.readValues(cp.keys)));
    };
    // The transcript an agent replaying its history would send at step k: the system prompt once,
    // every earlier prompt and answer, then this step's prompt.
    const transcriptTokens = (step: number) => {
      const messages: ChatMessage[] = [calls[0]!.request.messages[0]!];
      for (let i = 0; i < step - 1; i++) messages.push(calls[i]!.request.messages[1]!, { role: "assistant", content: calls[i]!.raw! });
      messages.push(calls[step - 1]!.request.messages[1]!);
      return countTokens(messages, MODEL).count;
    };

    const rows = REPORT_AT.map((step) => ({
      step,
      contextTokens: calls[step - 1]!.tokens!.count,
      transcriptTokens: transcriptTokens(step),
      stateBytes: stateBytes(step),
    }));
    const first = rows[0]!;
    const last = rows.at(-1)!;
    const ratio = last.contextTokens / first.contextTokens;
    const transcriptRatio = last.transcriptTokens / first.transcriptTokens;

    const header = ["step", "context tokens (from state)", "transcript tokens", "transcript / context", "state bytes"];
    const table = [
      header,
      ...rows.map((r) => [
        String(r.step),
        String(r.contextTokens),
        String(r.transcriptTokens),
        (r.transcriptTokens / r.contextTokens).toFixed(1) + "x",
        String(r.stateBytes),
      ]),
    ];
    const widths = header.map((_, i) => Math.max(...table.map((row) => row[i]!.length)));
    console.log(
      `${STEPS}-step case built from state (${workflow.name}, ${MODEL}, tokenizer ${calls[0]!.tokens!.tokenizer}); engine run ${seconds.toFixed(1)} s\n`,
    );
    for (const row of table) console.log(row.map((c, i) => c.padStart(widths[i]!)).join("  "));
    console.log(
      `\nstep ${last.step} / step 1, context from state: ${ratio.toFixed(3)}x (target <= ${TARGET}x: ${ratio <= TARGET ? "met" : "MISSED"})`,
    );
    console.log(`step ${last.step} / step 1, replayed transcript: ${transcriptRatio.toFixed(1)}x`);

    const outDir = path.join(__dirname, "results");
    mkdirSync(outDir, { recursive: true });
    const out = path.join(outDir, "contextTokens.json");
    writeFileSync(
      out,
      JSON.stringify(
        {
          bench: "contextTokens",
          at: new Date().toISOString(),
          steps: STEPS,
          model: MODEL,
          tokenizer: calls[0]!.tokens!.tokenizer,
          rows,
          ratioStepLastToFirst: { context: Number(ratio.toFixed(4)), transcript: Number(transcriptRatio.toFixed(2)) },
          target: TARGET,
          met: ratio <= TARGET,
        },
        null,
        2,
      ) + "\n",
    );
    console.log(`wrote ${path.relative(process.cwd(), out)}`);
    if (ratio > TARGET) process.exitCode = 1;
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

main().catch((e: Error) => {
  console.error(e.stack ?? e.message);
  process.exitCode = 1;
});
