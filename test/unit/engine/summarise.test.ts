import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { z } from "zod";
import { SqlJsStore } from "../../../src/casefile/sqlJsStore";
import { Engine } from "../../../src/engine/engine";
import { agent, commit, edge, fact, loader, type AgentSpec, type SummariseInfo } from "../../../src/engine/executors";
import { ScriptedProvider } from "../../../src/engine/providers/scripted";
import type { ChatMessage, Fact } from "../../../src/engine/records";
import type { CaseStore } from "../../../src/engine/store";
import { checkBudget } from "../../../src/engine/tokens";
import { defineWorkflow, type Workflow } from "../../../src/engine/workflow";

/**
 * Summarising the working context: only the request an agent step sends may be shortened, by the
 * step's own `summarise` hook, when it is above the soft budget. The claim fact holds the
 * adjuster's long notes; the context shows them whole, the hook keeps their first sentence. Runs
 * on a case file on disk, reopened to check that what it keeps is whole.
 */

const Claim = z.object({ id: z.string(), amount: z.number(), notes: z.string() });
const Proposal = z.object({ action: z.enum(["pay", "refuse"]), reason: z.string().min(1), facts: z.array(z.string()) });

function notes(sentences: number): string {
  return Array.from({ length: sentences }, (_, i) => `Site visit ${i + 1}: the pallets were delivered and counted, ${i + 3} damaged.`).join(
    " ",
  );
}

interface Hook {
  calls: { messages: readonly ChatMessage[]; info: SummariseInfo }[];
  /** What the hook keeps of the notes: the first sentence by default. */
  keep?: (notes: string) => string;
  /** Instead of messages, what a broken hook returns. */
  returns?: unknown;
}

function claimWorkflow(text: string, budget: AgentSpec["budget"], hook?: Hook): Workflow {
  const userMessage = (claim: Fact<z.infer<typeof Claim>>, notesText: string): ChatMessage => ({
    role: "user",
    content: `Fact "claim" (${claim.provenance.source}): claim ${claim.value.id} for ${claim.value.amount} EUR.\nNotes: ${notesText}`,
  });
  return defineWorkflow({
    name: "claims",
    version: 1,
    state: { claim: fact(Claim), decision: z.object({ verdict: z.string() }) },
    start: "load",
    executors: {
      load: loader({
        owns: ["claim"],
        run(ctx) {
          ctx.fact("claim", { id: "C-9", amount: 80, notes: text }, { source: "crm://claims/C-9", sourceVersion: "v4" });
          return "loaded";
        },
      }),
      propose: agent({
        reads: ["claim"],
        proposal: Proposal,
        model: { model: "gpt-4o-mini", params: { temperature: 0 } },
        budget,
        context: (s) => [
          { role: "system", content: "Decide whether to pay the claim. Answer JSON {action, reason, facts}." },
          userMessage(s.claim, s.claim.value.notes),
        ],
        ...(hook
          ? {
              summarise(messages: readonly ChatMessage[], info: SummariseInfo) {
                hook.calls.push({ messages, info });
                if ("returns" in hook) return hook.returns as ChatMessage[];
                const keep = hook.keep ?? ((n: string) => n.slice(0, n.indexOf(".") + 1) + " (notes summarised)");
                return messages.map((m) =>
                  m.role === "user" ? { role: m.role, content: m.content.replace(/Notes: .*$/s, `Notes: ${keep(text)}`) } : m,
                );
              },
            }
          : {}),
      }),
      decide: commit({
        owns: ["decision"],
        rules: {},
        apply(outcome, ctx) {
          ctx.write("decision", { verdict: outcome.verdict });
        },
      }),
    },
    edges: [edge("load", "propose"), edge("propose", "decide")],
  });
}

let dir: string;
let store: CaseStore | undefined;
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), "casefile-summarise-"));
});
afterEach(() => {
  store?.close();
  store = undefined;
  rmSync(dir, { recursive: true, force: true });
});

function provider(): ScriptedProvider {
  const file = path.join(dir, "responses.json");
  const response = { action: "pay", reason: "Damage is documented in the notes.", facts: ["claim"] };
  writeFileSync(file, JSON.stringify({ responses: [{ step: "propose", response }] }));
  return new ScriptedProvider(file);
}

async function run(wf: Workflow, file = "case.casefile", p = provider()) {
  store?.close();
  store = await SqlJsStore.open(path.join(dir, file), { create: true });
  const result = await new Engine(wf, store, { provider: p }).run();
  const call = store.listAgentCalls(result.runId)[0];
  const warnings = store.listEvents({ runId: result.runId }).filter((e) => e.type === "warning");
  return { result, call, warnings, store };
}

describe("summarising the working context", () => {
  it("does not summarise a context within the soft budget (nor without one)", async () => {
    const hook: Hook = { calls: [] };
    const within = await run(claimWorkflow(notes(2), { soft: 2000, hard: 4000 }, hook));
    assert.equal(within.result.status, "completed", within.result.error?.message);
    assert.equal(hook.calls.length, 0, "the hook was not called");
    assert.equal(within.call!.summarised, undefined);
    assert.deepEqual(within.warnings, []);

    const noSoft = await run(claimWorkflow(notes(200), { hard: 100_000 }, hook), "no-soft.casefile");
    assert.equal(noSoft.result.status, "completed", noSoft.result.error?.message);
    assert.equal(hook.calls.length, 0, "without a soft budget there is nothing to summarise towards");
  });

  it("above the soft budget: summarises the request only, records both counts, and keeps state and facts whole in the case file", async () => {
    const text = notes(200);
    // The same step without a hook or budget: the context as built, and its hash.
    const plain = await run(claimWorkflow(text, undefined), "plain.casefile");
    const full = plain.call!;

    const hook: Hook = { calls: [] };
    const { result, call, warnings } = await run(claimWorkflow(text, { soft: 400, hard: 4000 }, hook));
    assert.equal(result.status, "completed", result.error?.message);
    assert.equal(hook.calls.length, 1);
    assert.deepEqual(hook.calls[0]!.info, { step: "propose", model: "gpt-4o-mini", tokens: full.tokens!.count, soft: 400, hard: 4000 });
    assert.deepEqual(hook.calls[0]!.messages, full.request.messages, "the hook is handed the context as built");

    assert.ok(full.tokens!.count > 2000, `the whole context is ${full.tokens!.count} tokens`);
    assert.deepEqual(call!.summarised, { tokensBefore: full.tokens!.count, messagesBefore: 2, hashBefore: full.hash });
    assert.ok(call!.tokens!.count <= 400, `sent ${call!.tokens!.count} tokens`);
    assert.deepEqual([call!.tokens!.soft, call!.tokens!.hard], [400, 4000]);
    assert.match(
      call!.request.messages[1]!.content,
      /Notes: Site visit 1: the pallets were delivered and counted, 3 damaged\. \(notes summarised\)$/,
    );
    assert.notEqual(call!.hash, full.hash, "the recorded hash is the hash of what was sent");
    assert.deepEqual(warnings, [], "summarised under the soft budget: nothing to warn about");
    assert.equal(store!.listVerdicts(result.runId)[0]!.verdict, "accepted");

    // The case file keeps every record whole: reopened from disk, the fact still holds all the notes.
    store!.close();
    store = await SqlJsStore.open(path.join(dir, "case.casefile"), { readOnly: true });
    const claim = store.readValues(store.latestCheckpoint(result.runId)!.keys).claim as unknown as Fact<z.infer<typeof Claim>>;
    assert.equal(claim.value.notes, text);
    assert.deepEqual(
      store.listFacts(result.runId).map((f) => [f.key, f.source, f.sourceVersion]),
      [["claim", "crm://claims/C-9", "v4"]],
    );
    assert.deepEqual(store.getAgentCall(call!.id)!.summarised, call!.summarised);
  });

  it("still above the soft budget after summarising: warns with both counts", async () => {
    const hook: Hook = { calls: [], keep: (n) => n.slice(0, 2000) };
    const { result, call, warnings } = await run(claimWorkflow(notes(200), { soft: 300, hard: 4000 }, hook));
    assert.equal(result.status, "completed", result.error?.message);
    const { count } = call!.tokens!;
    assert.ok(count > 300 && count < call!.summarised!.tokensBefore, "expected: count > 300 && count < call!.summarised!.tokensBefore");
    assert.deepEqual(
      warnings.map((w) => w.data),
      [
        {
          executor: "propose",
          message: `step "propose": context is ${count} tokens after summarising (${call!.summarised!.tokensBefore} before), above the soft budget of 300 tokens`,
        },
      ],
    );
  });

  it("still above the hard budget after summarising: refused before the model is called, naming both counts and the budget", async () => {
    const hook: Hook = { calls: [], keep: (n) => n.slice(0, 4000) };
    const unreachable = new ScriptedProvider(path.join(dir, "no-such-fixture.json"));
    const { result, call } = await run(claimWorkflow(notes(200), { soft: 300, hard: 600 }, hook), "case.casefile", unreachable);
    assert.equal(result.status, "failed");
    assert.equal(hook.calls.length, 1);
    assert.equal(result.error?.code, "TOKEN_BUDGET_EXCEEDED", "refused before the provider, which would fail with MODEL_RESPONSE_MISSING");
    assert.equal(result.error?.executor, "propose");
    const m =
      /context is (\d+) tokens after summarising \((\d+) before\), above the hard budget of 600 tokens; the model was not called/.exec(
        result.error!.message,
      );
    assert.ok(m, result.error!.message);
    assert.ok(Number(m[1]) > 600 && Number(m[2]) > Number(m[1]), "expected: Number(m[1]) > 600 && Number(m[2]) > Number(m[1])");
    assert.equal(call, undefined, "no model call was made or recorded");
    const claim = store!.readValues(store!.latestCheckpoint(result.runId)!.keys).claim as unknown as Fact<z.infer<typeof Claim>>;
    assert.equal(claim.value.notes, notes(200), "the fact is whole");
  });
  it("a summarise hook that returns no array of messages fails the step as INVALID_WORKFLOW, naming it", async () => {
    // Kills the mutants of agentStep.ts's `Array.isArray(shorter)` check (no test reached it).
    const hook: Hook = { calls: [], returns: "shorter, I promise" };
    const unreachable = new ScriptedProvider(path.join(dir, "no-such-fixture.json"));
    const { result } = await run(claimWorkflow(notes(200), { soft: 300, hard: 600 }, hook), "case.casefile", unreachable);
    assert.equal(result.status, "failed");
    assert.equal(result.error?.code, "INVALID_WORKFLOW");
    assert.equal(result.error?.message, 'executor "propose" failed: step "propose": summarise returned no array of messages');
  });
});

describe("checkBudget after summarising", () => {
  it("names the count before summarising beside the count after, in the warning and in the refusal", () => {
    assert.equal(checkBudget(90, { soft: 100 }, "s", 500), undefined);
    assert.equal(
      checkBudget(150, { soft: 100, hard: 200 }, "s", 500),
      'step "s": context is 150 tokens after summarising (500 before), above the soft budget of 100 tokens',
    );
    assert.throws(
      () => checkBudget(250, { soft: 100, hard: 200 }, "s", 500),
      (e: Error & { code?: string; details?: Record<string, unknown> }) => {
        assert.equal(e.code, "TOKEN_BUDGET_EXCEEDED");
        assert.equal(
          e.message,
          'step "s": context is 250 tokens after summarising (500 before), above the hard budget of 200 tokens; the model was not called',
        );
        assert.deepEqual(e.details, { step: "s", count: 250, hard: 200, soft: 100, summarisedFrom: 500 });
        return true;
      },
    );
  });
});
