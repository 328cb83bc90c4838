import type {
  AgentCallRecord,
  Checkpoint,
  EventRecord,
  FactRecord,
  IntentRecord,
  Json,
  KeyRef,
  RuleRecord,
  RunRecord,
  StepRecord,
  VerdictRecord,
} from "../../../src/engine/records";

/** Small, valid records for the case-file tests; every builder takes overrides. */

const T0 = "2026-01-01T00:00:00.000Z";

export function run(id: string, over: Partial<RunRecord> = {}): RunRecord {
  return { id, workflow: { name: "invoice", version: 1, graphHash: "sha256:g" }, status: "running", createdAt: T0, updatedAt: T0, ...over };
}

export function checkpoint(id: string, runId: string, superstep: number, over: Partial<Checkpoint> = {}): Checkpoint {
  return {
    v: 1,
    id,
    runId,
    superstep,
    createdAt: T0,
    workflow: { name: "invoice", version: 1, graphHash: "sha256:g", executors: ["load", "decide"] },
    keys: {},
    pending: [],
    fanIn: {},
    local: {},
    waiting: [],
    ...over,
  };
}

export function ref(run: string, version: number): KeyRef {
  return { run, version };
}

export function step(id: string, runId: string, superstep: number, over: Partial<StepRecord> = {}): StepRecord {
  return {
    id,
    runId,
    superstep,
    executor: "load",
    kind: "loader",
    status: "ok",
    startedAt: T0,
    endedAt: T0,
    durationMs: 3,
    writes: ["invoice"],
    sent: 1,
    ...over,
  };
}

export function fact(runId: string, key: string, version: number, over: Partial<FactRecord> = {}): FactRecord {
  return { runId, superstep: 0, key, version, executor: "load", source: "erp", sourceVersion: "etag-1", readAt: T0, ...over };
}

export function agentCall(id: string, runId: string, over: Partial<AgentCallRecord> = {}): AgentCallRecord {
  return {
    id,
    runId,
    superstep: 1,
    executor: "decide",
    request: {
      messages: [{ role: "user", content: "Pay invoice 7?" }],
      model: "m",
      params: { temperature: 0 },
      responseSchema: { type: "object" },
    },
    hash: "sha256:" + id,
    provider: "scripted",
    mode: "scripted",
    proposal: { action: "pay", reason: "matches PO", facts: ["invoice"] },
    at: T0,
    durationMs: 12,
    ...over,
  };
}

export function verdict(id: string, runId: string, over: Partial<VerdictRecord> = {}): VerdictRecord {
  return {
    id,
    runId,
    superstep: 2,
    executor: "commit",
    rules: [{ name: "amountMatches", ok: true, message: "100.00 = 100.00" }],
    verdict: "accepted",
    reason: "all rules passed",
    diff: { decision: { before: null, after: "pay" } },
    at: T0,
    ...over,
  };
}

export function intent(id: string, runId: string, over: Partial<IntentRecord> = {}): IntentRecord {
  return {
    id,
    runId,
    superstep: 3,
    executor: "pay",
    action: "post_payment",
    target: "invoice-7",
    payload: { amount: 100 },
    reliesOn: { etag: "e1" },
    status: "open",
    createdAt: T0,
    updatedAt: T0,
    ...over,
  };
}

export function rule(id: string, over: Partial<RuleRecord> = {}): RuleRecord {
  return {
    id,
    statement: "Supplier X always bills in EUR",
    value: { currency: "EUR" },
    proposedBy: "agent",
    createdAt: T0,
    updatedAt: T0,
    ...over,
  };
}

export function event(runId: string, type: EventRecord["type"], superstep = 0, data: Json = null): EventRecord {
  return { runId, superstep, type, at: T0, data };
}
