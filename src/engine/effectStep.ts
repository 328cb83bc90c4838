import { CasefileError, describeError, isCasefileError } from "./errors";
import { checkIntent, checkLiveRecord } from "./effectShapes";
import type { AnyState, EffectSpec, LiveRecord, PlannedEffect, StepContext } from "./executors";
import { compareIntents, comparePrecondition, holderOf, intentConflict, intentKey, intentRecordId, keyOf } from "./effectCompare";
import type { EventRecord, IntentRecord, Json } from "./records";
import type { CaseStore } from "./store";
import type { EngineHooks, TaskInput, TaskOutcome } from "./task";
import type { Workflow } from "./workflow";

/**
 * An effect on an outside system, written as an intent first. Order of durable writes: the
 * intent (open), then the action (the idempotency key always sent, If-Match where the system
 * has it), then the reference (done). Before the intent opens, the live record is read again
 * and compared with what the plan relied on. An intent already done is never acted on again;
 * an open one (a crash between the action and its reference) is looked up by its key first.
 *
 * Branches (a resume from an older checkpoint, an edit-then-fork, a replay) share the keys of the
 * case's root run, so the target would take a branch's action under a key another run already
 * used as that run's action. Before acting, a run compares its intent with the one any other run
 * of the case holds under the key (done, or open with its outcome unknown): identical, it reuses
 * that reference and records from which run; different in action, target, payload or a relied-on
 * value, it neither acts nor adopts, and stops for replanning with both intents on its record.
 */

/** Thrown by an effect's `act` when the system refused a conditional write (HTTP 412). */
export class PreconditionFailedError extends CasefileError {
  constructor(
    message: string,
    /** The record as the system now holds it, when the refusal says (kept beside the plan's). */
    readonly current?: LiveRecord,
  ) {
    super("PRECONDITION_FAILED", message, current ? { current } : {});
    this.name = "CasefileError";
  }
}

/** What the effect machinery needs besides the spec; a TaskInput provides it, and so does a resume. */
interface EffectIo {
  store: CaseStore;
  runId: string;
  superstep: number;
  executor: string;
  now: () => string;
  log: (message: string) => void;
  warn: (message: string) => void;
  /** Hands an intent's event to the engine's listeners once it is durable (it is committed mid-superstep). */
  emit?: (event: EventRecord) => void;
  hooks?: EngineHooks;
}

/** Called by runTask for an effect executor's message. */
export async function runEffect(
  spec: EffectSpec,
  input: TaskInput,
  state: Readonly<AnyState>,
  ctx: StepContext,
  out: TaskOutcome,
): Promise<Json | void> {
  const declared = checkIntent(input.executor, spec.intent(state, input.message.payload));
  const key = intentKey(input.caseId, input.executor, input.superstep, input.index);
  const io: EffectIo = {
    store: input.store,
    runId: input.runId,
    superstep: input.superstep,
    executor: input.executor,
    now: input.now,
    log: (m) => input.log(`[${input.executor}] ${m}`),
    warn: (m) => out.warnings.push(m),
    emit: input.emit,
    hooks: input.hooks,
  };
  const finish = (reference: Json): Json | void | Promise<Json | void> => (spec.done ? spec.done(reference, ctx) : { reference });

  const id = intentRecordId(key, input.runId, input.caseId);
  const held = input.store.listIntents().filter((i) => keyOf(i) === key);
  let record = held.find((i) => i.runId === input.runId);
  /** This run's intent for the key, open, as declared (the one compared with a holder, then recorded). */
  const openRecord = (): IntentRecord => ({
    id,
    key,
    runId: input.runId,
    superstep: input.superstep,
    executor: input.executor,
    action: declared.action,
    target: declared.target,
    payload: declared.payload,
    reliesOn: declared.reliesOn,
    status: "open",
    createdAt: record?.createdAt ?? input.now(),
    updatedAt: input.now(),
  });
  if (record?.status === "done") {
    io.log(`intent ${record.id} already done; not acting again`);
    return finish(record.reference ?? null);
  }
  // Stryker disable next-line ConditionalExpression: this run's own intent is open here only if resolveOpenIntents left it so, and then the run stopped before this superstep; needs_replanning never continues in the same run.
  if (record && (record.status === "open" || record.status === "failed")) {
    // The act may have reached the system before the crash or the error: look before acting.
    const found = await lookUp(spec, record, io);
    if (found !== null) return finish(found);
  } else {
    // This run has not acted under the key: another run of the case may have.
    const holder = holderOf(held, input.runId);
    if (holder) {
      const proposed = openRecord();
      const reused = await againstHolder(spec, proposed, holder, input.runId === input.caseId ? "this run" : "this branch", io);
      if (reused !== null) return finish(reused);
    }
  }
  const planned: PlannedEffect = { ...declared, key };
  const base = openRecord();
  // Stryker disable next-line ConditionalExpression: `basis: undefined` is no basis; stored as JSON it is dropped.
  if (declared.basis) base.basis = declared.basis;
  record = base;
  return finish(await checkThenAct(spec, planned, record, ctx, io));
}

/**
 * Called by the engine when a run resumes, before its first superstep: every open intent of the
 * case is resolved, so nothing runs again while an earlier effect's outcome is unknown. Found by
 * its key: recorded done with the reference. Not found: checked and acted on (with the same key).
 * The step itself then runs again in the superstep and, finding its intent done, only calls done.
 * Returns the error that stops the run (needs replanning, effect failed), or undefined.
 */
export async function resolveOpenIntents(args: {
  workflow: Workflow;
  store: CaseStore;
  caseId: string;
  runId: string;
  superstep: number;
  state: Readonly<Record<string, Json>>;
  now: () => string;
  signal: AbortSignal;
  log: (message: string) => void;
  emit?: (event: EventRecord) => void;
  hooks?: EngineHooks;
}): Promise<{ code: string; message: string; executor: string } | undefined> {
  // Only this run's own: another run's open intent is that run's to resolve when it resumes, and
  // a branch reaching the same key compares its own intent with it first (never adopting it blind).
  // Stryker disable next-line MethodExpression,StringLiteral: every key is `case:executor:superstep` (intentKey); the filter only guards records written by hand.
  const open = args.store.listIntents({ status: "open", runId: args.runId }).filter((i) => keyOf(i).startsWith(`${args.caseId}:`));
  for (const record of open) {
    const spec = args.workflow.executors[record.executor];
    const io: EffectIo = {
      store: args.store,
      runId: args.runId,
      superstep: args.superstep,
      executor: record.executor,
      now: args.now,
      log: (m) => args.log(`[${record.executor}] ${m}`),
      warn: (m) => args.log(`warning: ${m}`),
      emit: args.emit,
      hooks: args.hooks,
    };
    if (!spec || spec.kind !== "effect") {
      // The workflow changed under the case: leave the intent open for a person, but say so.
      io.warn(`open intent ${record.id} names executor "${record.executor}", which is no longer an effect step; left open`);
      continue;
    }
    try {
      const found = await lookUp(spec, record, io);
      if (found !== null) continue;
      const ctx = resolvingContext(args, record.executor, spec);
      await checkThenAct(spec, plannedFrom(record), { ...record, updatedAt: args.now() }, ctx, io);
    } catch (e) {
      const err = describeError(e);
      return { code: err.code, message: `executor "${record.executor}" failed: ${err.message}`, executor: record.executor };
    }
  }
  return undefined;
}

/**
 * Called by runEffect when another run holds the key. Different: the proposed intent is recorded
 * refused with both side by side, and EFFECT_CONFLICT stops the run. Identical and done: the
 * holder's reference is recorded as this run's, reused. Identical and open: the key is looked up
 * (never the holder's record changed); found, reused; not found, returns null and the caller acts.
 */
async function againstHolder(
  spec: EffectSpec,
  proposed: IntentRecord,
  holder: IntentRecord,
  self: string,
  io: EffectIo,
): Promise<Json | null> {
  const key = keyOf(holder);
  const differs = compareIntents(holder, proposed);
  if (differs.length > 0) {
    const { conflict, message } = intentConflict(holder, proposed, differs, self, io.now());
    const refused: IntentRecord = {
      ...proposed,
      status: "needs_replanning",
      conflict,
      error: { code: "EFFECT_CONFLICT", message },
      updatedAt: io.now(),
    };
    commitIntent(io, refused, "refused: conflict");
    // The details have no reader: the run's error takes code, message and the step's executor, and the conflict is on the intent record.
    // Stryker disable next-line ObjectLiteral: details no one reads (above)
    throw new CasefileError("EFFECT_CONFLICT", message, {
      executor: proposed.executor,
      key,
      intent: proposed.id,
      // Stryker disable next-line ObjectLiteral: details no one reads (above)
      existing: { run: holder.runId, intent: holder.id },
      // Stryker disable next-line ArrowFunction: details no one reads (above)
      fields: differs.map((d) => d.path),
    });
  }
  let reference: Json | null = null;
  if (holder.status === "done") reference = holder.reference ?? null;
  else if (spec.reconcile) {
    try {
      reference = await spec.reconcile(plannedFrom(holder));
    } catch (e) {
      throw effectFailed(proposed, "reconcile", e);
    }
    if (reference === null) {
      io.log(
        `intent ${proposed.id}: run ${holder.runId}'s identical intent ${holder.id} is ${holder.status} and its key is not in ${holder.target}; acting`,
      );
      return null;
    }
  } else {
    io.warn(
      `intent ${proposed.id}: run ${holder.runId}'s identical intent ${holder.id} was left ${holder.status} and "${proposed.executor}" has no reconcile: acting with the same idempotency key, which the target must honour`,
    );
    return null;
  }
  commitIntent(
    io,
    { ...proposed, status: "done", reference, reusedFrom: { run: holder.runId, intent: holder.id }, updatedAt: io.now() },
    "reused",
  );
  io.log(`intent ${proposed.id}: identical to run ${holder.runId}'s intent ${holder.id}; reused its reference, not acting again`);
  return reference;
}

/** Reconciles an open or failed intent by its key. Returns the reference if the effect happened. */
async function lookUp(spec: EffectSpec, record: IntentRecord, io: EffectIo): Promise<Json | null> {
  if (!spec.reconcile) {
    io.warn(
      `intent ${record.id} (${record.action} on ${record.target}) was left ${record.status} and "${record.executor}" has no reconcile: acting again with the same idempotency key, which the target must honour`,
    );
    return null;
  }
  let found: Json | null;
  try {
    found = await spec.reconcile(plannedFrom(record));
  } catch (e) {
    throw effectFailed(record, "reconcile", e);
  }
  if (found === null) {
    io.log(`intent ${record.id}: key not found in ${record.target}; the effect did not happen`);
    return null;
  }
  commitIntent(io, { ...record, status: "done", reference: found, updatedAt: io.now() }, "reconciled: found");
  io.log(`intent ${record.id}: found by its key in ${record.target}; recorded done`);
  return found;
}

/** Re-reads the live record, opens the intent, acts, records the reference. */
async function checkThenAct(spec: EffectSpec, planned: PlannedEffect, record: IntentRecord, ctx: StepContext, io: EffectIo): Promise<Json> {
  const basis = basisOf(record);
  let live: LiveRecord | undefined;
  if (spec.check) {
    try {
      live = await spec.check(planned, ctx);
      checkLiveRecord(live);
    } catch (e) {
      const error = effectFailed(record, "check", e);
      commitIntent(
        io,
        { ...record, status: "failed", error: { code: error.code, message: error.message }, updatedAt: io.now() },
        "check failed",
      );
      throw error;
    }
    const result = comparePrecondition({ reliesOn: record.reliesOn, basis }, live);
    const drift = {
      basis: (basis ?? null) as Json,
      live: live as unknown as Json,
      changed: result.changed,
      reliedOnChanged: result.reliedOnChanged,
      detectedAt: io.now(),
    };
    if (result.outcome === "relied_on_change") {
      const fields = result.reliedOnChanged.map((c) => c.path).join(", ");
      commitIntent(
        io,
        { ...record, status: "needs_replanning", drift: { kind: "relied_on_change", ...drift }, updatedAt: io.now() },
        "needs replanning",
      );
      throw new CasefileError(
        "NEEDS_REPLANNING",
        `effect "${record.executor}" (intent ${record.id}, ${record.action} on ${record.target}) did not act: the live record changed in ${fields}, which it relies on (version ${basis?.version ?? "?"} -> ${live.version})`,
        // Stryker disable next-line ObjectLiteral,ArrowFunction: no reader: the run's error takes code, message and the step's executor; the drift is on the intent record.
        { executor: record.executor, key: record.id, fields: result.reliedOnChanged.map((c) => c.path) },
      );
    }
    if (result.outcome === "unrelated_change") {
      record = { ...record, drift: { kind: "unrelated_change", ...drift } };
      io.warn(
        // Stryker disable next-line StringLiteral: an unrelated change needs a basis to differ from, so its version is never "?"; the other literals are asserted (effectStep.test.ts).
        `effect "${record.executor}" (intent ${record.id}): the live record changed (version ${basis?.version ?? "?"} -> ${live.version}; ${result.changed.join(", ") || "no field"}) in fields it does not rely on; acting`,
      );
    }
    planned = { ...planned, expectedVersion: live.version };
    record = { ...record, expectedVersion: live.version };
  }
  record = { ...record, status: "open", updatedAt: io.now() };
  delete record.error;
  commitIntent(
    io,
    record,
    // Stryker disable next-line ConditionalExpression: an intent opened with a drift has an unrelated change; a relied-on change or a refused write stops before opening.
    record.drift && (record.drift as { kind?: string }).kind === "unrelated_change" ? "opened with drift" : "opened",
  );

  await testPause("BEFORE", record.id, io);
  let reference: Json;
  try {
    reference = await spec.act(planned, ctx);
  } catch (e) {
    if (isCasefileError(e) && e.code === "PRECONDITION_FAILED") {
      // The record changed between the check and the write: the same stop as a relied-on change,
      // with the plan's version, the checked one and the one the system now holds side by side.
      const current = (e as PreconditionFailedError).current ?? (e.details.current as LiveRecord | undefined);
      commitIntent(
        io,
        {
          ...record,
          status: "needs_replanning",
          drift: {
            kind: "conflict",
            basis: (basis ?? null) as Json,
            checked: (live ?? null) as Json,
            live: (current ?? null) as unknown as Json,
            detectedAt: io.now(),
          },
          error: { code: e.code, message: e.message },
          updatedAt: io.now(),
        },
        "conditional write refused",
      );
      throw new CasefileError(
        "NEEDS_REPLANNING",
        `effect "${record.executor}" (intent ${record.id}, ${record.action} on ${record.target}): ${record.target} refused the conditional write at version ${planned.expectedVersion ?? "?"}${current ? `; it now holds ${current.version}` : ""}`,
        // Stryker disable next-line ObjectLiteral: no reader: the run's error takes code, message and the step's executor; the drift is on the intent record.
        { executor: record.executor, key: record.id },
      );
    }
    const error = effectFailed(record, "act", e);
    commitIntent(io, { ...record, status: "failed", error: { code: error.code, message: error.message }, updatedAt: io.now() }, "failed");
    throw error;
  }
  await testPause("AFTER", record.id, io);
  commitIntent(io, { ...record, status: "done", reference, updatedAt: io.now() }, "done");
  return reference;
}

/**
 * The test hooks' pauses (EngineHooks): with pauseAfterActMs set, the effect waits that long
 * between the action and the recording of its reference (with pauseBeforeActMs, between the open
 * intent and the action), and says so on the log first, so that a SIGKILL, or a copy of the case
 * file, lands in exactly the window that reconciliation exists for. Unset they cost one lookup.
 */
async function testPause(when: "BEFORE" | "AFTER", key: string, io: EffectIo): Promise<void> {
  const ms = Number((when === "AFTER" ? io.hooks?.pauseAfterActMs : io.hooks?.pauseBeforeActMs) ?? 0);
  if (!(ms > 0)) return;
  io.log(
    when === "AFTER"
      ? `test hook: acted on ${key}; pausing ${ms} ms before recording the reference`
      : `test hook: intent ${key} open; pausing ${ms} ms before acting`,
  );
  await new Promise((resolve) => setTimeout(resolve, ms));
}

function effectFailed(record: IntentRecord, phase: "check" | "act" | "reconcile", e: unknown): CasefileError {
  const err = describeError(e);
  return new CasefileError(
    "EFFECT_FAILED",
    `effect "${record.executor}" (intent ${record.id}, ${record.action} on ${record.target}) failed in ${phase}: ${err.message}`,
    // Stryker disable next-line ObjectLiteral: no reader: a run's error takes code, message and the failing step's executor.
    { executor: record.executor, key: record.id, phase, cause: err.code },
  );
}

/** Intents are made durable on their own, mid-superstep: the action must not outrun them. */
function commitIntent(io: EffectIo, record: IntentRecord, what: string): void {
  const event: EventRecord = {
    runId: io.runId,
    superstep: io.superstep,
    type: "intent",
    at: record.updatedAt,
    data: {
      id: record.id,
      key: keyOf(record),
      status: record.status,
      what,
      action: record.action,
      target: record.target,
      executor: record.executor,
    },
  };
  const data = event.data as { [k: string]: Json };
  if (record.reusedFrom) data.reusedFrom = record.reusedFrom;
  // Stryker disable next-line ConditionalExpression: `conflict: undefined` is no conflict; the event is stored as JSON.
  if (record.conflict) data.conflict = record.conflict as unknown as Json;
  io.store.commit({ intents: [record], events: [event] });
  io.emit?.(event);
}

function plannedFrom(record: IntentRecord): PlannedEffect {
  const planned: PlannedEffect = {
    action: record.action,
    target: record.target,
    payload: record.payload,
    reliesOn: record.reliesOn,
    key: keyOf(record),
  };
  const basis = basisOf(record);
  if (basis) planned.basis = basis;
  // Stryker disable next-line ConditionalExpression,EqualityOperator: only a check sets expectedVersion, and checkThenAct checks again and sets it from the live record before acting; reconcile looks up by key.
  if (record.expectedVersion !== undefined) planned.expectedVersion = record.expectedVersion;
  return planned;
}

function basisOf(record: IntentRecord): LiveRecord | undefined {
  return record.basis;
}

/**
 * The context check and act get while a resume resolves an intent: state as of the checkpoint,
 * but no writes or sends, since no superstep is running; the step's `done` does those when the
 * step runs again.
 */
function resolvingContext(
  args: { runId: string; superstep: number; state: Readonly<Record<string, Json>>; signal: AbortSignal; log: (m: string) => void },
  executor: string,
  spec: EffectSpec,
): StepContext {
  // Stryker disable next-line ArrayDeclaration: a key not in the checkpoint's state is skipped below, whatever the fallback lists.
  const keys = new Set([...(spec.reads ?? []), ...(spec.owns ?? [])]);
  const state: AnyState = {};
  // Stryker disable next-line ConditionalExpression: a key absent from the checkpoint reads as undefined either way.
  for (const k of keys) if (k in args.state) state[k] = args.state[k];
  const refuse = (what: string) => (): never => {
    throw new CasefileError(
      "EFFECT_FAILED",
      `effect "${executor}" called ${what} while its open intent was being resolved on resume; stage writes in done()`,
      // Stryker disable next-line ObjectLiteral: no reader: act's error is wrapped as EFFECT_FAILED by its message (effectFailed).
      { executor },
    );
  };
  return {
    runId: args.runId,
    superstep: args.superstep,
    executor,
    state: Object.freeze(state),
    message: null,
    from: "resume",
    local: undefined,
    signal: args.signal,
    write: refuse("ctx.write"),
    send: refuse("ctx.send"),
    yield: refuse("ctx.yield"),
    setLocal: refuse("ctx.setLocal"),
    log: (m) => args.log(`[${executor}] ${m}`),
  };
}
