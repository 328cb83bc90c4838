import { evalCaseFromRecords, type EvalCase, type EvalCaseSource } from "../../../../src/engine/evalCase";

/**
 * One small eval case as `casefile export-eval` builds it from a claim run's records: the agent
 * step `propose` answered pay, and the commit step accepted it. Shared by the engine's eval-file
 * tests; evalCase.test.ts keeps its own, richer invoice case.
 */
export const claimSource: EvalCaseSource = {
  caseFile: "/cases/CLM-7.casefile",
  workflow: { name: "claims", version: 3 },
  call: {
    id: "call-1",
    runId: "run-1",
    superstep: 2,
    executor: "propose",
    request: {
      messages: [{ role: "user", content: "pay claim CLM-7?" }],
      model: "gpt-4o-mini",
      params: {},
      responseSchema: { type: "object", properties: { action: { enum: ["pay", "refuse"] }, reason: { type: "string" } } },
    },
    hash: "sha256:abc",
    provider: "scripted",
    mode: "scripted",
    raw: '{"action":"pay","reason":"covered"}',
    proposal: { action: "pay", reason: "covered" },
    at: "2026-12-01T07:00:00.000Z",
    durationMs: 3,
  },
  verdict: {
    id: "v-1",
    runId: "run-1",
    superstep: 3,
    executor: "decide",
    agentCallId: "call-1",
    proposal: { action: "pay", reason: "covered" },
    rules: [],
    verdict: "accepted",
    reason: "all rules passed",
    diff: {},
    at: "2026-12-01T07:00:01.000Z",
  },
  facts: {},
  rules: [],
  rulesFrom: "agent call",
};

export const claimCase: EvalCase = evalCaseFromRecords(claimSource);
