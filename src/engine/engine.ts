import type { AgentReplay, EngineHooks, TaskOutcome } from "./task";
import { RunControl } from "./control";
import { resolveOpenIntents } from "./effectStep";
import { CasefileError, describeError, errorMessage, isCasefileError, stopsForReplanning, zodIssue } from "./errors";
import { extractEvents, prepareExtracts } from "./extracts";
import { readBeforeWriting, type Lineage } from "./lineage";
import type { ModelProvider } from "./model";
import { CHECKPOINT_FORMAT, type Checkpoint, type EventRecord, type EventType, type Json, type RunRecord, type RunStatus } from "./records";
import { rulesInForce, type RuleSource } from "./rules";
import { runTask } from "./steps";
import type { CaseStore, CommitBatch } from "./store";
import { findWaiting, newRunId, planResume } from "./resumePlan";
import { checkpointId, checkWrites, nextCheckpoint, toJson, workflowStamp } from "./superstep";
import { ApprovalAnswer, parseSafely, type Workflow } from "./workflow";

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
  /** Test hooks (pauses inside effects); the runner's session sets them from its environment. */
  hooks?: EngineHooks;
}

export interface RunResult {
  runId: string;
  status: RunStatus;
  checkpointId: string;
  /** The superstep of the checkpoint the run ended at (the last good one, for a failed run). */
  superstep: number;
  /** For a run that ended failed or needing replanning: the superstep that failed. */
  failedAt?: number;
  warnings: string[];
  error?: { code: string; message: string; executor?: string; edge?: string };
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
      const parsed = parseSafely(wf.input, input);
      if (!parsed.success) {
        const { at, message } = zodIssue(parsed.error);
        throw new CasefileError("INVALID_INPUT", `input of workflow "${wf.name}" is invalid at "${at}": ${message}`);
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
      workflow: workflowStamp(this.workflow),
      keys: {},
      pending: [{ to: wf.start, from: "input", payload: input, kind: "input" }],
      fanIn: {},
      local: {},
      waiting: [],
    };
    const lineage = readBeforeWriting(this.store, this.workflow, this.options.ruleBook ?? this.store, run);
    this.commit({
      runs: [run],
      checkpoints: [cp],
      events: [this.event(run.id, 0, "run_started", { workflow: wf.name, version: wf.version, input })],
    });
    return this.loop(run, cp, {}, lineage);
  }

  /**
   * Resumes from any checkpoint. The latest checkpoint of an unfinished run (killed, stopped,
   * failed) continues that run; any other checkpoint, a patch, or a migrated state starts a
   * branch run that points at its parent run and checkpoint. The parent is never changed.
   * `branch: true` always starts a branch, even from the latest checkpoint of an unfinished run:
   * replaying a step must leave the run that recorded it as it was.
   */
  async resume(fromCheckpointId: string, opts: { patch?: Record<string, Json>; branch?: boolean } = {}): Promise<RunResult> {
    const { run, cp, values, lineage } = this.prepare(fromCheckpointId, opts.patch, false, opts.branch ?? false);
    // Open intents of the case (a crash between an action and its reference) are resolved
    // before any superstep runs, so nothing is repeated while an effect's outcome is unknown.
    let unresolved: RunResult["error"];
    try {
      unresolved = await resolveOpenIntents({
        workflow: this.workflow,
        store: this.store,
        caseId: lineage.caseId,
        runId: run.id,
        superstep: cp.superstep + 1,
        state: values,
        now: this.now,
        signal: this.control.signal,
        log: (m) => this.log(m),
        emit: (e) => this.emit(e),
        hooks: this.options.hooks,
      });
    } catch (e) {
      if (isCasefileError(e) && e.code === "CORRUPT_CASE_FILE") throw e;
      unresolved = failureOf(e);
    }
    if (unresolved) return this.fail(run, cp, cp.superstep + 1, [], unresolved);
    return this.loop(run, cp, values, lineage);
  }

  /**
   * Answers a waiting request, validated by the request step's schema, and continues the run. A
   * request is answered once, whatever the workflow version: when the answer goes to a branch (the
   * workflow changed since the run waited), the run that waited is marked `superseded` by it in
   * the same commit, so it is no longer waiting and a second answer is refused naming the first.
   * `by` names who answered (recorded with the answer). `recordOnly`: commit the answer and return
   * with the run `running` at the answer's checkpoint, for another process to continue (a worker
   * of a Postgres store's queue resumes it from there).
   */
  async respond(requestId: string, answer: Json, opts: { by?: string; recordOnly?: boolean } = {}): Promise<RunResult> {
    const found = findWaiting(this.store, requestId, this.workflow.version);
    const spec = this.workflow.executors[found.request.executor];
    if (!spec || spec.kind !== "request") {
      throw new CasefileError(
        "WORKFLOW_MISMATCH",
        `request "${requestId}" belongs to executor "${found.request.executor}", which is no longer a request step`,
      );
    }
    const parsed = parseSafely(spec.answer ?? ApprovalAnswer, answer);
    if (!parsed.success) {
      const { at, message } = zodIssue(parsed.error);
      throw new CasefileError("INVALID_ANSWER", `answer to request "${requestId}" is invalid at "${at}": ${message}`);
    }
    // Refused here, before prepare commits the run as running: a refused answer leaves it waiting.
    const given = toJson(parsed.data, "answer", "person");
    const { run, cp, values, lineage } = this.prepare(found.checkpoint.id, undefined, true);
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
          payload: { answer: given, message: found.request.message },
        },
      ],
      waiting: cp.waiting.filter((w) => w.id !== requestId),
    };
    run.status = "running";
    run.updatedAt = at;
    const answered: Json = {
      requestId,
      executor: found.request.executor,
      answer: given,
      by: opts.by ?? null,
      run: run.id,
      waitingRun: found.checkpoint.runId,
    };
    const batch: CommitBatch = {
      runs: [run],
      checkpoints: [next],
      events: [this.event(run.id, next.superstep, "request_answered", answered)],
    };
    // Every other run waiting on this request (the one that waited, when the answer goes to a
    // branch; a branch a resume made that inherited it) is superseded by the run that took it.
    for (const waited of this.store.listRuns()) {
      if (waited.id === run.id || waited.status !== "waiting") continue;
      const wcp = this.store.latestCheckpoint(waited.id);
      if (!wcp?.waiting.some((w) => w.id === requestId)) continue;
      batch.runs!.push({ ...waited, status: "superseded", supersededBy: run.id, updatedAt: at });
      batch.events!.push(this.event(waited.id, wcp.superstep, "request_answered", answered));
    }
    this.commit(batch);
    if (opts.recordOnly) {
      return {
        runId: run.id,
        status: run.status,
        checkpointId: next.id,
        superstep: next.superstep,
        warnings: [],
        outputs: run.outputs ?? [],
      };
    }
    return this.loop(run, next, values, lineage);
  }

  /** The resume side (resumePlan.ts) decides the run and its first checkpoint; committed here. */
  private prepare(
    fromId: string,
    patch: Record<string, Json> | undefined,
    answering: boolean,
    forceBranch = false,
  ): { run: RunRecord; cp: Checkpoint; values: Record<string, Json>; lineage: Lineage } {
    const plan = planResume(
      this.workflow,
      this.store,
      { fromId, patch, answering, forceBranch },
      { now: this.now, workflowPath: this.options.workflowPath, warn: (m) => this.warn(m), warnings: this.warnings },
    );
    const lineage = readBeforeWriting(this.store, this.workflow, this.options.ruleBook ?? this.store, plan.run);
    this.commit(plan.batch);
    return { run: plan.run, cp: plan.cp, values: plan.values, lineage };
  }

  private async loop(run: RunRecord, start: Checkpoint, startValues: Record<string, Json>, lineage: Lineage): Promise<RunResult> {
    let cp = start;
    let values = startValues;
    const { caseId, callCounts } = lineage;

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
      let outcomes: TaskOutcome[] = [];
      try {
        // Extracts the superstep's executors read are checked against their documents first: a
        // missing or stale one is made again, and executors see only extracts that match.
        const extracts = await prepareExtracts({
          workflow: this.workflow,
          state: values,
          executors: cp.pending.map((m) => m.to),
          now: this.now,
        });
        // Run: every executor with a message, concurrently, against state as of the start.
        const seen = new Map<string, number>();
        outcomes = await Promise.all(
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
              log: (m) => this.log(m),
              emit: (e) => this.emit(e),
              rules: () => rulesInForce((this.options.ruleBook ?? this.store).listRules(), this.now()),
              hooks: this.options.hooks,
            });
          }),
        );
        const failed = outcomes.find((o) => o.error);
        if (failed) return this.fail(run, cp, superstep, outcomes, { ...failed.error!, executor: failed.step.executor }, failed.step.id);
        // Stage: the writes are checked together (ownership, schema, JSON, no key twice).
        const changed = checkWrites(
          this.workflow,
          outcomes.flatMap((o) => o.writes.map((w) => ({ ...w, step: o.step.id }))),
        );
        // No executor may write an extract key (checkWrites refuses it), so these never collide.
        for (const m of extracts.made) changed.set(m.key, { executor: `extract:${m.key}`, value: m.value as unknown as Json });
        // Build the next checkpoint, commit it durably, and only then emit its events.
        const next = nextCheckpoint({
          workflow: this.workflow,
          run,
          from: cp,
          superstep,
          values,
          outcomes,
          changed,
          events: extracts.made.flatMap((m) => extractEvents(run.id, superstep, m, this.now)),
          at: this.now(),
          stamp: workflowStamp(this.workflow),
        });
        this.commit(next.batch);
        run = next.run;
        values = next.values;
        cp = next.checkpoint;
      } catch (e) {
        // Anything that throws while the superstep is staged, built or committed (an edge's
        // `when`, a payload that is not JSON, an extract, the store refusing the batch) ends
        // the run failed on the record, like a failing executor: nothing of the superstep is
        // committed to state, and resume from the last checkpoint tries it again. A damaged
        // record read from the case file is the exception: nothing more is written into it.
        if (isCasefileError(e) && e.code === "CORRUPT_CASE_FILE") throw e;
        return this.fail(
          run,
          cp,
          superstep,
          outcomes,
          failureOf(e),
          isCasefileError(e) ? (e.details.step as string | undefined) : undefined,
        );
      }
    }
  }

  /**
   * A failed superstep commits nothing to state; its step records are kept to explain why.
   * `step`: the id of the step at fault, when a step is: the one that failed, or the one whose
   * output failed after it ran (checkWrites and nextCheckpoint name it in the error's details).
   * Never looked up by executor name: one executor may run twice in a superstep.
   */
  private fail(
    run: RunRecord,
    cp: Checkpoint,
    superstep: number,
    outcomes: TaskOutcome[],
    error: NonNullable<RunResult["error"]>,
    step?: string,
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
    // A step that ran but whose output failed after it (a payload that is not JSON, an edge's
    // `when` that threw on what it sent) is the step at fault: recorded failed with the error.
    // A step that failed itself keeps its own error.
    const atFault = outcomes.find((o) => o.step.id === step);
    const failed = outcomes.map((o) => {
      const err = o.error ?? (o === atFault ? { code: error.code, message: error.message } : undefined);
      return { o, err, step: { ...o.step, id: o.step.id + tag, ...(err ? { status: "failed" as const, error: err } : {}) } };
    });
    const outcome = this.event(run.id, superstep, replan ? "run_needs_replanning" : "run_failed", { error, checkpoint: cp.id });
    const stepEvents = failed
      .filter((f) => f.err)
      .map((f) => this.event(run.id, superstep, "step_failed", { step: f.step.id, executor: f.step.executor, error: f.err! }));
    try {
      this.commit({
        runs: [run],
        steps: failed.map((f) => f.step),
        agentCalls: outcomes.flatMap((o) => (o.agentCall ? [{ ...o.agentCall, id: o.agentCall.id + tag }] : [])),
        events: [...stepEvents, outcome],
      });
    } catch (e) {
      // The step records themselves were refused (the store found something in them it cannot
      // hold): the run still ends failed on the record, with why the steps are missing.
      const why = failureOf(e);
      run.error = { ...error, message: `${error.message} (the superstep's step records could not be stored: ${why.message})` };
      this.commit({ runs: [run], events: [{ ...outcome, data: { error: run.error, checkpoint: cp.id } }] });
    }
    return { ...this.result(run, cp), failedAt: superstep };
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
      this.log(`event listener threw: ${errorMessage(err)}`);
    }
  }

  private warn(message: string): void {
    this.warnings.push(message);
    this.log(`warning: ${message}`);
  }

  /**
   * The host's log, which must not decide a run: a log that throws (the runner's channel to the
   * editor closed, a full disk under a file log) loses that line, not the step or the resume.
   */
  private log(message: string): void {
    try {
      this.options.log?.(message);
    } catch {
      // Nowhere left to say it.
    }
  }

  private event(runId: string, superstep: number, type: EventType, data: Json): EventRecord {
    return { runId, superstep, type, at: this.now(), data };
  }
}

/** A thrown value as the run's error: its code and message, and the executor or edge at fault. */
function failureOf(e: unknown): NonNullable<RunResult["error"]> {
  const { code, message } = describeError(e);
  const details = isCasefileError(e) ? e.details : {};
  const failure: NonNullable<RunResult["error"]> = { code, message };
  if (typeof details.executor === "string") failure.executor = details.executor;
  if (typeof details.edge === "string") failure.edge = details.edge;
  return failure;
}
