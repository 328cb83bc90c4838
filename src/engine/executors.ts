import { z } from "zod";
import type { ChatMessage, Extract, Fact, Json, RuleResult, Verdict } from "./records";
import type { RuleInForce } from "./rules";

/**
 * The executor kinds a workflow is made of, as the author writes them. Each factory only tags
 * its spec with a kind; `defineWorkflow` validates the whole graph and the engine runs it.
 */

/** A state key holding facts of record: only loaders may write it, always with provenance. */
export interface FactKey<T extends z.ZodType = z.ZodType> {
  readonly kind: "fact";
  readonly schema: T;
}

export function fact<T extends z.ZodType>(schema: T): FactKey<T> {
  return { kind: "fact", schema };
}

/** The document an extractor is handed with: the fact key it sits in and where it was read. */
export interface ExtractSource {
  key: string;
  source: string;
  sourceVersion: string;
  readAt: string;
}

/**
 * A state key holding an extract of a long document (a table, the terms of a contract or a
 * price list) that sits in the fact `from`. No executor writes it: the engine runs `run` on the
 * document before an executor that reads the key runs, whenever there is no extract yet or the
 * one in state was taken from another source or version, and commits it with that superstep.
 */
export interface ExtractKey<T extends z.ZodType = z.ZodType> {
  readonly kind: "extract";
  readonly schema: T;
  /** The fact key holding the document. */
  readonly from: string;
  // The document is whatever the source fact's schema says; the author types it at the call site.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  readonly run: (document: any, source: ExtractSource) => unknown;
  readonly description?: string;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export interface ExtractSpec<T extends z.ZodType, D = any> {
  /** The fact key holding the document. */
  from: string;
  /**
   * Takes the extract from the document (the fact's value): a function of the document alone,
   * so the same version always gives the same extract. It may be async.
   */
  run(document: D, source: ExtractSource): z.input<T> | Promise<z.input<T>>;
  description?: string;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function extract<T extends z.ZodType, D = any>(schema: T, spec: ExtractSpec<T, D>): ExtractKey<T> {
  return { kind: "extract", schema, from: spec.from, run: spec.run as ExtractKey["run"], description: spec.description };
}

export type KeyDecl = z.ZodType | FactKey | ExtractKey;
export type StateShape = Record<string, KeyDecl>;

/** The type of state a shape describes: facts arrive wrapped with their provenance, extracts with their source. */
export type StateOf<S extends StateShape> = {
  [K in keyof S]?: S[K] extends FactKey<infer T>
    ? Fact<z.infer<T>>
    : S[K] extends ExtractKey<infer T>
      ? Extract<z.infer<T>>
      : S[K] extends z.ZodType
        ? z.infer<S[K]>
        : never;
};

// Executor specs are written against a loose state type by default; an author who wants
// checked reads passes the state type: `code<State>({...})`.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyState = Record<string, any>;

export interface StepContext<S = AnyState> {
  readonly runId: string;
  readonly superstep: number;
  readonly executor: string;
  /** State as of the start of the superstep, limited to the keys the executor reads or owns. */
  readonly state: Readonly<S>;
  /** The payload delivered to this executor (for a fan-in edge: source id -> payload). */
  readonly message: Json;
  readonly from: string;
  /** Stages a write to a key this executor owns; applied when the superstep commits. */
  write<K extends keyof S & string>(key: K, value: S[K]): void;
  /** Sends a payload along this executor's outgoing edges (delivered next superstep). */
  send(payload: Json): void;
  /** Adds a workflow output, kept with the run. */
  yield(output: Json): void;
  /** This executor's own state, kept across supersteps in the checkpoint. */
  readonly local: Json | undefined;
  setLocal(value: Json): void;
  log(message: string): void;
  readonly signal: AbortSignal;
}

export interface LoaderContext<S = AnyState> extends StepContext<S> {
  /** Stages a fact: the value and where it was read (the engine stamps the time read). */
  fact(key: keyof S & string, value: Json, from: { source: string; sourceVersion: string }): void;
}

interface BaseSpec {
  /** Keys this executor may read (its own keys are readable too). */
  reads?: readonly string[];
  /** Keys this executor alone writes. */
  owns?: readonly string[];
  description?: string;
}

export interface CodeSpec<S = AnyState> extends BaseSpec {
  /** Returning a value other than undefined sends it, like ctx.send. */
  run(ctx: StepContext<S>): Json | void | Promise<Json | void>;
}

export interface LoaderSpec<S = AnyState> extends BaseSpec {
  run(ctx: LoaderContext<S>): Json | void | Promise<Json | void>;
}

export interface AgentSpec<S = AnyState, P extends z.ZodType = z.ZodType> extends BaseSpec {
  /**
   * Builds the working context from state: a pure function, recorded and then thrown away.
   * `rules` are the business rules in force (confirmed and unexpired; the engine filters them),
   * for the context to state the ones that matter to this step.
   */
  context(state: Readonly<S>, message: Json, rules: readonly RuleInForce[]): ChatMessage[];
  /** Schema of the proposal; must include `action`, `reason` and `facts` (cited fact keys). */
  proposal: P;
  /**
   * The model the step asks for. A model named for the run (the provider's `model`, Azure's
   * `deployment`, the editor's `casefile.model`) replaces it, unless `pin` is set: then the step
   * is called with this model only, and a run naming another one is refused (MODEL_PINNED).
   */
  model: { model: string; params?: Record<string, Json>; pin?: boolean };
  /** Token budget for the context; above soft warns (or summarises, with `summarise`), above hard refuses. */
  budget?: { soft?: number; hard?: number };
  /**
   * Shortens the working context when it is above the soft budget: called with the messages
   * `context` built (and their count and the budget), returns the messages to send instead. Only
   * the request is shortened: state, facts and the case file's records stay whole. The hard
   * budget is checked on what it returns; the call record keeps the count before and after.
   */
  summarise?(messages: readonly ChatMessage[], info: SummariseInfo): ChatMessage[] | Promise<ChatMessage[]>;
}

/** What `summarise` is told: the context's token count (with the model's tokenizer) and the budget. */
export interface SummariseInfo {
  step: string;
  model: string;
  tokens: number;
  soft: number;
  hard?: number;
}

export interface RuleInput<S = AnyState> {
  proposal: Json & Record<string, Json>;
  state: Readonly<S>;
  message: Json;
  /**
   * The business rules in force the agent's context was built with (recorded with its call), so a
   * rule's structured value reaches deterministic code without the model copying it. Frozen; the
   * verdict records which of them a rule read the statement or value of.
   */
  businessRules: readonly RuleInForce[];
}

/** A rule returns pass/fail with a message; a failing rule escalates unless it says reject. */
export type RuleFn<S = AnyState> = (input: RuleInput<S>) => boolean | { ok: boolean; message: string; onFail?: "reject" | "escalate" };

export interface CommitOutcome<S = AnyState> {
  proposal: (Json & Record<string, Json>) | undefined;
  verdict: Verdict;
  reason: string;
  rules: RuleResult[];
  state: Readonly<S>;
  /** The same business rules the commit rules were given (see RuleInput.businessRules). */
  businessRules: readonly RuleInForce[];
}

export interface CommitSpec<S = AnyState> extends BaseSpec {
  rules: Record<string, RuleFn<S>>;
  /** Applies the verdict: stage writes with ctx.write; the returned value is sent on. */
  apply(outcome: CommitOutcome<S>, ctx: StepContext<S>): Json | void | Promise<Json | void>;
}

/** The default answer to a request step: approve, reject or choose one option, with a comment. */
export const ApprovalAnswer = z.object({
  decision: z.enum(["approve", "reject", "choose"]),
  choice: z.string().optional(),
  comment: z.string().optional(),
});

export interface RequestPrompt {
  title: string;
  detail?: string;
  options?: string[];
}

export interface RequestSpec<S = AnyState, A extends z.ZodType = typeof ApprovalAnswer> extends BaseSpec {
  /** What to ask the person, built from state when the request opens. */
  prompt(state: Readonly<S>, message: Json): RequestPrompt;
  /** Schema of the answer; defaults to ApprovalAnswer (approve, reject or choose, with a comment). */
  answer?: A;
  /** Called in the superstep after the person answered. */
  onAnswer(answer: z.infer<A>, ctx: StepContext<S>): Json | void | Promise<Json | void>;
}

export interface EffectIntent {
  action: string;
  target: string;
  payload: Json;
  /**
   * The exact values or fingerprints of the live record this effect relies on. An object maps a
   * field path of the record ("taxNumber", "address.country") to the value it must still have, or
   * to a fingerprint of it (`stableHash(value)`, a "sha256:" string). Before acting, a change in
   * any of these stops the case for replanning; a change anywhere else is logged and let through.
   */
  reliesOn: Json;
  /**
   * The record as it was when the plan was made (usually a fact's value and source version).
   * With `check`, it tells an unchanged record from one changed in fields the effect does not
   * rely on, and it is kept beside the live record when the case stops for replanning.
   */
  basis?: LiveRecord;
}

/** A record as the system of record holds it: its version (ETag, row version) and its fields. */
export interface LiveRecord {
  version: string;
  record: Json;
}

/** What `check`, `act` and `reconcile` are handed: the intent, its idempotency key, and (after a check) the version to write against. */
export interface PlannedEffect extends EffectIntent {
  /** The idempotency key, derived from case and step: send it with every request of the act. */
  key: string;
  /** The live version `check` found: send it as If-Match (or the system's record version) so a change after the check is refused. */
  expectedVersion?: string;
}

export interface EffectSpec<S = AnyState> extends BaseSpec {
  /** Declares what will be done; the engine derives the idempotency key from case and step. */
  intent(state: Readonly<S>, message: Json): EffectIntent;
  /**
   * Reads the live record the effect relies on, just before acting (and again before acting
   * after a restart). Without it the effect acts on its plan unchecked.
   */
  check?(intent: PlannedEffect, ctx: StepContext<S>): Promise<LiveRecord>;
  /**
   * Performs the effect, sending the idempotency key (and If-Match with `expectedVersion` where
   * the system supports it); returns the system's reference. A refused conditional write (HTTP
   * 412) should throw `PreconditionFailedError` with the record's current version: the case then
   * stops for replanning instead of failing.
   */
  act(intent: PlannedEffect, ctx: StepContext<S>): Promise<Json>;
  /** Looks the idempotency key up after a crash: the reference if the effect happened, else null. */
  reconcile?(intent: PlannedEffect): Promise<Json | null>;
  /** Called with the reference once recorded; stage writes and return what to send on. */
  done?(reference: Json, ctx: StepContext<S>): Json | void | Promise<Json | void>;
}

export type ExecutorSpec =
  | ({ kind: "code" } & CodeSpec)
  | ({ kind: "loader" } & LoaderSpec)
  | ({ kind: "agent" } & AgentSpec)
  | ({ kind: "commit" } & CommitSpec)
  | ({ kind: "request" } & RequestSpec<AnyState, z.ZodType>)
  | ({ kind: "effect" } & EffectSpec);

export function code<S = AnyState>(spec: CodeSpec<S>): ExecutorSpec {
  return { kind: "code", ...(spec as CodeSpec) };
}
export function loader<S = AnyState>(spec: LoaderSpec<S>): ExecutorSpec {
  return { kind: "loader", ...(spec as LoaderSpec) };
}
export function agent<S = AnyState, P extends z.ZodType = z.ZodType>(spec: AgentSpec<S, P>): ExecutorSpec {
  return { kind: "agent", ...(spec as unknown as AgentSpec) };
}
export function commit<S = AnyState>(spec: CommitSpec<S>): ExecutorSpec {
  return { kind: "commit", ...(spec as unknown as CommitSpec) };
}
export function request<S = AnyState, A extends z.ZodType = typeof ApprovalAnswer>(spec: RequestSpec<S, A>): ExecutorSpec {
  return { kind: "request", ...(spec as unknown as RequestSpec<AnyState, z.ZodType>) };
}
export function effect<S = AnyState>(spec: EffectSpec<S>): ExecutorSpec {
  return { kind: "effect", ...(spec as unknown as EffectSpec) };
}

export interface EdgeSpec {
  /** One source, or several for a fan-in: the target runs once every source has sent. */
  from: string | readonly string[];
  /** One target, or several for a fan-out. */
  to: string | readonly string[];
  /** A condition over the payload and the state after the sender's superstep. */
  when?: (payload: Json, state: Readonly<AnyState>) => boolean;
  /** Shown in the graph view for conditional edges. */
  label?: string;
}

export function edge(from: EdgeSpec["from"], to: EdgeSpec["to"], options: Pick<EdgeSpec, "when" | "label"> = {}): EdgeSpec {
  return { from, to, ...options };
}
