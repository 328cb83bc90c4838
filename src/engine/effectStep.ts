import { CasefileError, describeError } from "./errors";
import type { AnyState, EffectSpec, StepContext } from "./executors";
import type { IntentRecord, Json } from "./records";
import type { TaskInput, TaskOutcome } from "./steps";

/**
 * An effect on an outside system, written as an intent first. Order of durable writes:
 * the intent (open), then the action (the idempotency key always sent), then the reference
 * (done). An intent already done is never acted on again; an open one (a crash between the
 * action and its reference) is reconciled by looking the key up before anything else.
 */
export async function runEffect(
  spec: EffectSpec,
  input: TaskInput,
  state: Readonly<AnyState>,
  ctx: StepContext,
  _out: TaskOutcome,
): Promise<Json | void> {
  const declared = spec.intent(state, input.message.payload);
  const key = `${input.caseId}:${input.executor}:${input.superstep}`;
  const intent = { ...declared, key };
  const now = input.now();
  let record = input.store.getIntent(key);

  if (record?.status === "done") {
    input.log(`[${input.executor}] intent ${key} already done; not acting again`);
    return spec.done ? spec.done(record.reference ?? null, ctx) : { reference: record.reference ?? null };
  }
  if (record?.status === "open" && spec.reconcile) {
    const found = await spec.reconcile(intent);
    if (found !== null) {
      record = { ...record, status: "done", reference: found, updatedAt: input.now() };
      commitIntent(input, record, "reconciled: found");
      return spec.done ? spec.done(found, ctx) : { reference: found };
    }
  }
  if (!record) {
    record = {
      id: key,
      runId: input.runId,
      superstep: input.superstep,
      executor: input.executor,
      action: declared.action,
      target: declared.target,
      payload: declared.payload,
      reliesOn: declared.reliesOn,
      status: "open",
      createdAt: now,
      updatedAt: now,
    };
    commitIntent(input, record, "opened");
  }

  let reference: Json;
  try {
    reference = await spec.act(intent, ctx);
  } catch (e) {
    const error = describeError(e);
    commitIntent(input, { ...record, status: "failed", error, updatedAt: input.now() }, "failed");
    throw new CasefileError("EXECUTOR_FAILED", `effect ${declared.action} on ${declared.target} failed: ${error.message}`, { key });
  }
  commitIntent(input, { ...record, status: "done", reference, updatedAt: input.now() }, "done");
  return spec.done ? spec.done(reference, ctx) : { reference };
}

/** Intents are made durable on their own, mid-superstep: the action must not outrun them. */
function commitIntent(input: TaskInput, record: IntentRecord, what: string): void {
  input.store.commit({
    intents: [record],
    events: [
      {
        runId: input.runId,
        superstep: input.superstep,
        type: "intent",
        at: record.updatedAt,
        data: { id: record.id, status: record.status, what, action: record.action, target: record.target },
      },
    ],
  });
}
