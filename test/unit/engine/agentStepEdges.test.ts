import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { z } from "zod";
import { openCaseFile } from "../../../src/casefile/index";
import { Engine, type EngineOptions } from "../../../src/engine/engine";
import { agent, commit, edge, fact, loader, type AgentSpec } from "../../../src/engine/executors";
import { OpenAICompatibleProvider } from "../../../src/engine/providers/openai";
import { ScriptedProvider } from "../../../src/engine/providers/scripted";
import type { AgentCallRecord, ChatMessage, Json } from "../../../src/engine/records";
import { defineWorkflow, type Workflow } from "../../../src/engine/workflow";

/**
 * The edges of the agent step a run records: a context exactly at the soft budget, an edited
 * replay given no messages, what the agent call keeps of the model's answer. On a case file on
 * disk, reopened; each test names the slip in agentStep.ts it catches.
 */

const Proposal = z.object({ action: z.enum(["pay", "refuse"]), reason: z.string().min(1), facts: z.array(z.string()) });
const good = { action: "pay", reason: "The claim is small and documented.", facts: ["claim"] };

interface Hooks {
  budget?: AgentSpec["budget"];
  /** Counts the summarise hook's calls; the hook keeps only the system message. */
  summarised?: { calls: number };
}

function claimWorkflow(h: Hooks = {}): Workflow {
  return defineWorkflow({
    name: "claims-edges",
    version: 1,
    state: { claim: fact(z.object({ id: z.string(), amount: z.number() })), decision: z.string() },
    start: "load",
    executors: {
      load: loader({
        owns: ["claim"],
        run(ctx) {
          ctx.fact("claim", { id: "C-1", amount: 40 }, { source: "crm://claims/C-1", sourceVersion: "v3" });
          return "loaded";
        },
      }),
      propose: agent({
        reads: ["claim"],
        proposal: Proposal,
        model: { model: "gpt-4o-mini" },
        budget: h.budget,
        context: (s) => [
          { role: "system", content: "Decide whether to pay the claim. Answer JSON {action, reason, facts}." },
          { role: "user", content: `Fact "claim" (${s.claim.provenance.source}): ${JSON.stringify(s.claim.value)}` },
        ],
        ...(h.summarised
          ? {
              summarise: (messages: readonly ChatMessage[]) => {
                h.summarised!.calls++;
                return messages.slice(0, 1);
              },
            }
          : {}),
      }),
      decide: commit({
        owns: ["decision"],
        rules: {},
        apply(outcome, ctx) {
          ctx.write("decision", outcome.verdict);
        },
      }),
    },
    edges: [edge("load", "propose"), edge("propose", "decide")],
  });
}

let dir: string;
let fixtures = 0;
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), "s18e-agent-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function scripted(entry: Record<string, Json> = {}): ScriptedProvider {
  const file = path.join(dir, `fixture-${++fixtures}.json`);
  writeFileSync(file, JSON.stringify({ responses: [{ step: "propose", response: good, ...entry }] }));
  return new ScriptedProvider(file);
}

/** Runs (or resumes from `from`) on the case file on disk, then reads the agent calls of the run back from it reopened. */
async function onDisk(
  wf: Workflow,
  opts: EngineOptions,
  from?: string,
): Promise<{ status: string; runId: string; error?: string; calls: AgentCallRecord[] }> {
  const file = path.join(dir, "case.casefile");
  const store = await openCaseFile(file);
  let result;
  try {
    const engine = new Engine(wf, store, opts);
    result = from === undefined ? await engine.run() : await engine.resume(from, { branch: true });
  } finally {
    store.close();
  }
  const again = await openCaseFile(file, { readOnly: true });
  try {
    return { status: result.status, runId: result.runId, error: result.error?.message, calls: again.listAgentCalls(result.runId) };
  } finally {
    again.close();
  }
}

describe("agent step edges, as the case file records them", () => {
  // kills agentStep.ts:53 EqualityOperator tokens.count >= budget.soft
  it("a context exactly at the soft budget is within it: not summarised; one token over is summarised", async () => {
    const plain = await onDisk(claimWorkflow(), { provider: scripted() });
    const count = plain.calls[0]!.tokens!.count;

    const at = { calls: 0 };
    const within = await onDisk(claimWorkflow({ budget: { soft: count }, summarised: at }), { provider: scripted() });
    assert.equal(within.status, "completed", within.error);
    assert.equal(at.calls, 0, `a context of ${count} tokens with a soft budget of ${count} is not summarised`);
    assert.equal(within.calls[0]!.summarised, undefined, "no summarised record");
    assert.equal(within.calls[0]!.tokens!.count, count);

    const over = { calls: 0 };
    const above = await onDisk(claimWorkflow({ budget: { soft: count - 1 }, summarised: over }), { provider: scripted() });
    assert.equal(over.calls, 1, "one token over the soft budget is summarised");
    assert.equal(above.calls[0]!.summarised?.tokensBefore, count);
    assert.equal(above.calls[0]!.request.messages.length, 1, "the request sent is the summarised one");
  });

  // kills agentStep.ts:45 ConditionalExpression replay.messages !== undefined -> true; agentStep.ts:90 ConditionalExpression edited -> true
  it("an edited replay given no messages asks with the context as built: the same hash, and no original hash", async () => {
    const first = await onDisk(claimWorkflow(), { provider: scripted() });
    const call = first.calls[0]!;
    const branch = await onDisk(
      claimWorkflow(),
      { provider: scripted(), replay: { executor: "propose", mode: "edited", recorded: call } },
      `${first.runId}:${call.superstep - 1}`,
    );
    assert.equal(branch.status, "completed", branch.error);
    const again = branch.calls[0]!;
    assert.equal(again.mode, "edited");
    assert.equal(again.hash, call.hash, "the context as built, not an edit");
    assert.equal(again.originalHash, undefined, "nothing was edited, so there is no original to point to");
    assert.deepEqual(again.request.messages, call.request.messages);
  });

  // kills agentStep.ts:125 ArithmeticOperator monotonicMs() + t0; agentStep.ts:94 ConditionalExpression extracts.length -> true
  it("a call's duration is measured within the run (never more than the run took), and a call with no extracts records none", async () => {
    const t0 = process.hrtime.bigint();
    const run = await onDisk(claimWorkflow(), { provider: scripted() });
    const runMs = Number(process.hrtime.bigint() - t0) / 1e6;
    const call = run.calls[0]!;
    assert.ok(call.durationMs >= 0 && call.durationMs <= runMs, `durationMs ${call.durationMs} within the run's ${runMs} ms`);
    assert.equal(call.extracts, undefined, "no extracts in state: no extracts field (not an empty list)");
  });

  // kills both agentStep.ts:120 ObjectLiteral {} ({ meta: { model: rec.answeredBy } } and { model: rec.answeredBy })
  it("a recorded replay keeps which model answered the recorded call", async () => {
    const first = await onDisk(claimWorkflow(), { provider: scripted() });
    const recorded: AgentCallRecord = { ...first.calls[0]!, answeredBy: "gpt-4o-mini-2024-07-18" };
    const branch = await onDisk(
      claimWorkflow(),
      { provider: new ScriptedProvider(path.join(dir, "none.json")), replay: { executor: "propose", mode: "recorded", recorded } },
      `${first.runId}:${recorded.superstep - 1}`,
    );
    assert.equal(branch.status, "completed", branch.error);
    assert.equal(branch.calls[0]!.mode, "recorded");
    assert.equal(branch.calls[0]!.answeredBy, "gpt-4o-mini-2024-07-18", "the model that answered, as recorded");
    assert.equal(branch.calls[0]!.raw, recorded.raw);
  });

  // kills agentStep.ts:130 ConditionalExpression response.usage -> false (not run by Stryker: the line's disable comment covers both ConditionalExpression mutants)
  it("a live answer's model, response id and token usage are kept with the call (an OpenAI-compatible server on loopback)", async () => {
    const server = createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        res.writeHead(200, { "content-type": "application/json", "x-request-id": "req-42" });
        res.end(
          JSON.stringify({
            id: "chatcmpl-7",
            object: "chat.completion",
            created: 0,
            model: "gpt-4o-mini-2024-07-18",
            choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content: JSON.stringify(good) } }],
            usage: { prompt_tokens: 61, completion_tokens: 19, total_tokens: 80 },
          }),
        );
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
      const run = await onDisk(claimWorkflow(), { provider: new OpenAICompatibleProvider({ apiKey: "local", baseUrl, maxRetries: 0 }) });
      assert.equal(run.status, "completed", run.error);
      const call = run.calls[0]!;
      assert.deepEqual(
        [call.mode, call.provider, call.answeredBy, call.responseId, call.usage],
        ["live", "openai", "gpt-4o-mini-2024-07-18", "chatcmpl-7", { promptTokens: 61, completionTokens: 19, totalTokens: 80 }],
      );
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it("a key a server echoes, in an answer or in an error, is recorded nowhere in the case file", async () => {
    const key = "sk-agent-edges-0123456789";
    let calls = 0;
    // The first call is answered with a proposal quoting the request's headers, the second refused
    // with a 401 that quotes them too.
    const server = createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        const echoed = JSON.stringify(req.headers);
        res.writeHead(calls++ === 0 ? 200 : 401, { "content-type": "application/json", "x-request-id": `req-${key}` });
        const proposal = { ...good, reason: `You sent ${echoed}.` };
        res.end(
          JSON.stringify(
            calls === 1
              ? {
                  id: key,
                  object: "chat.completion",
                  created: 0,
                  model: "m",
                  choices: [{ index: 0, message: { role: "assistant", content: JSON.stringify(proposal) } }],
                }
              : { error: { message: `Incorrect API key provided: ${key}; you sent ${echoed}` } },
          ),
        );
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
      const provider = new OpenAICompatibleProvider({ apiKey: key, baseUrl, maxRetries: 0 });
      const answered = await onDisk(claimWorkflow(), { provider });
      assert.equal(answered.status, "completed", answered.error);
      assert.match((JSON.parse(answered.calls[0]!.raw!) as { reason: string }).reason, /"authorization":"Bearer \[redacted\]"/);
      const refused = await onDisk(claimWorkflow(), { provider });
      assert.match(
        refused.error ?? "",
        /HTTP 401: Incorrect API key provided: \[redacted\]; you sent .*"authorization":"Bearer \[redacted\]"/,
      );
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
    assert.equal(calls, 2);
    const files = readdirSync(dir, { recursive: true, withFileTypes: true }).filter((f) => f.isFile());
    assert.ok(
      files.some((f) => f.name === "case.casefile"),
      "the case file was written",
    );
    for (const f of files) {
      const bytes = readFileSync(path.join(f.parentPath, f.name));
      assert.ok(!bytes.includes(key), `the key is in ${f.name}`);
      assert.ok(!bytes.includes(Buffer.from(key, "utf16le")), `the key is in ${f.name} (UTF-16)`);
    }
  });

  it("a scripted answer keeps no model, id or usage it was not given", async () => {
    const run = await onDisk(claimWorkflow(), { provider: scripted() });
    const call = run.calls[0]!;
    assert.deepEqual([call.mode, call.answeredBy, call.responseId, call.usage], ["scripted", undefined, undefined, undefined]);
  });
});
