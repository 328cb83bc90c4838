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
  StateValueRow,
  StepRecord,
  VerdictRecord,
} from "../engine/records";
import type { AgentCallSummary, CaseFileMeta, CaseStore, CheckpointSummary, CommitBatch } from "../engine/store";
import { prepareBatch, missingValue, summarize, valueKey } from "./batch";
import type { TableName } from "./batch";
import { SCHEMA_VERSION } from "./schema";
import type { DamagedRecord } from "./tables";

/**
 * A CaseStore held in memory: the engine's tests, dry runs and previews use it. Rows are copied
 * on the way in (by the batch validation, which drops undefined members as JSON would) and
 * structuredClone'd on the way out, so neither the committer nor a reader can alias a stored row.
 * Maps keep insertion order, which is the order every list returns (as the SQLite store does by
 * rowid): upserts keep a row's first position.
 */
export class MemoryStore implements CaseStore {
  readonly readOnly = false;
  private readonly info: CaseFileMeta;
  private readonly runs = new Map<string, RunRecord>();
  private readonly checkpoints = new Map<string, Checkpoint>();
  private readonly values = new Map<string, StateValueRow>();
  private readonly steps = new Map<string, StepRecord>();
  private readonly facts: FactRecord[] = [];
  private readonly agentCalls = new Map<string, AgentCallRecord>();
  private readonly verdicts = new Map<string, VerdictRecord>();
  private readonly intents = new Map<string, IntentRecord>();
  private readonly rules = new Map<string, RuleRecord>();
  private readonly events: EventRecord[] = [];
  private callSummaries: readonly AgentCallSummary[] = [];

  constructor(opts: { tenant?: string; createdAt?: string } = {}) {
    this.info = { schemaVersion: SCHEMA_VERSION, createdAt: opts.createdAt ?? new Date().toISOString() };
    if (opts.tenant !== undefined) this.info.tenant = opts.tenant;
  }

  /** Always empty: every row came through prepareBatch and lives only in memory. (SqlJsStore scans its tables.) */
  damagedRecords(): DamagedRecord[] {
    return [];
  }

  meta(): CaseFileMeta {
    return { ...this.info };
  }

  commit(batch: CommitBatch): void {
    const lastSeq = this.events.length ? this.events[this.events.length - 1]!.seq! : 0;
    const b = prepareBatch(batch, { exists: (t, k) => this.exists(t, k), nextEventSeq: lastSeq + 1 });
    // Nothing below can throw: prepareBatch has checked every row.
    for (const r of b.runs) this.runs.set(r.id, r);
    for (const c of b.checkpoints) this.checkpoints.set(c.id, c);
    for (const v of b.values) this.values.set(valueKey(v.run, v.key, v.version), v);
    for (const s of b.steps) this.steps.set(s.id, s);
    this.facts.push(...b.facts);
    for (const a of b.agentCalls) this.agentCalls.set(a.id, a);
    for (const v of b.verdicts) this.verdicts.set(v.id, v);
    for (const i of b.intents) this.intents.set(i.id, i);
    for (const r of b.rules) this.rules.set(r.id, r);
    this.events.push(...b.events);
  }

  private exists(table: TableName, key: string): boolean {
    switch (table) {
      case "checkpoints":
        return this.checkpoints.has(key);
      case "values":
        return this.values.has(key);
      case "steps":
        return this.steps.has(key);
      case "agentCalls":
        return this.agentCalls.has(key);
      case "verdicts":
        return this.verdicts.has(key);
      default:
        return false;
    }
  }

  getRun(id: string): RunRecord | undefined {
    return out(this.runs.get(id));
  }

  listRuns(): RunRecord[] {
    return out([...this.runs.values()]);
  }

  getCheckpoint(id: string): Checkpoint | undefined {
    return out(this.checkpoints.get(id));
  }

  listCheckpoints(runId: string, superstep?: number): CheckpointSummary[] {
    return this.ofRun(runId)
      .filter((c) => superstep === undefined || c.superstep === superstep)
      .map(summarize);
  }

  latestCheckpoint(runId: string, before?: number): Checkpoint | undefined {
    const all = this.ofRun(runId).filter((c) => before === undefined || c.superstep < before);
    return out(all[all.length - 1]);
  }

  /** A run's checkpoints by superstep; the sort is stable, so ties keep commit order. */
  private ofRun(runId: string): Checkpoint[] {
    return [...this.checkpoints.values()].filter((c) => c.runId === runId).sort((a, b) => a.superstep - b.superstep);
  }

  readValues(refs: Record<string, KeyRef>): Record<string, Json> {
    const result: Record<string, Json> = {};
    for (const [key, ref] of Object.entries(refs)) {
      const row = this.values.get(valueKey(ref.run, key, ref.version));
      if (!row) throw missingValue("memory store", key, ref);
      result[key] = structuredClone(row.value);
    }
    return result;
  }

  listSteps(runId: string, superstep?: number): StepRecord[] {
    return out([...this.steps.values()].filter((s) => s.runId === runId && (superstep === undefined || s.superstep === superstep)));
  }

  listFacts(runId: string): FactRecord[] {
    return out(this.facts.filter((f) => f.runId === runId));
  }

  listAgentCalls(runId?: string, superstep?: number): AgentCallRecord[] {
    return out(
      [...this.agentCalls.values()].filter(
        (a) => (runId === undefined || a.runId === runId) && (superstep === undefined || a.superstep === superstep),
      ),
    );
  }

  /** Agent calls are append-only, so the count of calls tells whether the summaries are current. */
  agentCallSummaries(): readonly AgentCallSummary[] {
    if (this.callSummaries.length !== this.agentCalls.size) {
      this.callSummaries = Object.freeze(
        [...this.agentCalls.values()].map((a) =>
          Object.freeze({
            id: a.id,
            runId: a.runId,
            superstep: a.superstep,
            executor: a.executor,
            hash: a.hash,
            tokens: a.tokens?.count ?? null,
          }),
        ),
      );
    }
    return this.callSummaries;
  }

  getAgentCall(id: string): AgentCallRecord | undefined {
    return out(this.agentCalls.get(id));
  }

  listVerdicts(runId?: string, filter: { superstep?: number; agentCallId?: string } = {}): VerdictRecord[] {
    return out(
      [...this.verdicts.values()].filter(
        (v) =>
          (runId === undefined || v.runId === runId) &&
          (filter.superstep === undefined || v.superstep === filter.superstep) &&
          (filter.agentCallId === undefined || v.agentCallId === filter.agentCallId),
      ),
    );
  }

  listIntents(filter: { runId?: string; status?: IntentRecord["status"] } = {}): IntentRecord[] {
    return out(
      [...this.intents.values()].filter(
        (i) => (filter.runId === undefined || i.runId === filter.runId) && (filter.status === undefined || i.status === filter.status),
      ),
    );
  }

  getIntent(id: string): IntentRecord | undefined {
    return out(this.intents.get(id));
  }

  listRules(includeDeleted = false): RuleRecord[] {
    return out([...this.rules.values()].filter((r) => includeDeleted || r.deleted !== true));
  }

  listEvents(filter: { runId?: string; superstep?: number; afterSeq?: number } = {}): EventRecord[] {
    return out(
      this.events.filter(
        (e) =>
          (filter.runId === undefined || e.runId === filter.runId) &&
          (filter.superstep === undefined || e.superstep === filter.superstep) &&
          (filter.afterSeq === undefined || e.seq! > filter.afterSeq),
      ),
    );
  }

  close(): void {
    // Nothing to release; the rows stay readable so a test can inspect a store after a run.
  }
}

/** Every row leaves the store as a copy, so a caller mutating it cannot change what is stored (a missing one stays undefined). */
function out<T>(value: T): T {
  return structuredClone(value);
}
