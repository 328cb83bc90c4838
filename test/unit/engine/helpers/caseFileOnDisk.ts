import assert from "node:assert/strict";
import { openCaseFile, type SqlJsStore } from "../../../../src/casefile/index";
import { Engine, type EngineOptions, type RunResult } from "../../../../src/engine/engine";
import { isCasefileError, type CasefileError } from "../../../../src/engine/errors";
import type { Workflow } from "../../../../src/engine/workflow";

/**
 * The engine tests that work on a real case file open it from disk for each step and close it
 * after, so every step reads back only what the previous one made durable.
 */
export async function withCaseFile<T>(file: string, go: (store: SqlJsStore) => Promise<T> | T): Promise<T> {
  const store = await openCaseFile(file);
  try {
    return await go(store);
  } finally {
    store.close();
  }
}

/** One step of such a test: an engine for `wf` over the case file opened afresh. */
export const engineOn =
  (file: string, wf: Workflow, options: EngineOptions = {}) =>
  (go: (e: Engine) => Promise<RunResult>): Promise<RunResult> =>
    withCaseFile(file, (store) => go(new Engine(wf, store, options)));

/** The typed error `p` is refused with; fails the test, saying `what`, if it is not refused or not typed. */
export async function refusal(p: Promise<unknown>, what: string): Promise<CasefileError> {
  try {
    await p;
  } catch (e) {
    assert.ok(isCasefileError(e), `${what}: refused with a typed error, not ${String(e)}`);
    return e;
  }
  assert.fail(`${what}: was not refused`);
}
