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

/**
 * An agent call without its request, response or proposal: what a list of calls shows (the
 * Context tab's compare picker, the timeline's link from an agent step to its verdict). The
 * SQLite store reads it from columns and one json_extract, never parsing a call's JSON in
 * JavaScript.
 */
export interface AgentCallSummary {
  id: string;
  runId: string;
  superstep: number;
  executor: string;
  hash: string;
  /** The request's token count, when it was counted. */
  tokens: number | null;
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
  /** Checkpoints of one run (or of one of its supersteps), by superstep ascending. */
  listCheckpoints(runId: string, superstep?: number): CheckpointSummary[];
  /** The run's last checkpoint; with `before`, its last checkpoint of a superstep before that one. */
  latestCheckpoint(runId: string, before?: number): Checkpoint | undefined;

  /** The values the refs point at; throws CORRUPT_CASE_FILE naming the key if one is missing. */
  readValues(refs: Record<string, KeyRef>): Record<string, Json>;

  listSteps(runId: string, superstep?: number): StepRecord[];
  listFacts(runId: string): FactRecord[];
  /** Agent calls in commit order: every one, one run's, or one superstep's of one run. */
  listAgentCalls(runId?: string, superstep?: number): AgentCallRecord[];
  /**
   * Every agent call of the case file, summarised, in commit order. Returns the same array (do
   * not change it) for as long as no agent call is added, so a reader may keep what it derives
   * from it keyed on the array; a store refreshed with new calls returns a new array.
   */
  agentCallSummaries(): readonly AgentCallSummary[];
  getAgentCall(id: string): AgentCallRecord | undefined;
  /** Verdicts in commit order: every one or one run's, narrowed to one superstep or to those judging one agent call. */
  listVerdicts(runId?: string, filter?: { superstep?: number; agentCallId?: string }): VerdictRecord[];
  listIntents(filter?: { runId?: string; status?: IntentRecord["status"] }): IntentRecord[];
  getIntent(id: string): IntentRecord | undefined;
  listRules(includeDeleted?: boolean): RuleRecord[];
  /** Events in append order, optionally for one run, one superstep of it, and after a sequence number. */
  listEvents(filter?: { runId?: string; superstep?: number; afterSeq?: number }): EventRecord[];

  /** Releases the lock and file handles; a MemoryStore just forgets nothing. */
  close(): void;
}
