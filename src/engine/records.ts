/**
 * The plain, JSON-only records a run leaves behind. They are what a case file holds (one table
 * each) and what crosses process boundaries; nothing here holds a function or a class instance,
 * so loading a record can never execute anything.
 */

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/**
 * `superseded`: the run waited for a person and the answer went to a branch made for a newer
 * workflow (`supersededBy`), which continues the case; the run itself is kept as it was.
 */
export type RunStatus = "running" | "paused" | "waiting" | "completed" | "failed" | "stopped" | "needs_replanning" | "superseded";

export interface RunRecord {
  id: string;
  /** Set on branch runs: the run and checkpoint this one was resumed or forked from. */
  parentRunId?: string;
  parentCheckpointId?: string;
  workflow: { name: string; version: number; graphHash: string; path?: string };
  status: RunStatus;
  createdAt: string;
  updatedAt: string;
  input?: Json;
  /** Keys changed by an edit-then-fork patch, with the JSON paths touched. */
  patch?: Json;
  /** Why the run ended failed: the error, and the executor (or edge) at fault. */
  error?: { code: string; message: string; executor?: string; edge?: string };
  outputs?: Json[];
  /** For a `superseded` run: the branch that took its person's answer and continues the case. */
  supersededBy?: string;
}

/** Where a key's value at a checkpoint is stored: the run that wrote that version. */
export interface KeyRef {
  version: number;
  run: string;
}

export interface Message {
  /** Executor the message is delivered to. */
  to: string;
  from: string;
  payload: Json;
  /** "answer" messages carry a person's answer to a waiting request. */
  kind?: "data" | "answer" | "input";
}

export interface WaitingRequest {
  id: string;
  executor: string;
  runId: string;
  superstep: number;
  createdAt: string;
  /** What the person is asked, as the request step built it. */
  prompt: { title: string; detail?: string; options?: string[] };
  /** The message that triggered the request, handed back with the answer. */
  message: Json;
}

export const CHECKPOINT_FORMAT = 1;

/**
 * Everything needed to continue a run from the end of a superstep. Values are referenced, not
 * embedded: a key unchanged since the last superstep points at the same stored version.
 */
export interface Checkpoint {
  v: typeof CHECKPOINT_FORMAT;
  id: string;
  runId: string;
  superstep: number;
  /** Previous checkpoint in this run, or the checkpoint a branch was forked from. */
  parentId?: string;
  createdAt: string;
  workflow: { name: string; version: number; graphHash: string; executors: string[] };
  keys: Record<string, KeyRef>;
  pending: Message[];
  /** Fan-in edges waiting for more of their sources: edge id -> source -> payload. */
  fanIn: Record<string, Record<string, Json>>;
  /** Executor-local state, kept across supersteps. */
  local: Record<string, Json>;
  waiting: WaitingRequest[];
}

export interface StateValueRow {
  run: string;
  key: string;
  version: number;
  value: Json;
}

export type StepKind = "code" | "loader" | "agent" | "commit" | "effect" | "request";

export interface StepRecord {
  id: string;
  runId: string;
  superstep: number;
  executor: string;
  kind: StepKind;
  status: "ok" | "failed" | "waiting";
  startedAt: string;
  endedAt: string;
  durationMs: number;
  /** Keys written by this step (applied only if the whole superstep committed). */
  writes: string[];
  sent: number;
  error?: { code: string; message: string };
}

export interface Provenance {
  source: string;
  sourceVersion: string;
  readAt: string;
}

/** A fact as it sits in state: the value and where it came from. */
export interface Fact<T = Json> {
  value: T;
  provenance: Provenance;
}

/**
 * An extract as it sits in state: the part of a long document a step needs (a table, the terms of
 * a contract or a price list), labelled with the document it was taken from. The engine makes it
 * from the fact named by `from` and makes it again whenever that fact's source or version (or its
 * content, for state edited by hand) no longer matches; no executor ever sees it otherwise.
 */
export interface Extract<T = Json> {
  value: T;
  /** The fact key holding the document. */
  from: string;
  /** The document's id and version in the system of record, from the fact's provenance when extracted. */
  source: string;
  sourceVersion: string;
  /** Fingerprint (`stableHash`) of the fact's value the extract was taken from. */
  sourceHash: string;
  extractedAt: string;
}

export interface FactRecord extends Provenance {
  runId: string;
  superstep: number;
  key: string;
  version: number;
  executor: string;
}

export interface ChatMessage {
  role: "system" | "user" | "assistant";
  content: string;
}

export interface AgentCallRecord {
  id: string;
  runId: string;
  superstep: number;
  executor: string;
  request: {
    messages: ChatMessage[];
    model: string;
    params: Record<string, Json>;
    responseSchema: Json;
  };
  /** Stable hash of `request`: same state in, same hash out. */
  hash: string;
  tokens?: { count: number; soft?: number; hard?: number; tokenizer: string };
  provider: string;
  mode: "recorded" | "live" | "edited" | "scripted";
  /**
   * The model the provider says answered (the server's `model`, which may be a dated version of
   * `request.model`; the editor's model id for vscode-lm), when it says one. `request.model` is
   * the model the step asked for: the step's own, or the one the run named.
   */
  answeredBy?: string;
  /** The provider's id for this response (the server's completion `id`), when it gives one. */
  responseId?: string;
  raw?: string;
  proposal?: Json;
  /** Why the answer was rejected before the commit step (bad JSON, schema, unknown action...). */
  rejection?: { code: string; message: string };
  usage?: Json;
  /** For edited replays: the hash of the original context this one replaced. */
  originalHash?: string;
  /**
   * The business rules handed to the context builder, whole, exactly as it got them: an eval case
   * exported later, a recorded replay and the commit step read them from here, so a rule edited,
   * added or deleted after the call changes none of them. Always set on calls recorded since it was
   * kept (`[]` when no rule was in force).
   */
  rulesInForce?: RuleInForce[];
  /** Where `rulesInForce` came from: the rules in force when the call ran, or those recorded with the call a recorded replay replays. */
  rulesFrom?: RulesFrom;
  /**
   * Calls recorded before `rulesInForce` was kept: only which rules, as confirmed when, the
   * context was given. Readers fall back to the rule table for the rest and say so.
   */
  rules?: { id: string; confirmedAt: string }[];
  /** The extracts handed to the context builder, each with the document version it was taken from. */
  extracts?: { key: string; from: string; source: string; sourceVersion: string }[];
  /**
   * Set when the context was over its soft budget and the step's `summarise` hook shortened the
   * working context: the count before; `tokens.count` is the count actually sent. State and the
   * case file's other records are never shortened, only the request.
   */
  summarised?: { tokensBefore: number; messagesBefore: number; hashBefore: string };
  at: string;
  durationMs: number;
}

export interface RuleResult {
  name: string;
  ok: boolean;
  message: string;
  /** The business rules (ids) this commit rule read the statement or value of; absent when none. */
  businessRules?: string[];
}

/** How a commit step got its business rules: those recorded with the agent call it judges, or (no such record) the rules in force when it ran. */
export interface VerdictBusinessRules {
  from: "agent call" | "in force";
  /** The rules the commit rules and `apply` were given, whole. */
  given: RuleInForce[];
  /** Ids of the given rules whose statement or value a commit rule or `apply` read. */
  used: string[];
  /** Ids of those `apply` read (the commit rules' reads are on each rule result); absent on verdicts recorded before. */
  byApply?: string[];
}

export type Verdict = "accepted" | "rejected" | "escalated";

export interface VerdictRecord {
  id: string;
  runId: string;
  superstep: number;
  executor: string;
  agentCallId?: string;
  proposal?: Json;
  rules: RuleResult[];
  verdict: Verdict;
  reason: string;
  /** The state changes the commit step actually applied: key -> { before, after }. */
  diff: Record<string, { before: Json | undefined; after: Json }>;
  /** The business rules the commit step was given and which of them it used (absent on verdicts recorded before). */
  businessRules?: VerdictBusinessRules;
  at: string;
}

export type IntentStatus = "open" | "done" | "failed" | "needs_replanning";

export interface IntentRecord {
  /**
   * The record's id: the idempotency key itself on the case's root run; `<key>@<run>` on a
   * branch, since branches share the root's keys and each run keeps its own record of one.
   */
  id: string;
  /** The idempotency key sent to the target (absent on records made before branches had their own: then the id). */
  key?: string;
  runId: string;
  superstep: number;
  executor: string;
  action: string;
  target: string;
  payload: Json;
  /** Values or fingerprints from the live record the effect relies on. */
  reliesOn: Json;
  status: IntentStatus;
  reference?: Json;
  error?: { code: string; message: string };
  /** When the live record changed: both versions, for a person. */
  drift?: Json;
  /** The record the plan was made against (version and fields), compared with the live one before acting. */
  basis?: { version: string; record: Json };
  /** The live version the effect's check found and the act wrote against (If-Match). */
  expectedVersion?: string;
  /**
   * Set on a branch whose effect was identical to one another run of the case already holds under
   * the same key: that run's intent, whose reference this one reused without acting.
   */
  reusedFrom?: { run: string; intent: string };
  /** Set when the effect was refused because another run holds its key with a different intent. */
  conflict?: IntentConflict;
  createdAt: string;
  updatedAt: string;
}

/** The part of an intent two runs holding one key are compared on. */
export interface IntentTerms {
  action: string;
  target: string;
  payload: Json;
  reliesOn: Json;
}

/**
 * Both intents for one idempotency key, side by side: the one another run of the case holds
 * (done, or open with its outcome unknown) and the one this run proposed, with every field path
 * at which they differ. Kept on the refused intent for a person to decide.
 */
export interface IntentConflict {
  key: string;
  existing: IntentTerms & { run: string; intent: string; status: IntentStatus; reference: Json | null };
  proposed: IntentTerms;
  /** Paths such as `payload.amount` or `action`, with each side's value (null when absent). */
  differs: { path: string; existing: Json | null; proposed: Json | null }[];
  detectedAt: string;
}

/**
 * A rule as an agent step's context (and the commit step after it) receives it: only what a rule
 * in force can have. Recorded whole with each agent call (AgentCallRecord.rulesInForce).
 */
export interface RuleInForce {
  id: string;
  statement: string;
  value: Json;
  sourceCase?: string;
  proposedBy: string;
  confirmedBy: string;
  confirmedAt: string;
  expiresAt?: string;
}

/** Where an agent call's rules came from (AgentCallRecord.rulesFrom). */
export type RulesFrom = { from: "in force" } | { from: "recorded"; agentCallId: string };

export interface RuleRecord {
  id: string;
  statement: string;
  value: Json;
  sourceCase?: string;
  proposedBy: string;
  confirmedBy?: string;
  confirmedAt?: string;
  expiresAt?: string;
  createdAt: string;
  updatedAt: string;
  deleted?: boolean;
}

export type EventType =
  | "run_started"
  | "run_resumed"
  | "superstep_started"
  | "step_completed"
  | "step_failed"
  | "checkpoint"
  | "output"
  | "request_waiting"
  | "request_answered"
  | "intent"
  | "rule"
  | "extract"
  | "warning"
  | "run_paused"
  | "run_completed"
  | "run_failed"
  | "run_stopped"
  | "run_waiting"
  | "run_needs_replanning";

export interface EventRecord {
  /** Assigned by the store, increasing across the case file. */
  seq?: number;
  runId: string;
  superstep: number;
  type: EventType;
  at: string;
  data: Json;
}
