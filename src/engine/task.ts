/**
 * The types of one task (one executor invoked for one delivered message) and its step id. The
 * engine builds a TaskInput per message; runTask (steps.ts) and the step kinds (agentStep.ts,
 * commitStep.ts, effectStep.ts) fill a TaskOutcome; superstep.ts applies the outcomes. They all
 * import from here, and this module imports none of them, so dependencies point one way.
 */
import type { ExecutorSpec } from "./executors";
import type { ModelProvider } from "./model";
import type {
  AgentCallRecord,
  ChatMessage,
  EventRecord,
  Json,
  Message,
  Provenance,
  StepRecord,
  VerdictRecord,
  WaitingRequest,
} from "./records";
import type { RuleInForce } from "./rules";
import type { CaseStore } from "./store";
import type { Workflow } from "./workflow";

/** A write an executor staged; checked and applied only when its superstep commits. */
export interface StagedWrite {
  executor: string;
  key: string;
  value: unknown;
  /** The id of the step that staged it, when known: named in a refusal of the write. */
  step?: string;
}

/**
 * How an agent step gets its answer when a step is replayed: reuse the recorded response
 * (only if the context hash still matches), call the model live, or call it with context
 * messages the developer edited (recorded as edited, beside the original).
 */
export interface AgentReplay {
  /** Executor the replay applies to; other agent steps run normally. */
  executor: string;
  mode: "recorded" | "live" | "edited";
  recorded?: AgentCallRecord;
  messages?: ChatMessage[];
}

/**
 * Pauses that hold an effect still at the moments a crash matters, for the kill test and the
 * reconcile tests: a SIGKILL, or a copy of the case file, lands exactly in the window that
 * reconciliation exists for. The engine reads nothing from its environment; the runner's session
 * sets these from CASEFILE_TEST_PAUSE_BEFORE_ACT_MS and CASEFILE_TEST_PAUSE_AFTER_ACT_MS. Unset
 * (always, outside tests) they do nothing.
 */
export interface EngineHooks {
  /** Milliseconds an effect waits with its intent open, before acting. */
  pauseBeforeActMs?: number;
  /** Milliseconds an effect waits after acting, before recording the reference. */
  pauseAfterActMs?: number;
}

/** What one executor invocation needs; built by the engine for each delivered message. */
export interface TaskInput {
  workflow: Workflow;
  executor: string;
  spec: ExecutorSpec;
  runId: string;
  /** The case this run belongs to: the root of its branch tree. Effects key intents on it. */
  caseId: string;
  superstep: number;
  /** Distinguishes several invocations of one executor in one superstep. */
  index: number;
  message: Message;
  /** All of state at the superstep's start; values are frozen. */
  state: Readonly<Record<string, Json>>;
  local: Json | undefined;
  signal: AbortSignal;
  now: () => string;
  provider?: ModelProvider;
  store: CaseStore;
  /** How many times this agent step was called before in this run. */
  callIndex: number;
  replay?: AgentReplay;
  log: (message: string) => void;
  /** Passes events committed during the step (an effect's intents) to the engine's listeners. */
  emit?: (event: EventRecord) => void;
  /** The business rules in force (confirmed, unexpired), read when an agent builds its context. */
  rules?: () => readonly RuleInForce[];
  /** The engine's test hooks (EngineOptions.hooks); effects read their pauses here. */
  hooks?: EngineHooks;
}

/** Everything an invocation produced; applied only if the whole superstep commits. */
export interface TaskOutcome {
  step: StepRecord;
  writes: StagedWrite[];
  facts: { key: string; provenance: Provenance }[];
  sends: Json[];
  outputs: Json[];
  local?: { value: Json };
  agentCall?: AgentCallRecord;
  verdict?: VerdictRecord;
  waiting?: WaitingRequest;
  warnings: string[];
  error?: { code: string; message: string };
}

/** The id of a step record (and of its agent call, verdict or request): `run:superstep:executor`, `#index` after the first. */
export function stepId(runId: string, superstep: number, executor: string, index: number): string {
  return `${runId}:${superstep}:${executor}${index > 0 ? `#${index}` : ""}`;
}
