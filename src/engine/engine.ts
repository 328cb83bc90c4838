import { randomUUID } from "node:crypto";
import type { AgentReplay } from "./agentStep";
import { RunControl } from "./control";
import { resolveOpenIntents } from "./effectStep";
import { CasefileError, describeError, stopsForReplanning } from "./errors";
import { prepareExtracts, type ExtractMade, type ExtractPass } from "./extracts";
import type { ModelProvider } from "./model";
import {
  CHECKPOINT_FORMAT,
  type Checkpoint,
  type EventRecord,
  type EventType,
  type Json,
  type Message,
  type RunRecord,
  type RunStatus,
  type StateValueRow,
} from "./records";
import { rulesInForce, type RuleSource } from "./rules";
import { runTask, type TaskOutcome } from "./steps";
import type { CaseStore, CommitBatch } from "./store";
import { checkWrites, nextKeyRefs, route, toJson } from "./superstep";
import { ApprovalAnswer, keySchema, type Workflow } from "./workflow";

export interface EngineOptions {
  provider?: ModelProvider;
  control?: RunControl;
  /** Called with each event after the superstep that produced it is durable. */
  onEvent?: (event: EventRecord) => void;
  log?: (message: string) => void;
  now?: () => Date;
  replay?: AgentReplay;
  /** Where the workflow file lives, recorded with new runs so the editor can resume them. */
  workflowPath?: string;
  /** Where business rules are read from (a shared rule book); the case file itself when omitted. */
  ruleBook?: RuleSource;
}

export interface RunResult {
  runId: string;
  status: RunStatus;
  checkpointId: string;
  superstep: number;
  warnings: string[];
  error?: { code: string; message: string; executor?: string };
  outputs: Json[];
}

/**
 * The superstep loop. Each superstep runs every executor that has a message, concurrently,
 * against state as of the superstep's start; their writes are checked and staged, then the
 * checkpoint and everything the superstep produced are committed durably as one batch, and
 * only then are the next superstep's messages delivered.
 */
export class Engine {
  private readonly control: RunControl;
  private readonly now: () => string;
  private readonly warnings: string[] = [];

  constructor(
    readonly workflow: Workflow,
    readonly store: CaseStore,
    private readonly options: EngineOptions = {},
  ) {
    this.control = options.control ?? new RunControl();
    const clock = options.now ?? (() => new Date());
    this.now = () => clock().toISOString();
  }

  /** Starts a new run: checkpoint 0 holds the input as the start executor's message. */
  async run(input: Json = null): Promise<RunResult> {
    const wf = this.workflow;
    if (wf.input) {
      const parsed = wf.input.safeParse(input);
      if (!parsed.success) {
        const issue = parsed.error.issues[0]!;
        throw new CasefileError(
          "INVALID_INPUT",
          `input of workflow "${wf.name}" is invalid at "${issue.path.join(".") || "(root)"}": ${issue.message}`,
        );
      }
      input = toJson(parsed.data, "input", "input");
    }
    const at = this.now();
    const run: RunRecord = {
      id: newRunId(),
      workflow: { name: wf.name, version: wf.version, graphHash: wf.graphHash, path: this.options.workflowPath },
      status: "running",
      createdAt: at,
      updatedAt: at,
      input,
      outputs: [],
    };
    const cp: Checkpoint = {
      v: CHECKPOINT_FORMAT,
      id: checkpointId(run.id, 0),
      runId: run.id,
      superstep: 0,
      createdAt: at,
      workflow: this.workflowStamp(),
      keys: {},
      pending: [{ to: wf.start, from: "input", payload: input, kind: "input" }],
      fanIn: {},
      local: {},
      waiting: [],
    };
    this.commit({
      runs: [run],
      checkpoints: [cp],
      events: [this.event(run.id, 0, "run_started", { workflow: wf.name, version: wf.version, input })],
    });
    return this.loop(run, cp, {});
  }

  /**
   * Resumes from any checkpoint. The latest checkpoint of an unfinished run (killed, stopped,
   * failed) continues that run; any other checkpoint, a patch, or a migrated state starts a
   * branch run that points at its parent run and checkpoint. The parent is never changed.
   * `branch: true` always starts a branch, even from the latest checkpoint of an unfinished run:
   * replaying a step must leave the run that recorded it as it was.
   */
  async resume(fromCheckpointId: string, opts: { patch?: Record<string, Json>; branch?: boolean } = {}): Promise<RunResult> {
    const { run, cp, values } = this.prepare(fromCheckpointId, opts.patch, false, opts.branch ?? false);
    // Open intents of the case (a crash between an action and its reference) are resolved
    // before any superstep runs, so nothing is repeated while an effect's outcome is unknown.
    const unresolved = await resolveOpenIntents({
      workflow: this.workflow,
      store: this.store,
      caseId: this.caseIdOf(run),
      runId: run.id,
      superstep: cp.superstep + 1,
      state: values,
      now: this.now,
      signal: this.control.signal,
      log: (m) => this.options.log?.(m),
      emit: (e) => this.emit(e),
    });
    if (unresolved) return this.fail(run, cp, cp.superstep + 1, [], unresolved);
    return this.loop(run, cp, values);
  }

  /** Answers a waiting request, validated by the request step's schema, and continues the run. */
  async respond(requestId: string, answer: Json): Promise<RunResult> {
    const found = this.findWaiting(requestId);
    const spec = this.workflow.executors[found.request.executor];
    if (!spec || spec.kind !== "request") {
      throw new CasefileError(
        "WORKFLOW_MISMATCH",
        `request "${requestId}" belongs to executor "${found.request.executor}", which is no longer a request step`,
      );
    }
    const parsed = (spec.answer ?? ApprovalAnswer).safeParse(answer);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw new CasefileError(
        "INVALID_ANSWER",
        `answer to request "${requestId}" is invalid at "${issue.path.join(".") || "(root)"}": ${issue.message}`,
      );
    }
    const { run, cp, values } = this.prepare(found.checkpoint.id, undefined, true);
    const at = this.now();
    const next: Checkpoint = {
      ...cp,
      id: checkpointId(run.id, cp.superstep + 1),
      superstep: cp.superstep + 1,
      parentId: cp.id,
      createdAt: at,
      pending: [
        ...cp.pending,
        {
          to: found.request.executor,
          from: "person",
          kind: "answer",
          payload: { answer: toJson(parsed.data, "answer", "person"), message: found.request.message },
        },
      ],
      waiting: cp.waiting.filter((w) => w.id !== requestId),
    };
    run.status = "running";
    run.updatedAt = at;
    this.commit({
      runs: [run],
      checkpoints: [next],
      events: [
        this.event(run.id, next.superstep, "request_answered", {
          requestId,
          executor: found.request.executor,
          answer: parsed.data as Json,
        }),
      ],
    });
    return this.loop(run, next, values);
  }

  private findWaiting(requestId: string): { checkpoint: Checkpoint; request: Checkpoint["waiting"][number] } {
    const waiting: string[] = [];
    for (const run of this.store.listRuns()) {
      if (run.status !== "waiting") continue;
      const cp = this.store.latestCheckpoint(run.id);
      for (const w of cp?.waiting ?? []) {
        if (w.id === requestId) return { checkpoint: cp!, request: w };
        waiting.push(w.id);
      }
    }
    throw new CasefileError(
      "UNKNOWN_REQUEST",
      `no run is waiting on request "${requestId}"` + (waiting.length ? `; waiting: ${waiting.join(", ")}` : "; no run is waiting"),
    );
  }

  /** Loads a checkpoint, migrates and patches its state, and decides: same run or branch. */
  private prepare(
    fromId: string,
    patch: Record<string, Json> | undefined,
    answering = false,
    forceBranch = false,
  ): { run: RunRecord; cp: Checkpoint; values: Record<string, Json> } {
    const wf = this.workflow;
    const source = this.store.getCheckpoint(fromId);
    if (!source) throw new CasefileError("UNKNOWN_CHECKPOINT", `no checkpoint "${fromId}" in this case file`);
    const parent = this.store.getRun(source.runId);
    if (!parent)
      throw new CasefileError("UNKNOWN_RUN", `checkpoint "${fromId}" names run "${source.runId}", which is not in this case file`);
    if (source.workflow.name !== wf.name) {
      throw new CasefileError(
        "WORKFLOW_MISMATCH",
        `checkpoint "${fromId}" was made by workflow "${source.workflow.name}", not "${wf.name}"`,
      );
    }
    let values = this.store.readValues(source.keys);
    const changed = new Set<string>();
    if (source.workflow.version > wf.version) {
      throw new CasefileError(
        "WORKFLOW_MISMATCH",
        `checkpoint "${fromId}" was made by version ${source.workflow.version} of "${wf.name}", newer than this workflow's version ${wf.version}`,
      );
    }
    if (source.workflow.version < wf.version) values = this.migrate(values, source.workflow.version, fromId, changed);

    let pending = source.pending;
    if (source.workflow.graphHash !== wf.graphHash) {
      const before = new Set(source.workflow.executors);
      const now = Object.keys(wf.executors);
      const added = now.filter((e) => !before.has(e));
      const removed = [...before].filter((e) => !wf.executors[e]);
      this.warn(
        `graph of "${wf.name}" changed since checkpoint "${fromId}"` +
          (added.length ? `; executors added: ${added.join(", ")}` : "") +
          (removed.length ? `; executors removed: ${removed.join(", ")}` : "") +
          (!added.length && !removed.length ? "; edges or keys changed" : ""),
      );
      const dropped = pending.filter((m) => !wf.executors[m.to]);
      if (dropped.length)
        this.warn(`dropped ${dropped.length} pending message(s) to removed executors: ${dropped.map((m) => m.to).join(", ")}`);
      pending = pending.filter((m) => wf.executors[m.to]);
    }

    if (patch) {
      for (const [key, value] of Object.entries(patch)) {
        const decl = wf.state[key];
        if (!decl)
          throw new CasefileError("UNKNOWN_KEY", `patch names unknown state key "${key}"; keys are: ${Object.keys(wf.state).join(", ")}`, {
            key,
          });
        const parsed = keySchema(decl).safeParse(value);
        if (!parsed.success) {
          const issue = parsed.error.issues[0]!;
          const at = [key, ...issue.path.map(String)].join(".");
          throw new CasefileError("INVALID_PATCH", `patch value for "${key}" is invalid at "${at}": ${issue.message}`, {
            key,
            path: issue.path.map(String),
          });
        }
        values[key] = toJson(parsed.data, key, "patch");
        changed.add(key);
      }
    }

    const latest = this.store.latestCheckpoint(parent.id);
    const sameRun =
      !forceBranch &&
      changed.size === 0 &&
      source.workflow.graphHash === wf.graphHash &&
      latest?.id === source.id &&
      (answering ? parent.status === "waiting" : ["running", "stopped", "failed", "paused"].includes(parent.status));
    const at = this.now();
    if (sameRun) {
      const run: RunRecord = { ...parent, status: "running", updatedAt: at };
      delete run.error;
      this.commit({ runs: [run], events: [this.event(run.id, source.superstep, "run_resumed", { from: source.id })] });
      return { run, cp: { ...source, pending }, values: freezeValues(values) };
    }

    const run: RunRecord = {
      id: newRunId(),
      parentRunId: parent.id,
      parentCheckpointId: source.id,
      workflow: { name: wf.name, version: wf.version, graphHash: wf.graphHash, path: this.options.workflowPath ?? parent.workflow.path },
      status: "running",
      createdAt: at,
      updatedAt: at,
      input: parent.input,
      outputs: [],
    };
    if (patch) run.patch = Object.keys(patch);
    const keys = nextKeyRefs(source.keys, changed, run.id);
    const cp: Checkpoint = {
      ...source,
      id: checkpointId(run.id, source.superstep),
      runId: run.id,
      parentId: source.id,
      createdAt: at,
      workflow: this.workflowStamp(),
      keys,
      pending,
      waiting: source.waiting.map((w) => ({ ...w })),
    };
    const rows: StateValueRow[] = [...changed].map((key) => ({ run: run.id, key, version: keys[key]!.version, value: values[key]! }));
    this.commit({
      runs: [run],
      checkpoints: [cp],
      values: rows,
      events: [
        this.event(run.id, cp.superstep, "run_started", {
          workflow: wf.name,
          version: wf.version,
          branchOf: { run: parent.id, checkpoint: source.id },
          patched: patch ? Object.keys(patch) : [],
          migratedFrom: source.workflow.version !== wf.version ? source.workflow.version : null,
        }),
        ...this.warnings.map((w) => this.event(run.id, cp.superstep, "warning", { message: w })),
      ],
    });
    return { run, cp, values: freezeValues(values) };
  }

  private migrate(values: Record<string, Json>, from: number, cpId: string, changed: Set<string>): Record<string, Json> {
    const wf = this.workflow;
    let state = structuredClone(values);
    for (let v = from + 1; v <= wf.version; v++) {
      const step = wf.migrations?.[v];
      if (!step) {
        throw new CasefileError(
          "MIGRATION_FAILED",
          `checkpoint "${cpId}" was made by version ${from} of "${wf.name}", and no migration to version ${v} is declared (migrations: { ${v}: (state) => state })`,
        );
      }
      try {
        state = step(state);
      } catch (e) {
        throw new CasefileError("MIGRATION_FAILED", `migration to version ${v} of "${wf.name}" threw: ${(e as Error).message}`);
      }
    }
    for (const [key, value] of Object.entries(state)) {
      const decl = wf.state[key];
      if (!decl)
        throw new CasefileError(
          "MIGRATION_FAILED",
          `after migrating checkpoint "${cpId}", state key "${key}" is not in version ${wf.version} of the workflow`,
          { key },
        );
      const parsed = keySchema(decl).safeParse(value);
      if (!parsed.success) {
        const issue = parsed.error.issues[0]!;
        throw new CasefileError(
          "MIGRATION_FAILED",
          `after migrating checkpoint "${cpId}" to version ${wf.version}, "${[key, ...issue.path.map(String)].join(".")}" no longer parses: ${issue.message}`,
          { key, path: issue.path.map(String) },
        );
      }
      if (JSON.stringify(parsed.data) !== JSON.stringify(values[key])) changed.add(key);
      state[key] = toJson(parsed.data, key, "migration");
    }
    return state;
  }

  private async loop(run: RunRecord, start: Checkpoint, startValues: Record<string, Json>): Promise<RunResult> {
    let cp = start;
    let values = startValues;
    const caseId = this.caseIdOf(run);
    const callCounts = this.agentCallCounts(run);

    for (;;) {
      if (cp.pending.length === 0) {
        return this.finish(run, cp, cp.waiting.length > 0 ? "waiting" : "completed");
      }
      const go = await this.control.gate(() =>
        this.emit(this.event(run.id, cp.superstep, "run_paused", { checkpoint: cp.id, next: cp.pending.map((m) => m.to) })),
      );
      if (!go) return this.finish(run, cp, "stopped");

      const superstep = cp.superstep + 1;
      this.emit(this.event(run.id, superstep, "superstep_started", { executors: cp.pending.map((m) => m.to) }));
      // Extracts the superstep's executors read are checked against their documents first: a
      // missing or stale one is made again, and executors see only extracts that match.
      let extracts: ExtractPass;
      try {
        extracts = await prepareExtracts({ workflow: this.workflow, state: values, executors: cp.pending.map((m) => m.to), now: this.now });
      } catch (e) {
        return this.fail(run, cp, superstep, [], {
          ...describeError(e),
          executor: (e as CasefileError).details?.executor as string | undefined,
        });
      }
      const seen = new Map<string, number>();
      const outcomes = await Promise.all(
        cp.pending.map((message) => {
          const index = seen.get(message.to) ?? 0;
          seen.set(message.to, index + 1);
          const spec = this.workflow.executors[message.to]!;
          const callIndex = callCounts.get(message.to) ?? 0;
          if (spec.kind === "agent") callCounts.set(message.to, callIndex + 1);
          return runTask({
            workflow: this.workflow,
            executor: message.to,
            spec,
            runId: run.id,
            caseId,
            superstep,
            index,
            message,
            state: extracts.state,
            local: cp.local[message.to],
            signal: this.control.signal,
            now: this.now,
            provider: this.options.provider,
            store: this.store,
            callIndex,
            // A replay names one step: the one in the first superstep after the checkpoint the
            // run resumed from. Later calls of the same executor (a loop) run normally.
            replay: superstep === start.superstep + 1 ? this.options.replay : undefined,
            log: (m) => this.options.log?.(m),
            emit: (e) => this.emit(e),
            rules: () => rulesInForce((this.options.ruleBook ?? this.store).listRules(), this.now()),
          });
        }),
      );

      let failure = outcomes.find((o) => o.error)?.error as RunResult["error"];
      if (failure) failure.executor = outcomes.find((o) => o.error)!.step.executor;
      let changed = new Map<string, { executor: string; value: Json }>();
      if (!failure) {
        try {
          changed = checkWrites(
            this.workflow,
            outcomes.flatMap((o) => o.writes),
          );
        } catch (e) {
          failure = { ...describeError(e), executor: (e as CasefileError).details?.executor as string | undefined };
        }
      }
      if (failure) return this.fail(run, cp, superstep, outcomes, failure);
      // No executor may write an extract key (checkWrites refuses it), so these never collide.
      for (const m of extracts.made) changed.set(m.key, { executor: `extract:${m.key}`, value: m.value as unknown as Json });

      const next = this.advance(run, cp, superstep, values, outcomes, changed, extracts.made);
      values = next.values;
      cp = next.checkpoint;
    }
  }

  /** Applies a superstep that succeeded: new key versions, routed messages, one durable batch. */
  private advance(
    run: RunRecord,
    cp: Checkpoint,
    superstep: number,
    prevValues: Record<string, Json>,
    outcomes: TaskOutcome[],
    changed: Map<string, { executor: string; value: Json }>,
    extracts: ExtractMade[] = [],
  ): { checkpoint: Checkpoint; values: Record<string, Json> } {
    const values = { ...prevValues };
    for (const [key, { value }] of changed) values[key] = deepFreeze(value);
    const keys = nextKeyRefs(cp.keys, changed.keys(), run.id);
    const fanIn = structuredClone(cp.fanIn);
    const pending: Message[] = [];
    const local = { ...cp.local };
    const events: EventRecord[] = extracts.flatMap((m) => this.extractEvents(run.id, superstep, m));
    for (const o of outcomes) {
      for (const payload of o.sends)
        pending.push(...route(this.workflow, o.step.executor, toJson(payload, "message", o.step.executor), values, fanIn));
      if (o.local) local[o.step.executor] = toJson(o.local.value, "local", o.step.executor);
      events.push(
        this.event(run.id, superstep, "step_completed", {
          step: o.step.id,
          executor: o.step.executor,
          kind: o.step.kind,
          status: o.step.status,
          writes: o.step.writes,
          durationMs: o.step.durationMs,
        }),
      );
      for (const out of o.outputs) {
        run.outputs = [...(run.outputs ?? []), out];
        events.push(this.event(run.id, superstep, "output", { executor: o.step.executor, output: out }));
      }
      for (const w of o.warnings) events.push(this.event(run.id, superstep, "warning", { executor: o.step.executor, message: w }));
      if (o.waiting)
        events.push(
          this.event(run.id, superstep, "request_waiting", {
            request: o.waiting.id,
            executor: o.step.executor,
            prompt: o.waiting.prompt as unknown as Json,
          }),
        );
    }
    const at = this.now();
    const checkpoint: Checkpoint = {
      v: CHECKPOINT_FORMAT,
      id: checkpointId(run.id, superstep),
      runId: run.id,
      superstep,
      parentId: cp.id,
      createdAt: at,
      workflow: this.workflowStamp(),
      keys,
      pending,
      fanIn,
      local,
      waiting: [...cp.waiting, ...outcomes.flatMap((o) => (o.waiting ? [o.waiting] : []))],
    };
    events.push(
      this.event(run.id, superstep, "checkpoint", {
        checkpoint: checkpoint.id,
        changed: [...changed.keys()],
        pending: pending.map((m) => m.to),
      }),
    );
    run.updatedAt = at;
    this.commit({
      runs: [run],
      checkpoints: [checkpoint],
      values: [...changed].map(([key, { value }]) => ({ run: run.id, key, version: keys[key]!.version, value })),
      steps: outcomes.map((o) => o.step),
      facts: outcomes.flatMap((o) =>
        o.facts.map((f) => ({
          ...f.provenance,
          runId: run.id,
          superstep,
          key: f.key,
          version: keys[f.key]!.version,
          executor: o.step.executor,
        })),
      ),
      agentCalls: outcomes.flatMap((o) => (o.agentCall ? [o.agentCall] : [])),
      verdicts: outcomes.flatMap((o) => (o.verdict ? [o.verdict] : [])),
      events,
    });
    return { checkpoint, values };
  }

  /**
   * The record of an extract made in a superstep: an `extract` event (document, version, who read
   * it, and the extract it replaced), and a warning when the one in state was stale.
   */
  private extractEvents(runId: string, superstep: number, m: ExtractMade): EventRecord[] {
    const e = m.value;
    const data: Json = {
      key: m.key,
      from: e.from,
      source: e.source,
      sourceVersion: e.sourceVersion,
      readers: m.readers,
      stale: m.stale !== undefined,
      reason: m.stale ?? "first read",
      previous: m.previous
        ? { source: m.previous.source, sourceVersion: m.previous.sourceVersion, extractedAt: m.previous.extractedAt }
        : null,
    };
    const events = [this.event(runId, superstep, "extract", data)];
    if (m.stale !== undefined) {
      const message = `extract "${m.key}" was stale: ${m.stale}; extracted again for ${m.readers.join(", ")}`;
      events.push(this.event(runId, superstep, "warning", { executor: m.readers[0]!, message }));
    }
    return events;
  }

  /** A failed superstep commits nothing to state; its step records are kept to explain why. */
  private fail(
    run: RunRecord,
    cp: Checkpoint,
    superstep: number,
    outcomes: TaskOutcome[],
    error: NonNullable<RunResult["error"]>,
  ): RunResult {
    // An effect that found its record changed under it stops the case for a person to replan.
    const replan = stopsForReplanning(error.code);
    run.status = replan ? "needs_replanning" : "failed";
    run.error = error;
    run.updatedAt = this.now();
    // A failed superstep may be attempted again (resume continues the run from the same
    // checkpoint): its records keep their own ids, tagged with the attempt, beside the retry's.
    const prior = this.store
      .listEvents({ runId: run.id })
      .filter((e) => e.superstep === superstep && /^run_(failed|needs_replanning)$/.test(e.type));
    const tag = `~attempt-${prior.length + 1}`;
    const steps = outcomes.map((o) => ({ ...o.step, id: o.step.id + tag }));
    this.commit({
      runs: [run],
      steps,
      agentCalls: outcomes.flatMap((o) => (o.agentCall ? [{ ...o.agentCall, id: o.agentCall.id + tag }] : [])),
      events: [
        ...outcomes
          .filter((o) => o.error)
          .map((o) => this.event(run.id, superstep, "step_failed", { step: o.step.id + tag, executor: o.step.executor, error: o.error! })),
        this.event(run.id, superstep, replan ? "run_needs_replanning" : "run_failed", { error, checkpoint: cp.id }),
      ],
    });
    return this.result(run, cp);
  }

  private finish(run: RunRecord, cp: Checkpoint, status: RunStatus): RunResult {
    run.status = status;
    run.updatedAt = this.now();
    const type: EventType = status === "completed" ? "run_completed" : status === "waiting" ? "run_waiting" : "run_stopped";
    this.commit({
      runs: [run],
      events: [
        this.event(run.id, cp.superstep, type, { checkpoint: cp.id, waiting: cp.waiting.map((w) => w.id), outputs: run.outputs ?? [] }),
      ],
    });
    return this.result(run, cp);
  }

  private result(run: RunRecord, cp: Checkpoint): RunResult {
    return {
      runId: run.id,
      status: run.status,
      checkpointId: cp.id,
      superstep: cp.superstep,
      warnings: [...this.warnings],
      error: run.error,
      outputs: run.outputs ?? [],
    };
  }

  /** Every durable write goes through here; events reach listeners only once durable. */
  private commit(batch: CommitBatch): void {
    this.store.commit(batch);
    for (const e of batch.events ?? []) this.emit(e);
  }

  private emit(e: EventRecord): void {
    try {
      this.options.onEvent?.(e);
    } catch (err) {
      this.options.log?.(`event listener threw: ${(err as Error).message}`);
    }
  }

  private warn(message: string): void {
    this.warnings.push(message);
    this.options.log?.(`warning: ${message}`);
  }

  private event(runId: string, superstep: number, type: EventType, data: Json): EventRecord {
    return { runId, superstep, type, at: this.now(), data };
  }

  private workflowStamp(): Checkpoint["workflow"] {
    const wf = this.workflow;
    return { name: wf.name, version: wf.version, graphHash: wf.graphHash, executors: Object.keys(wf.executors) };
  }

  /**
   * How many times each agent has been called in the run's history, for the next call's index:
   * the run's own calls and, for a branch, its ancestors' up to the checkpoint it was forked from,
   * so a fixture keyed by call index answers a branch as it would have answered the run.
   */
  private agentCallCounts(run: RunRecord): Map<string, number> {
    const counts = new Map<string, number>();
    let upTo = Number.POSITIVE_INFINITY;
    for (let r: RunRecord | undefined = run; r;) {
      for (const c of this.store.listAgentCalls(r.id)) if (c.superstep <= upTo) counts.set(c.executor, (counts.get(c.executor) ?? 0) + 1);
      if (!r.parentRunId || !r.parentCheckpointId) break;
      const forkedAt = this.store.listCheckpoints(r.parentRunId).find((c) => c.id === r!.parentCheckpointId);
      if (!forkedAt) break;
      upTo = Math.min(upTo, forkedAt.superstep);
      r = this.store.getRun(r.parentRunId);
    }
    return counts;
  }

  private caseIdOf(run: RunRecord): string {
    let r: RunRecord | undefined = run;
    while (r?.parentRunId) {
      const parent = this.store.getRun(r.parentRunId);
      if (!parent) break;
      r = parent;
    }
    return r?.id ?? run.id;
  }
}

export function checkpointId(runId: string, superstep: number): string {
  return `${runId}:${superstep}`;
}

function newRunId(): string {
  return "run-" + randomUUID().slice(0, 8);
}

function deepFreeze<T>(v: T): T {
  if (v && typeof v === "object" && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const x of Object.values(v)) deepFreeze(x);
  }
  return v;
}

function freezeValues(values: Record<string, Json>): Record<string, Json> {
  for (const v of Object.values(values)) deepFreeze(v);
  return values;
}
