import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { z } from "zod";
import { type SqlJsStore } from "../../../src/casefile/index";
import { RunControl } from "../../../src/engine/control";
import { Engine } from "../../../src/engine/engine";
import { code, edge, type ExecutorSpec } from "../../../src/engine/executors";
import { planResume } from "../../../src/engine/resumePlan";
import { defineWorkflow } from "../../../src/engine/workflow";
import { withCaseFile } from "./helpers/caseFileOnDisk";

/**
 * The words of a graph-change warning when several executors come and go, and the one rule of
 * planResume's `answering` (mutation testing of resumePlan.ts, issue 18), on a case file on disk.
 */

let dir: string;
let file: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), "casefile-resumegraph-"));
  file = path.join(dir, "case.casefile");
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const onDisk = <T>(go: (store: SqlJsStore) => Promise<T> | T): Promise<T> => withCaseFile(file, go);

const idle = (): ExecutorSpec => code({ run: () => undefined });
/** A workflow of `start` and the given extra executors, each reached from start by a condition that never holds. */
const graph = (extra: string[]) =>
  defineWorkflow({
    name: "g",
    version: 1,
    state: {},
    start: "start",
    executors: { start: code({ run: () => "go" }), ...Object.fromEntries(extra.map((id) => [id, idle()])) },
    edges: extra.map((id) => edge("start", id, { when: () => false })),
  });

/** A run of `wf` stopped before its first superstep: its only checkpoint holds the input for start. */
async function stoppedBeforeStart(extra: string[]): Promise<string> {
  const control = new RunControl();
  control.stopAfterSuperstep();
  const r = await onDisk((store) => new Engine(graph(extra), store, { control }).run());
  assert.equal(r.status, "stopped", "stopped before its first superstep");
  return r.checkpointId;
}

describe("resume graph change: what the warning lists", () => {
  it("lists every executor added and every one removed, comma-separated", async () => {
    const cp = await stoppedBeforeStart(["old1", "old2"]);
    const r = await onDisk((store) => new Engine(graph(["new1", "new2"]), store).resume(cp));
    assert.deepEqual(
      r.warnings,
      [`graph of "g" changed since checkpoint "${cp}"; executors added: new1, new2; executors removed: old1, old2`],
      "both lists, each comma-separated",
    );
  });
});

describe("resume graph change: planResume's answering", () => {
  it("answering from the latest checkpoint of a run that is not waiting plans a branch, never the same run", async () => {
    const cp = await stoppedBeforeStart([]);
    const ctx = { now: () => "2026-01-01T00:00:00.000Z", warn: () => undefined, warnings: [] };
    const plans = await onDisk((s) => [false, true].map((answering) => planResume(graph([]), s, { fromId: cp, answering }, ctx)));
    const runOf = await onDisk((s) => s.getCheckpoint(cp)!.runId);
    assert.equal(plans[0]!.run.id, runOf, "resumed (not answering), the stopped run continues as itself");
    assert.notEqual(plans[1]!.run.id, runOf, "answering, only a waiting run continues as itself");
    assert.equal(plans[1]!.run.parentRunId, runOf, "the branch points at the stopped run");
  });
});

describe("resume graph change: a branch on the record", () => {
  it("a branch is on record as running, pointing at its parent, while its first step runs", async () => {
    const cp = await stoppedBeforeStart([]);
    let seen: { status?: string; parentRunId?: string } | undefined;
    const parent = await onDisk((s) => s.getCheckpoint(cp)!.runId);
    await onDisk(async (store) => {
      const peek = defineWorkflow({
        ...graph([]),
        executors: { start: code({ run: (ctx) => void (seen = store.getRun(ctx.runId)) }) },
        edges: [],
      });
      const r = await new Engine(peek, store).resume(cp, { branch: true });
      assert.notEqual(r.runId, parent, "a branch was made");
    });
    assert.deepEqual(
      [seen?.status, seen?.parentRunId],
      ["running", parent],
      "the editor sees the branch, and where it came from, while its first step runs",
    );
  });
});

describe("resume graph change: a key a newer version dropped", () => {
  it("a missing migration lists the dropped key among the problems, at the key itself, with no path inside it", async () => {
    const withNote = (version: number, state: Record<string, z.ZodType>) =>
      defineWorkflow({
        name: "k",
        version,
        state,
        start: "start",
        executors: { start: code({ owns: Object.keys(state), run: () => undefined }) },
        edges: [],
      });
    const control = new RunControl();
    control.stopAfterSuperstep();
    const r = await onDisk((s) => new Engine(withNote(1, { note: z.string() }), s, { control }).run());
    const patched = await onDisk((s) =>
      new Engine(withNote(1, { note: z.string() }), s, { control: stopNow() }).resume(r.checkpointId, { patch: { note: "x" } }),
    );
    let problems: unknown;
    await onDisk((s) => {
      try {
        planResume(withNote(2, {}), s, { fromId: patched.checkpointId }, { now: () => "t", warn: () => undefined, warnings: [] });
      } catch (e) {
        problems = (e as { details?: { problems?: unknown } }).details?.problems;
      }
    });
    assert.deepEqual(
      problems,
      [{ key: "note", path: [], at: "note", message: "is not a state key of version 2" }],
      "the problem names the key",
    );
  });
});

function stopNow(): RunControl {
  const c = new RunControl();
  c.stopAfterSuperstep();
  return c;
}

describe("resume graph change: state handed on after a resume", () => {
  it("a resumed run hands its first executors the stored values deeply frozen, so none can change state in place", async () => {
    const boxed = (seen: boolean[]) =>
      defineWorkflow({
        name: "box",
        version: 1,
        state: { box: z.object({ list: z.array(z.number()) }) },
        start: "fill",
        executors: {
          fill: code({ owns: ["box"], run: (ctx) => (ctx.write("box", { list: [1] }), "look") }),
          look: code({ reads: ["box"], run: (ctx) => void seen.push(Object.isFrozen(ctx.state.box), Object.isFrozen(ctx.state.box.list)) }),
        },
        edges: [edge("fill", "look")],
      });
    const control = new RunControl();
    const r = await onDisk((s) =>
      new Engine(boxed([]), s, { control, onEvent: (e) => e.type === "checkpoint" && control.stopAfterSuperstep() }).run(),
    );
    assert.equal(r.superstep, 1, "stopped after fill");
    const seen: boolean[] = [];
    await onDisk((s) => new Engine(boxed(seen), s).resume(r.checkpointId));
    assert.deepEqual(seen, [true, true], "the value read back from disk and its nested list are frozen");
  });
});
