import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { z } from "zod";
import { openCaseFile, type SqlJsStore } from "../../../src/casefile/index";
import { RunControl } from "../../../src/engine/control";
import { type EngineOptions, type RunResult } from "../../../src/engine/engine";
import { code, edge } from "../../../src/engine/executors";
import type { RunStatus } from "../../../src/engine/records";
import { defineWorkflow, type Workflow, type WorkflowSpec } from "../../../src/engine/workflow";
import { engineOn, withCaseFile } from "./helpers/caseFileOnDisk";

/**
 * Which run a resume continues, and what a branch records, on a case file on disk reopened for
 * every step (mutation testing of resumePlan.ts, issue 18): the latest checkpoint of an
 * unfinished run continues that run; an older checkpoint, a finished run, a migration or a patch
 * starts a branch that records where it came from and leaves the parent as it was.
 */

let dir: string;
let file: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), "casefile-resumeplan-"));
  file = path.join(dir, "case.casefile");
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const onDisk = <T>(go: (store: SqlJsStore) => Promise<T> | T): Promise<T> => withCaseFile(file, go);
const engine = (wf: Workflow, options: EngineOptions = {}) => engineOn(file, wf, options);

/** `tick` counts n up to 3, yielding each n; it stops the run after superstep `stopAt` when given a control. */
function counter(over: Partial<WorkflowSpec> = {}, stop?: { control: RunControl; at: number }): Workflow {
  return defineWorkflow({
    name: "counter",
    version: 1,
    state: { n: z.number().int(), note: z.string() },
    start: "tick",
    executors: {
      tick: code({
        owns: ["n"],
        run: (ctx) => {
          const n = ((ctx.state.n as number | undefined) ?? 0) + 1;
          ctx.write("n", n);
          ctx.yield(n);
          if (stop && n === stop.at) stop.control.stopAfterSuperstep();
          return n < 3 ? n : undefined;
        },
      }),
    },
    edges: [edge("tick", "tick")],
    ...over,
  });
}

/** A run of `counter` stopped after superstep `at`: its record says stopped, its latest checkpoint is `at`. */
async function stoppedAt(at: number, over: Partial<WorkflowSpec> = {}): Promise<RunResult> {
  const control = new RunControl();
  const r = await engine(counter(over, { control, at }), { control, workflowPath: "flows/counter.ts" })((e) => e.run());
  assert.equal(r.status, "stopped", "the control stopped the run");
  assert.equal(r.superstep, at, `the run stopped at superstep ${at}`);
  return r;
}

describe("resume plan: the latest checkpoint of an unfinished run continues that run", () => {
  for (const status of ["stopped", "failed", "paused", "running"] as RunStatus[]) {
    it(`a run left ${status} continues as itself from its latest checkpoint, recording run_resumed from it`, async () => {
      const stopped = await stoppedAt(1);
      // A failed run, a paused one and one killed mid-run (its record still says running) are all unfinished.
      if (status !== "stopped") await onDisk((s) => s.commit({ runs: [{ ...s.getRun(stopped.runId)!, status }] }));
      const resumed = await engine(counter())((e) => e.resume(stopped.checkpointId));
      assert.equal(resumed.runId, stopped.runId, `a ${status} run continues as itself, not as a branch`);
      assert.equal(resumed.status, "completed", "the resumed run ran to its end");
      const { runs, resumedEvents } = await onDisk((s) => ({
        runs: s.listRuns().length,
        resumedEvents: s.listEvents({ runId: stopped.runId }).filter((e) => e.type === "run_resumed"),
      }));
      assert.equal(runs, 1, "no branch was made");
      assert.deepEqual(
        resumedEvents.map((e) => [e.superstep, e.data]),
        [[1, { from: stopped.checkpointId }]],
        "the case file says the run resumed from its latest checkpoint",
      );
    });
  }

  it("a failed run resumed as itself reads running on disk, without its old error, while its first superstep runs", async () => {
    // kills resumePlan.ts:120 ArrayDeclaration (the resume's batch committing no run): the case file
    // went on saying failed, with the error the resume cleared, until the run's next commit
    let failing = true;
    let seen: { status: string; error?: unknown } | undefined;
    const flaky = counter({
      executors: {
        tick: code({
          owns: ["n"],
          run: async (ctx) => {
            const n = ((ctx.state.n as number | undefined) ?? 0) + 1;
            if (n === 2 && failing) throw new Error("the ledger is down");
            if (n === 2) {
              // what a reader (the editor's inspector) finds in the case file now
              const reader = await openCaseFile(file, { readOnly: true });
              try {
                const run = reader.listRuns()[0]!;
                seen = { status: run.status, ...(run.error ? { error: run.error } : {}) };
              } finally {
                reader.close();
              }
            }
            ctx.write("n", n);
            return n < 3 ? n : undefined;
          },
        }),
      },
    });
    const failed = await engine(flaky)((e) => e.run());
    assert.equal(failed.status, "failed", "the first run failed in its second superstep");
    const before = await onDisk((s) => s.getRun(failed.runId)!);
    assert.match(before.error?.message ?? "", /the ledger is down/, "the failed run records its error");
    failing = false;
    const resumed = await engine(flaky)((e) => e.resume(failed.checkpointId));
    assert.equal(resumed.runId, failed.runId, "the failed run continues as itself");
    assert.equal(resumed.status, "completed", "and runs to its end");
    assert.deepEqual(seen, { status: "running" }, "during the resumed superstep the case file says running, with no error");
  });

  it("a completed run resumed from its latest checkpoint starts a branch; the completed run stays completed", async () => {
    const done = await engine(counter())((e) => e.run());
    assert.equal(done.status, "completed", "the first run completed");
    const again = await engine(counter())((e) => e.resume(done.checkpointId));
    assert.notEqual(again.runId, done.runId, "a finished run is never reopened");
    const parent = await onDisk((s) => s.getRun(done.runId)!);
    assert.equal(parent.status, "completed", "the parent run is left as it was");
  });

  it("an older checkpoint of a stopped run starts a branch that points at it; the stopped run stays stopped at its own checkpoint", async () => {
    const stopped = await stoppedAt(2);
    const first = await onDisk((s) => s.listCheckpoints(stopped.runId).find((c) => c.superstep === 1)!.id);
    const branch = await engine(counter())((e) => e.resume(first));
    assert.notEqual(branch.runId, stopped.runId, "resuming an older checkpoint does not rewrite the run after it");
    const { parent, child } = await onDisk((s) => ({ parent: s.getRun(stopped.runId)!, child: s.getRun(branch.runId)! }));
    assert.equal(parent.status, "stopped", "the parent is not continued");
    assert.deepEqual([child.parentRunId, child.parentCheckpointId], [stopped.runId, first], "the branch names its parent and checkpoint");
    assert.deepEqual(child.outputs, [2, 3], "the branch's outputs are its own, not the parent's first one again");
  });

  it("a newer version with a migration that changes nothing still branches from the latest checkpoint, recording the version it migrated from", async () => {
    const stopped = await stoppedAt(1);
    const v2 = counter({ version: 2, migrations: { 2: (s) => s } });
    const branch = await engine(v2)((e) => e.resume(stopped.checkpointId));
    assert.notEqual(branch.runId, stopped.runId, "a migrated checkpoint always continues in a branch");
    const started = await onDisk((s) => s.listEvents({ runId: branch.runId }).find((e) => e.type === "run_started")!);
    assert.deepEqual(
      started.data,
      { workflow: "counter", version: 2, branchOf: { run: stopped.runId, checkpoint: stopped.checkpointId }, patched: [], migratedFrom: 1 },
      "the branch's start says what it branched from and which version it migrated",
    );
  });
});

describe("resume plan: what a branch records", () => {
  it("a patched branch stores the patched value on disk, and its run_started names the patch and no migration", async () => {
    const stopped = await stoppedAt(1);
    const branch = await engine(counter())((e) => e.resume(stopped.checkpointId, { patch: { note: "checked by ana" } }));
    const { started, values, run } = await onDisk((s) => {
      const cp = s.getCheckpoint(s.listCheckpoints(branch.runId).find((c) => c.superstep === 1)!.id)!;
      return {
        started: s.listEvents({ runId: branch.runId }).find((e) => e.type === "run_started")!,
        values: s.readValues(cp.keys),
        run: s.getRun(branch.runId)!,
      };
    });
    assert.deepEqual(values, { n: 1, note: "checked by ana" }, "the branch's first checkpoint holds the patched value, reopened from disk");
    assert.deepEqual(run.patch, ["note"], "the run record names the patched keys");
    assert.deepEqual(
      started.data,
      {
        workflow: "counter",
        version: 1,
        branchOf: { run: stopped.runId, checkpoint: stopped.checkpointId },
        patched: ["note"],
        migratedFrom: null,
      },
      "run_started says what was patched, and that nothing was migrated",
    );
  });

  it("a branch keeps the parent's workflow path unless the engine names one", async () => {
    const stopped = await stoppedAt(1);
    const kept = await engine(counter())((e) => e.resume(stopped.checkpointId, { branch: true }));
    const moved = await engine(counter(), { workflowPath: "flows/moved.ts" })((e) => e.resume(stopped.checkpointId, { branch: true }));
    const paths = await onDisk((s) => [s.getRun(kept.runId)!.workflow.path, s.getRun(moved.runId)!.workflow.path]);
    assert.deepEqual(paths, ["flows/counter.ts", "flows/moved.ts"], "the editor can find the workflow file of each branch");
  });

  it("a graph changed since the checkpoint is warned about by what changed, and recorded as warning events of the branch", async () => {
    const stopped = await stoppedAt(1);
    const extra = { audit: code({ run: () => undefined }) };
    const tick = counter().executors.tick!;
    const added = counter({ executors: { tick, ...extra }, edges: [edge("tick", "tick"), edge("tick", "audit")] });
    const branch = await engine(added)((e) => e.resume(stopped.checkpointId));
    const warning = `graph of "counter" changed since checkpoint "${stopped.checkpointId}"; executors added: audit`;
    assert.deepEqual(branch.warnings, [warning], "the warning names the executor added, and nothing else");
    assert.equal(branch.status, "completed", "the message pending for tick, which still exists, was delivered");
    const { events, n } = await onDisk((s) => ({
      events: s.listEvents({ runId: branch.runId }).filter((e) => e.type === "warning"),
      n: s.readValues(s.latestCheckpoint(branch.runId)!.keys).n,
    }));
    assert.equal(n, 3, "tick went on counting in the branch");
    assert.deepEqual(
      events.map((e) => e.data),
      [{ message: warning }],
      "the branch's case file keeps the warning",
    );

    // Edges changed only: no executor added or removed.
    const rewired = counter({ edges: [edge("tick", "tick", { label: "again" })] });
    const r = await engine(rewired)((e) => e.resume(stopped.checkpointId));
    assert.deepEqual(
      r.warnings,
      [`graph of "counter" changed since checkpoint "${stopped.checkpointId}"; edges or keys changed`],
      "a change of edges alone is named as such",
    );
  });

  it("a version that removed an executor with no message pending warns naming it", async () => {
    const wf = counter({
      executors: { tick: counter().executors.tick!, audit: code({ run: () => undefined }) },
      edges: [edge("tick", "tick"), edge("tick", "audit", { when: () => false })],
    });
    const control = new RunControl();
    const stopped = await engine(wf, { control })((e) => {
      control.stopAfterSuperstep();
      return e.run();
    });
    assert.equal(stopped.superstep, 0, "stopped before the first superstep");
    const r = await engine(counter())((e) => e.resume(stopped.checkpointId));
    assert.deepEqual(
      r.warnings,
      [`graph of "counter" changed since checkpoint "${stopped.checkpointId}"; executors removed: audit`],
      "the warning names the executor removed",
    );
  });
});
