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
} from "./records";

/**
 * One durable unit of writes. The engine hands the store a batch at the end of each superstep
 * (and, for effects, when an intent opens or closes); the store makes the whole batch durable
 * before `commit` returns, or none of it. Rows with an existing id are replaced (upsert): runs,
 * intents and rules change status over time; the other tables are append-only.
 */
export interface CommitBatch {
  runs?: RunRecord[];
  checkpoints?: Checkpoint[];
  values?: StateValueRow[];
  steps?: StepRecord[];
  facts?: FactRecord[];
  agentCalls?: AgentCallRecord[];
  verdicts?: VerdictRecord[];
  intents?: IntentRecord[];
  rules?: RuleRecord[];
  events?: EventRecord[];
}

export interface CheckpointSummary {
  id: string;
  runId: string;
  superstep: number;
  createdAt: string;
  parentId?: string;
  pending: number;
  waiting: number;
}

export interface CaseFileMeta {
  schemaVersion: number;
  createdAt: string;
  tenant?: string;
}

/**
 * The store port the engine writes through. Two implementations share one conformance suite
 * (test/unit/casefile/conformance.test.ts): MemoryStore and SqlJsStore (the case file on disk).
 */
export interface CaseStore {
  readonly readOnly: boolean;
  meta(): CaseFileMeta;

  /** Durably applies every row of the batch, or throws having applied none. */
  commit(batch: CommitBatch): void;

  getRun(id: string): RunRecord | undefined;
  listRuns(): RunRecord[];

  getCheckpoint(id: string): Checkpoint | undefined;
  /** Checkpoints of one run, by superstep ascending. */
  listCheckpoints(runId: string): CheckpointSummary[];
  latestCheckpoint(runId: string): Checkpoint | undefined;

  /** The values the refs point at; throws CORRUPT_CASE_FILE naming the key if one is missing. */
  readValues(refs: Record<string, KeyRef>): Record<string, Json>;

  listSteps(runId: string, superstep?: number): StepRecord[];
  listFacts(runId: string): FactRecord[];
  listAgentCalls(runId?: string): AgentCallRecord[];
  getAgentCall(id: string): AgentCallRecord | undefined;
  listVerdicts(runId?: string): VerdictRecord[];
  listIntents(filter?: { runId?: string; status?: IntentRecord["status"] }): IntentRecord[];
  getIntent(id: string): IntentRecord | undefined;
  listRules(includeDeleted?: boolean): RuleRecord[];
  /** Events in append order, optionally for one run and after a sequence number. */
  listEvents(filter?: { runId?: string; afterSeq?: number }): EventRecord[];

  /** Releases the lock and file handles; a MemoryStore just forgets nothing. */
  close(): void;
}
