import { CasefileError, describeReturned } from "./errors";
import type { EffectIntent } from "./executors";

/**
 * What an effect's own functions return, checked where the effect step (effectStep.ts) gets it:
 * a value of another shape is a bug in the workflow, said naming the step, never read as if it
 * were an intent or a live record (a `check` returning garbage would otherwise read as a record
 * that changed, and stop the case for replanning it does not need).
 */
/** An effect's declared intent as EffectIntent says; anything else is a bug in `intent`, named with the step. */
export function checkIntent(executor: string, d: unknown): EffectIntent {
  const o = (typeof d === "object" && d !== null && !Array.isArray(d) ? d : undefined) as Record<string, unknown> | undefined;
  const problem = !o
    ? `returned ${describeReturned(d)}`
    : typeof o.action !== "string" || o.action === ""
      ? `returned an action that is ${describeReturned(o.action)}`
      : typeof o.target !== "string" || o.target === ""
        ? `returned a target that is ${describeReturned(o.target)}`
        : o.payload === undefined
          ? "returned no payload"
          : undefined;
  if (problem) {
    throw new CasefileError(
      "INVALID_WORKFLOW",
      `effect "${executor}": intent ${problem}, not { action: string, target: string, payload, reliesOn }`,
      { executor },
    );
  }
  return d as EffectIntent;
}

/** Throws (for the caller's "failed in check" error) unless `check` returned { version, record }. */
export function checkLiveRecord(live: unknown): void {
  const l = live as { version?: unknown; record?: unknown } | null;
  if (typeof l !== "object" || l === null || typeof l.version !== "string" || l.record === undefined)
    throw new Error(`returned ${describeReturned(live)}, not { version: string, record }`);
}
