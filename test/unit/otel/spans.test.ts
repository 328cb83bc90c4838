import assert from "node:assert/strict";
import type { AgentCallRecord, EventRecord, IntentRecord, RunRecord, StepRecord, VerdictRecord } from "../../../src/engine/records";
import { runSpans, type RunRecords, type SpanDescription } from "../../../src/otel/spans";

/**
 * The records -> spans function (src/otel/spans.ts) on a small recorded run: a loader, an agent
 * step with one model call, a commit step's verdict, an effect whose intent failed. What a user
 * of Jaeger or Phoenix would read: the tree, the GenAI attributes, the verdict as an event, the
 * failure as an error, and no payload unless content is asked for.
 */

const RUN = "run-1";
const t = (ms: number): string => new Date(Date.UTC(2026, 0, 1, 12, 0, 0, ms)).toISOString();

function step(
  superstep: number,
  executor: string,
  kind: StepRecord["kind"],
  from: number,
  to: number,
  extra: Partial<StepRecord> = {},
): StepRecord {
  return {
    id: `${RUN}:${superstep}:${executor}`,
    runId: RUN,
    superstep,
    executor,
    kind,
    status: "ok",
    startedAt: t(from),
    endedAt: t(to),
    durationMs: to - from,
    writes: [],
    sent: 1,
    ...extra,
  };
}

function records(): RunRecords {
  const run: RunRecord = {
    id: RUN,
    workflow: { name: "payables", version: 3, graphHash: "sha256:abc" },
    status: "failed",
    createdAt: t(0),
    updatedAt: t(900),
    input: { invoiceId: "INV-SECRET-7" },
    error: { code: "EFFECT_FAILED", message: "post payment: the ERP answered 500", executor: "pay" },
  };
  const call: AgentCallRecord = {
    id: `${RUN}:2:propose`,
    runId: RUN,
    superstep: 2,
    executor: "propose",
    request: {
      messages: [
        { role: "system", content: "You approve invoices." },
        { role: "user", content: "Invoice total 4711.00 from ACME-HIDDEN" },
      ],
      model: "gpt-4o-mini",
      params: { temperature: 0.2, max_tokens: 300 },
      responseSchema: {},
    },
    hash: "sha256:ctx",
    tokens: { count: 120, tokenizer: "o200k_base" },
    provider: "openai",
    mode: "live",
    answeredBy: "gpt-4o-mini-2024-07-18",
    responseId: "chatcmpl-42",
    raw: '{"action":"approve","reason":"matches ACME-HIDDEN PO","facts":["invoice"]}',
    proposal: { action: "approve", reason: "matches ACME-HIDDEN PO", facts: ["invoice"] },
    usage: { promptTokens: 118, completionTokens: 21, totalTokens: 139 },
    at: t(310),
    durationMs: 250,
  };
  const verdict: VerdictRecord = {
    id: `${RUN}:3:decide`,
    runId: RUN,
    superstep: 3,
    executor: "decide",
    agentCallId: call.id,
    proposal: call.proposal,
    rules: [
      { name: "citesFacts", ok: true, message: "cites invoice" },
      { name: "underLimit", ok: true, message: "4711.00 is under the limit" },
    ],
    verdict: "accepted",
    reason: "all rules passed for 4711.00",
    diff: { decision: { before: undefined, after: { action: "approve" } } },
    at: t(620),
  };
  const intent: IntentRecord = {
    id: "pay:INV-7",
    key: "pay:INV-7",
    runId: RUN,
    superstep: 4,
    executor: "pay",
    action: "post_payment",
    target: "erp/payments",
    payload: { amount: 4711, iban: "DE-IBAN-HIDDEN" },
    reliesOn: { invoiceVersion: "v1" },
    status: "failed",
    error: { code: "EFFECT_FAILED", message: "the ERP answered 500" },
    createdAt: t(700),
    updatedAt: t(800),
  };
  const events: EventRecord[] = [
    { runId: RUN, superstep: 0, type: "run_started", at: t(0), data: { input: { invoiceId: "INV-SECRET-7" } } },
    { runId: RUN, superstep: 1, type: "checkpoint", at: t(105), data: { checkpoint: `${RUN}:1`, changed: ["invoice"] } },
    { runId: RUN, superstep: 2, type: "checkpoint", at: t(600), data: { checkpoint: `${RUN}:2`, changed: [] } },
    { runId: RUN, superstep: 3, type: "checkpoint", at: t(650), data: { checkpoint: `${RUN}:3`, changed: ["decision"] } },
    { runId: RUN, superstep: 4, type: "warning", at: t(750), data: { message: "ERP slow for ACME-HIDDEN" } },
    { runId: RUN, superstep: 4, type: "run_failed", at: t(900), data: {} },
  ];
  return {
    run,
    steps: [
      step(1, "load", "loader", 10, 100, { writes: ["invoice"] }),
      step(2, "propose", "agent", 300, 590),
      step(3, "decide", "commit", 610, 630, { writes: ["decision"] }),
      step(4, "pay", "effect", 690, 810, { status: "failed", error: { code: "EFFECT_FAILED", message: "the ERP answered 500" }, sent: 0 }),
    ],
    agentCalls: [call],
    verdicts: [verdict],
    intents: [intent],
    events,
  };
}

const byName = (spans: SpanDescription[], name: string): SpanDescription => {
  const s = spans.find((x) => x.name === name);
  assert.ok(s, `a span named "${name}" among ${spans.map((x) => x.name).join(", ")}`);
  return s;
};

describe("otel: a recorded run as spans", () => {
  it("makes the tree: workflow > supersteps > steps > the model call, parents listed before their children", () => {
    const spans = runSpans(records(), { includeContent: false });
    const names = (parent: SpanDescription): string[] => spans.filter((s) => s.parentId === parent.id).map((s) => s.name);
    const root = byName(spans, "workflow payables");
    assert.equal(root.parentId, undefined, "the workflow span is the root");
    assert.deepEqual(names(root), ["superstep 1", "superstep 2", "superstep 3", "superstep 4"], "one span per superstep under the run");
    assert.deepEqual(names(byName(spans, "superstep 2")), ["agent propose"], "the agent step under its superstep");
    assert.deepEqual(names(byName(spans, "agent propose")), ["chat gpt-4o-mini"], "the model call under its step");
    assert.deepEqual(names(byName(spans, "superstep 4")), ["effect pay"], "the effect under its superstep");
    const seen = new Set<string>();
    for (const s of spans) {
      assert.ok(s.parentId === undefined || seen.has(s.parentId), `${s.name}'s parent comes before it`);
      seen.add(s.id);
    }
  });

  it("keeps the recorded times: a step's start and end, a superstep from its first step to its checkpoint, the run to its last record", () => {
    const spans = runSpans(records(), { includeContent: false });
    assert.deepEqual([byName(spans, "loader load").start, byName(spans, "loader load").end], [t(10), t(100)], "the loader's times");
    assert.deepEqual([byName(spans, "superstep 1").start, byName(spans, "superstep 1").end], [t(10), t(105)], "superstep 1's times");
    const chat = byName(spans, "chat gpt-4o-mini");
    assert.deepEqual([chat.start, chat.end], [t(310), t(560)], "the model call from its start for its duration");
    assert.deepEqual([byName(spans, "workflow payables").start, byName(spans, "workflow payables").end], [t(0), t(900)], "the run's times");
  });

  it("gives the model call the GenAI attributes: operation, provider, models, tokens, response id", () => {
    const chat = byName(runSpans(records(), { includeContent: false }), "chat gpt-4o-mini");
    assert.equal(chat.kind, "client", "a model call is a client span");
    const kinds = runSpans(records(), { includeContent: false }).map((s) => [s.name, s.attributes["openinference.span.kind"]]);
    assert.deepEqual(
      kinds.filter(([, k]) => k !== "CHAIN"),
      [
        ["chat gpt-4o-mini", "LLM"],
        ["effect pay", "TOOL"],
      ],
      "for Phoenix, the model call is an LLM span and the effect a TOOL; the rest are CHAIN",
    );
    assert.deepEqual(
      {
        op: chat.attributes["gen_ai.operation.name"],
        provider: chat.attributes["gen_ai.provider.name"],
        model: chat.attributes["gen_ai.request.model"],
        answered: chat.attributes["gen_ai.response.model"],
        id: chat.attributes["gen_ai.response.id"],
        input: chat.attributes["gen_ai.usage.input_tokens"],
        output: chat.attributes["gen_ai.usage.output_tokens"],
        temperature: chat.attributes["gen_ai.request.temperature"],
        maxTokens: chat.attributes["gen_ai.request.max_tokens"],
        action: chat.attributes["casefile.proposal.action"],
      },
      {
        op: "chat",
        provider: "openai",
        model: "gpt-4o-mini",
        answered: "gpt-4o-mini-2024-07-18",
        id: "chatcmpl-42",
        input: 118,
        output: 21,
        temperature: 0.2,
        maxTokens: 300,
        action: "approve",
      },
      "the call's GenAI attributes",
    );
  });

  it("puts the verdict on the commit step as an event, and the effect's intent key and outcome on its span, failed as an error", () => {
    const spans = runSpans(records(), { includeContent: false });
    const verdict = byName(spans, "commit decide").events.find((e) => e.name === "verdict");
    assert.ok(verdict, "the commit step's span has a verdict event");
    assert.equal(verdict.at, t(620), "at the verdict's time");
    assert.deepEqual(
      [verdict.attributes["casefile.verdict"], verdict.attributes["casefile.rules.passed"]],
      ["accepted", ["citesFacts", "underLimit"]],
      "the verdict and the rules that passed",
    );
    const pay = byName(spans, "effect pay");
    assert.deepEqual(
      [pay.attributes["casefile.intent.key"], pay.attributes["casefile.intent.action"], pay.attributes["casefile.intent.status"]],
      ["pay:INV-7", "post_payment", "failed"],
      "the intent's key, action and outcome",
    );
    assert.deepEqual(pay.error, { type: "EFFECT_FAILED", message: "the ERP answered 500" }, "the failed effect is an error");
    assert.equal(byName(spans, "superstep 4").error?.type, "EFFECT_FAILED", "so is its superstep");
    assert.deepEqual(byName(spans, "workflow payables").error?.type, "EFFECT_FAILED", "and the failed run");
  });

  it("a superstep run again after a failure shows both attempts, each linked to its superstep", () => {
    const r = records();
    const again = step(4, "pay", "effect", 1000, 1100);
    r.steps.push(again);
    r.events.push({ runId: RUN, superstep: 4, type: "checkpoint", at: t(1105), data: { checkpoint: `${RUN}:4`, changed: [] } });
    const spans = runSpans(r, { includeContent: false });
    const attempts = spans.filter((s) => s.name === "effect pay");
    assert.equal(attempts.length, 2, "both attempts of the effect");
    assert.equal(new Set(spans.map((s) => s.id)).size, spans.length, "every span has an id of its own");
    const superstep = byName(spans, "superstep 4");
    assert.deepEqual(
      attempts.map((a) => a.parentId),
      [superstep.id, superstep.id],
      "both under superstep 4",
    );
    assert.deepEqual([superstep.start, superstep.end], [t(690), t(1105)], "which spans both attempts");
  });

  it("sends no payload, message or reason by default, and all of them with content on", () => {
    const secrets = ["INV-SECRET-7", "ACME-HIDDEN", "4711", "DE-IBAN-HIDDEN", "You approve invoices"];
    const without = JSON.stringify(runSpans(records(), { includeContent: false }));
    for (const s of secrets) assert.ok(!without.includes(s), `"${s}" is not in the spans without content: ${without}`);
    const withContent = runSpans(records(), { includeContent: true });
    const all = JSON.stringify(withContent);
    for (const s of secrets) assert.ok(all.includes(s), `"${s}" is in the spans with content`);
    const input = JSON.parse(String(byName(withContent, "chat gpt-4o-mini").attributes["gen_ai.input.messages"])) as unknown;
    assert.deepEqual(
      input,
      [
        { role: "system", parts: [{ type: "text", content: "You approve invoices." }] },
        { role: "user", parts: [{ type: "text", content: "Invoice total 4711.00 from ACME-HIDDEN" }] },
      ],
      "the messages in the GenAI conventions' shape",
    );
  });
});
