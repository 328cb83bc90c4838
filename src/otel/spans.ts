import type { AgentCallRecord, EventRecord, IntentRecord, Json, RunRecord, StepRecord, VerdictRecord } from "../engine/records";
import type { CaseStore } from "../engine/store";

/**
 * A recorded run as OpenTelemetry spans, without the SDK: a pure function from the records a
 * case file holds to plain span descriptions (names, parents, recorded start and end times,
 * attributes, events, error status). export.ts turns them into SDK spans and sends them; the
 * live `--otel` export and `casefile export-otel` both go through here, so a run traced live and
 * the same run exported later from its case file make the same tree.
 *
 * The tree: the run (`workflow <name>`) > one span per superstep > one per step
 * (`<kind> <executor>`) > for an agent step, one GenAI `chat <model>` client span per model call
 * with the gen_ai.* attributes of the semantic conventions. Verdicts, requests and warnings are
 * span events; a failed step, run or effect has status ERROR with its error.
 *
 * What goes in a span by default is only structure and metadata: names, kinds, keys, counts,
 * hashes, models, tokens, the proposed action and verdict, intent keys and outcomes, error codes
 * and messages. Fact values, the run's input and outputs, messages sent to or received from a
 * model, proposal reasons, rule messages, request prompts and intent payloads are included only
 * with `includeContent` (`--otel-content`, `casefile.otel.includeContent`). An API key is never
 * in a record, so never in a span.
 */

export type AttributeValue = string | number | boolean | string[];
export type Attributes = Record<string, AttributeValue>;

export interface SpanEventDescription {
  name: string;
  /** ISO time, from the record. */
  at: string;
  attributes: Attributes;
}

export interface SpanDescription {
  /** This description's id within the run (a record id), for `parentId`; the SDK assigns the span ids. */
  id: string;
  parentId?: string;
  name: string;
  /** `client` for a model call (a request to another service), else `internal`. */
  kind: "internal" | "client";
  start: string;
  end: string;
  attributes: Attributes;
  events: SpanEventDescription[];
  /** Set when what the span stands for failed: its status is ERROR with this message. */
  error?: { type: string; message: string };
}

/** Everything one run recorded that its trace is made from. */
export interface RunRecords {
  run: RunRecord;
  steps: StepRecord[];
  agentCalls: AgentCallRecord[];
  verdicts: VerdictRecord[];
  intents: IntentRecord[];
  events: EventRecord[];
}

export interface SpanOptions {
  /** Include message content, fact values and other payloads (off by default). */
  includeContent: boolean;
}

/** Reads one run's records from a store (a case file or a case of a Postgres store). */
export function readRunRecords(store: CaseStore, runId: string): RunRecords | undefined {
  const run = store.getRun(runId);
  if (!run) return undefined;
  return {
    run,
    steps: store.listSteps(runId),
    agentCalls: store.listAgentCalls(runId),
    verdicts: store.listVerdicts(runId),
    intents: store.listIntents({ runId }),
    events: store.listEvents({ runId }),
  };
}

/** The providers' names as the GenAI conventions spell them (gen_ai.provider.name); others as recorded. */
const PROVIDER_NAMES: Record<string, string> = { openai: "openai", azure: "azure.ai.openai" };

/**
 * OpenInference's span kind, which Phoenix groups and draws spans by (CHAIN, LLM, TOOL); the
 * GenAI attributes are what Jaeger, Aspire and Langfuse show.
 */
const OPENINFERENCE_KIND = "openinference.span.kind";

/** The run's spans, parents before children. */
export function runSpans(records: RunRecords, opts: SpanOptions): SpanDescription[] {
  const { run } = records;
  const content = opts.includeContent;
  const runEnd = maxTime([run.updatedAt, ...records.steps.map((s) => s.endedAt), ...records.events.map((e) => e.at)]);
  const root: SpanDescription = {
    id: run.id,
    name: `workflow ${run.workflow.name}`,
    kind: "internal",
    start: run.createdAt,
    end: runEnd,
    attributes: compact({
      [OPENINFERENCE_KIND]: "CHAIN",
      "casefile.run.id": run.id,
      "casefile.run.status": run.status,
      "casefile.workflow.name": run.workflow.name,
      "casefile.workflow.version": run.workflow.version,
      "casefile.workflow.graph_hash": run.workflow.graphHash,
      "casefile.run.parent_id": run.parentRunId,
      "casefile.run.parent_checkpoint": run.parentCheckpointId,
      "casefile.run.superseded_by": run.supersededBy,
      "casefile.run.input": content && run.input !== undefined ? JSON.stringify(run.input) : undefined,
      "casefile.run.outputs": content && run.outputs?.length ? JSON.stringify(run.outputs) : undefined,
    }),
    events: records.events
      .filter((e) => e.type === "run_resumed" || e.type === "run_waiting" || e.type === "run_paused")
      .map((e) => ({ name: e.type, at: e.at, attributes: compact({ "casefile.superstep": e.superstep }) })),
    ...(run.error ? { error: { type: run.error.code, message: run.error.message } } : {}),
  };
  const spans: SpanDescription[] = [root];
  const uses = new Map<string, number>();

  for (const superstep of superstepsOf(records)) {
    const steps = records.steps.filter((s) => s.superstep === superstep);
    // The run's own events (waiting, resumed...) belong to the run span: a wait is not the superstep's time.
    const events = records.events.filter((e) => e.superstep === superstep && !e.type.startsWith("run_"));
    const checkpoint = events.filter((e) => e.type === "checkpoint").at(-1);
    const ssId = `${run.id}:superstep:${superstep}`;
    const start = minTime([...steps.map((s) => s.startedAt), ...events.map((e) => e.at)]);
    const end = maxTime([...steps.map((s) => s.endedAt), ...events.map((e) => e.at)]);
    const changed = checkpoint && isObject(checkpoint.data) && Array.isArray(checkpoint.data.changed) ? checkpoint.data.changed : [];
    spans.push({
      id: ssId,
      parentId: root.id,
      name: `superstep ${superstep}`,
      kind: "internal",
      start,
      end,
      attributes: compact({
        [OPENINFERENCE_KIND]: "CHAIN",
        "casefile.superstep": superstep,
        "casefile.checkpoint.id": checkpoint && isObject(checkpoint.data) ? str(checkpoint.data.checkpoint) : undefined,
        "casefile.state.changed": changed.filter((k): k is string => typeof k === "string"),
        "casefile.executors": steps.map((s) => s.executor),
      }),
      events: events.flatMap((e) => superstepEvent(e, content)),
      ...(steps.some((s) => s.status === "failed") ? { error: firstError(steps) } : {}),
    });
    for (const step of steps) {
      // A superstep run again after a failure (resumed from its checkpoint) records its steps again under the same ids.
      const seen = (uses.get(step.id) ?? 0) + 1;
      uses.set(step.id, seen);
      spans.push(...stepSpans(step, seen === 1 ? step.id : `${step.id}~${seen}`, ssId, records, content));
    }
  }
  return spans;
}

/** A step's span, and below an agent step its model calls. */
function stepSpans(step: StepRecord, id: string, parentId: string, records: RunRecords, content: boolean): SpanDescription[] {
  // An agent call and a verdict have their step's id; an intent is the effect's of that superstep.
  const calls = records.agentCalls.filter((c) => c.id === step.id);
  const verdicts = records.verdicts.filter((v) => v.id === step.id);
  const intents = records.intents.filter((i) => i.superstep === step.superstep && i.executor === step.executor);
  const span: SpanDescription = {
    id,
    parentId,
    name: `${step.kind} ${step.executor}`,
    kind: "internal",
    start: step.startedAt,
    end: step.endedAt,
    attributes: compact({
      [OPENINFERENCE_KIND]: step.kind === "effect" ? "TOOL" : "CHAIN",
      "casefile.step.id": step.id,
      "casefile.step.kind": step.kind,
      "casefile.step.executor": step.executor,
      "casefile.step.status": step.status,
      "casefile.step.writes": step.writes,
      "casefile.step.sent": step.sent,
      ...intentAttributes(intents, content),
    }),
    events: verdicts.map((v) => verdictEvent(v, content)),
  };
  const failedIntent = intents.find((i) => i.status === "failed" || i.status === "needs_replanning");
  if (step.error) span.error = { type: step.error.code, message: step.error.message };
  else if (failedIntent?.error) span.error = { type: failedIntent.error.code, message: failedIntent.error.message };
  return [span, ...calls.map((c, i) => chatSpan(c, `${id}:chat${i ? `#${i}` : ""}`, id, content))];
}

/** One model call as a GenAI client span (semantic conventions for generative AI, `chat`). */
function chatSpan(call: AgentCallRecord, id: string, parentId: string, content: boolean): SpanDescription {
  const usage = isObject(call.usage) ? call.usage : {};
  const params = call.request.params;
  const provider = PROVIDER_NAMES[call.provider] ?? call.provider;
  const proposal = isObject(call.proposal) ? call.proposal : undefined;
  return {
    id,
    parentId,
    name: `chat ${call.request.model}`,
    kind: "client",
    start: call.at,
    end: new Date(Date.parse(call.at) + call.durationMs).toISOString(),
    attributes: compact({
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": provider,
      // The attribute's name before the conventions renamed it, still what several receivers read.
      "gen_ai.system": provider,
      "gen_ai.request.model": call.request.model,
      "gen_ai.request.temperature": num(params.temperature),
      "gen_ai.request.max_tokens": num(params.max_tokens ?? params.maxTokens),
      "gen_ai.request.top_p": num(params.top_p ?? params.topP),
      "gen_ai.response.model": call.answeredBy,
      "gen_ai.response.id": call.responseId,
      "gen_ai.usage.input_tokens": num(usage.promptTokens),
      "gen_ai.usage.output_tokens": num(usage.completionTokens),
      "gen_ai.output.type": "json",
      // Phoenix reads OpenInference's names rather than the GenAI conventions'.
      [OPENINFERENCE_KIND]: "LLM",
      "llm.model_name": call.answeredBy ?? call.request.model,
      "llm.token_count.prompt": num(usage.promptTokens),
      "llm.token_count.completion": num(usage.completionTokens),
      "llm.token_count.total": num(usage.totalTokens),
      "casefile.agent_call.id": call.id,
      "casefile.agent_call.mode": call.mode,
      "casefile.context.hash": call.hash,
      "casefile.context.tokens": call.tokens?.count,
      "casefile.context.tokenizer": call.tokens?.tokenizer,
      "casefile.context.summarised": call.summarised ? true : undefined,
      "casefile.rules_in_force": call.rulesInForce?.map((r) => r.id),
      "casefile.proposal.action": proposal ? str(proposal.action) : undefined,
      "casefile.proposal.facts": proposal && Array.isArray(proposal.facts) ? proposal.facts.filter(isString) : undefined,
      "casefile.proposal.rejected": call.rejection?.code,
      "gen_ai.input.messages": content ? JSON.stringify(call.request.messages.map(messageParts)) : undefined,
      "gen_ai.output.messages":
        content && call.raw !== undefined
          ? JSON.stringify([{ role: "assistant", parts: [{ type: "text", content: call.raw }] }])
          : undefined,
      "casefile.proposal.reason": content && proposal ? str(proposal.reason) : undefined,
    }),
    events: call.rejection
      ? [
          {
            name: "proposal_rejected",
            at: call.at,
            attributes: compact({
              "casefile.rejection.code": call.rejection.code,
              ...(content ? { "casefile.rejection.message": call.rejection.message } : {}),
            }),
          },
        ]
      : [],
  };
}

/** The GenAI conventions' message shape (gen_ai.input.messages): a role and text parts. */
function messageParts(m: { role: string; content: string }): Json {
  return { role: m.role, parts: [{ type: "text", content: m.content }] };
}

/** An effect step's intents: key, action and outcome; what it sent and relied on only with content. */
function intentAttributes(intents: IntentRecord[], content: boolean): Record<string, AttributeValue | undefined> {
  const intent = intents.at(-1);
  if (!intent) return {};
  return {
    "casefile.intent.id": intent.id,
    "casefile.intent.key": intent.key ?? intent.id,
    "casefile.intent.action": intent.action,
    "casefile.intent.status": intent.status,
    "casefile.intent.error": intent.error?.code,
    "casefile.intent.reused_from": intent.reusedFrom ? `${intent.reusedFrom.run}/${intent.reusedFrom.intent}` : undefined,
    "casefile.intent.drift": intent.drift !== undefined ? true : undefined,
    "casefile.intent.conflict": intent.conflict ? intent.conflict.differs.map((d) => d.path) : undefined,
    "casefile.intent.target": content ? intent.target : undefined,
    "casefile.intent.payload": content ? JSON.stringify(intent.payload) : undefined,
    "casefile.intent.relies_on": content ? JSON.stringify(intent.reliesOn) : undefined,
    "casefile.intent.reference": content && intent.reference !== undefined ? JSON.stringify(intent.reference) : undefined,
  };
}

/** A commit step's verdict as an event of its span: which rules passed, the verdict, its reason with content. */
function verdictEvent(v: VerdictRecord, content: boolean): SpanEventDescription {
  const proposal = isObject(v.proposal) ? v.proposal : undefined;
  return {
    name: "verdict",
    at: v.at,
    attributes: compact({
      "casefile.verdict": v.verdict,
      "casefile.verdict.agent_call": v.agentCallId,
      "casefile.proposal.action": proposal ? str(proposal.action) : undefined,
      "casefile.rules.passed": v.rules.filter((r) => r.ok).map((r) => r.name),
      "casefile.rules.failed": v.rules.filter((r) => !r.ok).map((r) => r.name),
      "casefile.state.changed": Object.keys(v.diff),
      "casefile.verdict.reason": content ? v.reason : undefined,
      "casefile.rules.messages": content ? v.rules.map((r) => `${r.name}: ${r.message}`) : undefined,
    }),
  };
}

/** The superstep's events worth a point on its span: requests, extracts, warnings. */
function superstepEvent(e: EventRecord, content: boolean): SpanEventDescription[] {
  const d = isObject(e.data) ? e.data : {};
  switch (e.type) {
    case "request_waiting": {
      const prompt = isObject(d.prompt) ? d.prompt : {};
      return [
        {
          name: e.type,
          at: e.at,
          attributes: compact({ "casefile.request.id": str(d.request), "casefile.request.title": content ? str(prompt.title) : undefined }),
        },
      ];
    }
    case "request_answered":
      return [
        {
          name: e.type,
          at: e.at,
          attributes: compact({
            "casefile.request.id": str(d.requestId),
            "casefile.request.answer": content && d.answer !== undefined ? JSON.stringify(d.answer) : undefined,
          }),
        },
      ];
    case "extract":
      return [
        {
          name: e.type,
          at: e.at,
          attributes: compact({
            "casefile.extract.key": str(d.key),
            "casefile.extract.from": str(d.from),
            "casefile.extract.stale": d.stale === true,
          }),
        },
      ];
    case "warning":
      return [{ name: e.type, at: e.at, attributes: compact({ "casefile.warning": content ? str(d.message) : undefined }) }];
    default:
      return [];
  }
}

/** The supersteps the run recorded anything in (steps, or events such as a request answered), ascending; superstep 0 is the start. */
function superstepsOf(records: RunRecords): number[] {
  const all = new Set<number>([
    ...records.steps.map((s) => s.superstep),
    ...records.events.filter((e) => e.superstep > 0 && !e.type.startsWith("run_")).map((e) => e.superstep),
  ]);
  return [...all].sort((a, b) => a - b);
}

function firstError(steps: StepRecord[]): { type: string; message: string } {
  const failed = steps.find((s) => s.status === "failed");
  return { type: failed?.error?.code ?? "EXECUTOR_FAILED", message: `${failed?.executor}: ${failed?.error?.message ?? "failed"}` };
}

function minTime(times: string[]): string {
  return times.reduce((a, b) => (Date.parse(b) < Date.parse(a) ? b : a));
}

function maxTime(times: string[]): string {
  return times.reduce((a, b) => (Date.parse(b) > Date.parse(a) ? b : a));
}

/** Drops undefined attributes (OTel refuses them) and empty lists (nothing to say). */
function compact(attrs: Record<string, AttributeValue | undefined>): Attributes {
  const out: Attributes = {};
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && !(Array.isArray(v) && v.length === 0)) out[k] = v;
  return out;
}

function isObject(v: Json | undefined): v is { [key: string]: Json } {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function isString(v: Json): v is string {
  return typeof v === "string";
}

function str(v: Json | undefined): string | undefined {
  return typeof v === "string" ? v : undefined;
}

function num(v: Json | undefined): number | undefined {
  return typeof v === "number" && Number.isFinite(v) ? v : undefined;
}
