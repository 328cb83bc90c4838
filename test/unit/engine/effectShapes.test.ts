import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { z } from "zod";
import { openCaseFile } from "../../../src/casefile/index";
import { Engine } from "../../../src/engine/engine";
import { effect } from "../../../src/engine/executors";
import { defineWorkflow } from "../../../src/engine/workflow";

/**
 * An effect whose own functions return the wrong shape: an `intent` that is no intent, a `check`
 * that returns no live record. Each fails the run on the record naming the step, and nothing is
 * acted on; a broken check is never read as a record that changed (which would stop the case for
 * a replanning it does not need). On a case file on disk, reopened.
 */

type Fault = "intent" | "check";

let dir: string;
let file: string;
let acts: number;
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), "casefile-effect-shapes-"));
  file = path.join(dir, "case.casefile");
  acts = 0;
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function workflow(fault: Fault) {
  return defineWorkflow({
    name: "effect-shapes",
    version: 1,
    state: { booking: z.unknown() },
    start: "book",
    executors: {
      book: effect({
        owns: ["booking"],
        intent: () =>
          fault === "intent" ? (42 as never) : { action: "book", target: "carrier:shipments/SH-1", payload: { fee: 25 }, reliesOn: {} },
        check: async () => (fault === "check" ? ("x" as never) : { version: "v1", record: {} }),
        act: async () => {
          acts++;
          return { id: "BK-1" };
        },
      }),
    },
    edges: [],
  });
}

async function runOnDisk(fault: Fault) {
  const store = await openCaseFile(file);
  try {
    return await new Engine(workflow(fault), store).run(null);
  } finally {
    store.close();
  }
}

async function reopened() {
  const store = await openCaseFile(file, { readOnly: true });
  try {
    return { run: store.listRuns()[0]!, intents: store.listIntents() };
  } finally {
    store.close();
  }
}

describe("effects: an intent or a check of the wrong shape", () => {
  it("an intent that is not { action, target, payload, reliesOn } fails the run naming the step, with no intent and no act", async () => {
    const result = await runOnDisk("intent");
    assert.equal(result.status, "failed");
    const { run, intents } = await reopened();
    assert.equal(run.status, "failed", "the case file says failed");
    assert.equal(run.error?.code, "INVALID_WORKFLOW");
    assert.match(run.error!.message, /effect "book": intent returned 42, not \{ action: string, target: string, payload, reliesOn \}/);
    assert.deepEqual(intents, [], "no intent was recorded");
    assert.equal(acts, 0, "nothing was acted on");
  });

  it("a check that returns no live record fails the run (not needs_replanning), the intent failed in check, no act", async () => {
    const result = await runOnDisk("check");
    assert.equal(result.status, "failed", "a broken check is not a changed record");
    const { run, intents } = await reopened();
    assert.equal(run.status, "failed");
    assert.equal(run.error?.code, "EFFECT_FAILED");
    assert.match(run.error!.message, /failed in check: returned "x", not \{ version: string, record \}/);
    assert.deepEqual(
      intents.map((i) => i.status),
      ["failed"],
    );
    assert.equal(acts, 0, "nothing was acted on");
  });
});
