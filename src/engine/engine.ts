import { randomUUID } from "node:crypto";
import type { AgentReplay, EngineHooks, TaskOutcome } from "./task";
import { RunControl } from "./control";
import { resolveOpenIntents } from "./effectStep";
import { CasefileError, describeError, errorMessage, isCasefileError, stopsForReplanning, zodIssue } from "./errors";
import { prepareExtracts, type ExtractMade } from "./extracts";
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
import { runTask } from "./steps";
import type { CaseStore, CommitBatch } from "./store";
import { checkWrites, deepFreeze, nextCheckpoint, nextKeyRefs, toJson } from "./superstep";
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
      const parsed = wf.input.safeParse(input);
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
    let unresolved: RunResult["error"];
    try {
      unresolved = await resolveOpenIntents({
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
        hooks: this.options.hooks,
      });
    } catch (e) {
      if (isCasefileError(e) && e.code === "CORRUPT_CASE_FILE") throw e;
      unresolved = failureOf(e);
    }
    if (unresolved) return this.fail(run, cp, cp.superstep + 1, [], unresolved);
    return this.loop(run, cp, values);
  }

  /**
   * Answers a waiting request, validated by the request step's schema, and continues the run. A
   * request is answered once, whatever the workflow version: when the answer goes to a branch (the
   * workflow changed since the run waited), the run that waited is marked `superseded` by it in
   * the same commit, so it is no longer waiting and a second answer is refused naming the first.
   * `by` names who answered (recorded with the answer).
   */
  async respond(requestId: string, answer: Json, opts: { by?: string } = {}): Promise<RunResult> {
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
      const { at, message } = zodIssue(parsed.error);
      throw new CasefileError("INVALID_ANSWER", `answer to request "${requestId}" is invalid at "${at}": ${message}`);
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
    const answered: Json = {
      requestId,
      executor: found.request.executor,
      answer: toJson(parsed.data, "answer", "person"),
      by: opts.by ?? null,
      run: run.id,
      waitingRun: found.checkpoint.runId,
    };
    const batch: CommitBatch = {
      runs: [run],
      checkpoints: [next],
      events: [this.event(run.id, next.superstep, "request_answered", answered)],
    };
    if (run.id !== found.checkpoint.runId) {
      const waited = this.store.getRun(found.checkpoint.runId)!;
      batch.runs!.push({ ...waited, status: "superseded", supersededBy: run.id, updatedAt: at });
      batch.events!.push(this.event(waited.id, found.checkpoint.superstep, "request_answered", answered));
    }
    this.commit(batch);
    return this.loop(run, next, values);
  }

  private findWaiting(requestId: string): { checkpoint: Checkpoint; request: Checkpoint["waiting"][number] } {
    const first = this.store
      .listEvents()
      .find((e) => e.type === "request_answered" && (e.data as { requestId?: string }).requestId === requestId);
    if (first) {
      const d = first.data as { answer?: Json; by?: string | null; run?: string };
      throw new CasefileError(
        "REQUEST_ANSWERED",
        `request "${requestId}" was already answered ${JSON.stringify(d.answer ?? null)}` +
          `${d.by ? ` by ${d.by}` : ""} at ${first.at}, in run ${d.run ?? first.runId}; a request is answered once`,
        { requestId, run: d.run ?? first.runId },
      );
    }
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
    else this.checkStored(values, source);

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
      pending = this.reroute(pending, source);
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
          const { at, path, message } = zodIssue(parsed.error, key);
          throw new CasefileError("INVALID_PATCH", `patch value for "${key}" is invalid at "${at}": ${message}`, { key, path });
        }
        values[key] = toJson(parsed.data, key, "patch");
        changed.add(key);
      }
    }

    const latest = this.store.latestCheckpoint(parent.id);
    const sameRun =
      !forceBranch &&
      changed.size === 0 &&
      source.workflow.version === wf.version && // a migrated checkpoint always continues in a branch
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

  /** Every key of `state` that this workflow's schemas refuse, with the path and message. */
  private unparsable(state: Record<string, Json>): { key: string; path: string[]; at: string; message: string }[] {
    const out: { key: string; path: string[]; at: string; message: string }[] = [];
    for (const [key, value] of Object.entries(state)) {
      const decl = this.workflow.state[key];
      if (!decl) {
        out.push({ key, path: [], at: key, message: `is not a state key of version ${this.workflow.version}` });
        continue;
      }
      const parsed = keySchema(decl).safeParse(value);
      if (parsed.success) continue;
      for (const issue of parsed.error.issues) {
        const p = issue.path.map(String);
        out.push({ key, path: p, at: [key, ...p].join("."), message: `no longer parses: ${issue.message}` });
      }
    }
    return out;
  }

  /**
   * Every value loaded into a run is parsed with its key's schema first: a case file edited by
   * hand, or a schema changed without a new workflow version, is refused here, naming the key and
   * path, rather than handed to an executor (an effect would build its intent from it).
   */
  private checkStored(values: Record<string, Json>, cp: Checkpoint): void {
    for (const [key, value] of Object.entries(values)) {
      const decl = this.workflow.state[key];
      if (!decl) continue; // a key the workflow no longer has: the graph-change warning names it
      const parsed = keySchema(decl).safeParse(value);
      if (parsed.success) continue;
      const { at, path, message } = zodIssue(parsed.error, key);
      const ref = cp.keys[key]!;
      throw new CasefileError(
        "INVALID_STATE_VALUE",
        `stored value of "${key}" (version ${ref.version} of run ${ref.run}) at checkpoint "${cp.id}" is invalid at "${at}": ${message}; ` +
          `the case file was changed, or the key's schema changed without a new workflow version (declare version ${this.workflow.version + 1} with a migration)`,
        { key, path, checkpoint: cp.id },
      );
    }
  }

  /**
   * Messages a checkpoint holds for executors this workflow no longer has are delivered only
   * where a migration routes them (`messages: { old: "new" }`, or `null` to drop them on
   * purpose); any other one refuses the resume, so a run never "completes" by losing its work.
   */
  private reroute(pending: Message[], source: Checkpoint): Message[] {
    const wf = this.workflow;
    const out: Message[] = [];
    for (const m of pending) {
      if (wf.executors[m.to]) {
        out.push(m);
        continue;
      }
      let to: string | null = m.to;
      let by: number | undefined;
      for (let v = source.workflow.version + 1; v <= wf.version && to !== null && !wf.executors[to]; v++) {
        const step = wf.migrations?.[v];
        const routes = typeof step === "object" ? step.messages : undefined;
        if (routes && to in routes) [to, by] = [routes[to] ?? null, v];
      }
      if (to === null) {
        this.warn(`dropped a pending message for removed executor "${m.to}" (from "${m.from}"), as the migration to version ${by} says`);
      } else if (wf.executors[to]) {
        this.warn(
          `routed a pending message for removed executor "${m.to}" (from "${m.from}") to "${to}", as the migration to version ${by} says`,
        );
        out.push({ ...m, to });
      } else {
        const payload = JSON.stringify(m.payload);
        const next = source.workflow.version === wf.version ? wf.version + 1 : wf.version;
        throw new CasefileError(
          "UNDELIVERABLE_MESSAGE",
          `checkpoint "${source.id}" holds a message for executor "${m.to}" (from "${m.from}": ${payload.length > 120 ? payload.slice(0, 117) + "..." : payload}), ` +
            `which version ${wf.version} of "${wf.name}" no longer has; route it in a migration: ` +
            `migrations: { ${next}: { state: (s) => s, messages: { ${JSON.stringify(m.to)}: "<executor>" or null to drop it } } }` +
            (source.workflow.version === wf.version ? ` (with version: ${next})` : ""),
          { executor: m.to, checkpoint: source.id },
        );
      }
    }
    return out;
  }

  private migrate(values: Record<string, Json>, from: number, cpId: string, changed: Set<string>): Record<string, Json> {
    const wf = this.workflow;
    let state = structuredClone(values);
    for (let v = from + 1; v <= wf.version; v++) {
      const step = wf.migrations?.[v];
      if (!step) {
        // Say what the missing migration must do: what of the state no longer parses as it is.
        const broken = this.unparsable(state);
        throw new CasefileError(
          "MIGRATION_FAILED",
          `checkpoint "${cpId}" was made by version ${from} of "${wf.name}", and no migration to version ${v} is declared; ` +
            (broken.length
              ? `as it is, its state no longer parses at: ${broken.map((b) => `"${b.at}" (${b.message})`).join("; ")}`
              : `its state parses as it is: declare migrations: { ${v}: (state) => state }`),
          { problems: broken },
        );
      }
      const migrateState = typeof step === "function" ? step : (step.state ?? ((s: Record<string, Json>) => s));
      try {
        state = migrateState(state);
      } catch (e) {
        throw new CasefileError("MIGRATION_FAILED", `migration to version ${v} of "${wf.name}" threw: ${errorMessage(e)}`);
      }
    }
    const broken = this.unparsable(state);
    if (broken.length) {
      throw new CasefileError(
        "MIGRATION_FAILED",
        `after migrating checkpoint "${cpId}" to version ${wf.version}, ${broken.map((b) => `"${b.at}" ${b.message}`).join("; ")}`,
        { key: broken[0]!.key, path: broken[0]!.path, problems: broken },
      );
    }
    for (const [key, value] of Object.entries(state)) {
      const parsed = keySchema(wf.state[key]!).safeParse(value);
      if (!parsed.success) continue; // unparsable() found none
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
              log: (m) => this.options.log?.(m),
              emit: (e) => this.emit(e),
              rules: () => rulesInForce((this.options.ruleBook ?? this.store).listRules(), this.now()),
              hooks: this.options.hooks,
            });
          }),
        );
        const failed = outcomes.find((o) => o.error);
        if (failed) return this.fail(run, cp, superstep, outcomes, { ...failed.error!, executor: failed.step.executor });
        // Stage: the writes are checked together (ownership, schema, JSON, no key twice).
        const changed = checkWrites(
          this.workflow,
          outcomes.flatMap((o) => o.writes),
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
          events: extracts.made.flatMap((m) => this.extractEvents(run.id, superstep, m)),
          at: this.now(),
          stamp: this.workflowStamp(),
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
        return this.fail(run, cp, superstep, outcomes, failureOf(e));
      }
    }
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
    // A step that ran but whose output failed after it (a payload that is not JSON, an edge's
    // `when` that threw on what it sent) is the step at fault: recorded failed with the error.
    const atFault = outcomes.some((o) => o.error) ? undefined : outcomes.find((o) => o.step.executor === error.executor);
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
      this.options.log?.(`event listener threw: ${errorMessage(err)}`);
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

/** A thrown value as the run's error: its code and message, and the executor or edge at fault. */
function failureOf(e: unknown): NonNullable<RunResult["error"]> {
  const { code, message } = describeError(e);
  const details = isCasefileError(e) ? e.details : {};
  const failure: NonNullable<RunResult["error"]> = { code, message };
  if (typeof details.executor === "string") failure.executor = details.executor;
  if (typeof details.edge === "string") failure.edge = details.edge;
  return failure;
}

function freezeValues(values: Record<string, Json>): Record<string, Json> {
  for (const v of Object.values(values)) deepFreeze(v);
  return values;
}
