/**
 * Scenario 3, resume: a case file holding one stopped run of N checkpoints of the tick loop, and
 * the same history in a SqliteSaver file. Resume from the first, the middle and the last
 * checkpoint, each from a fresh copy of the file opened beforehand (not timed): the time runs from
 * the call to resume until the first new checkpoint is durable, so it covers loading the
 * checkpoint and its state, getting ready to run, and one trivial superstep with its commit.
 *
 * Ours: resuming the last checkpoint of the stopped run continues that run; the first and the
 * middle start a branch run (DESIGN.md: history is never rewritten). Theirs: `invoke(null)` with
 * the checkpoint_id and interruptAfter the tick node.
 *
 * Building the file: the engine runs the N supersteps over a MemoryStore that records each
 * commit batch; the batches are then committed to the case file in chunks. The rows are exactly
 * those the engine writes superstep by superstep; only the number of journal appends (fsyncs)
 * differs, which saves the build most of its time and changes nothing that resume reads.
 */
import path from "node:path";
import { MemoryStore, SqlJsStore } from "../../../src/casefile";
import { RunControl } from "../../../src/engine/control";
import { Engine } from "../../../src/engine/engine";
import type { CommitBatch } from "../../../src/engine/store";
import { tickGraph, tickWorkflow } from "./graphs";
import { bytesOnDisk, collectGarbage, copyWithSideFiles, cpuMsSince, median, msSince, now, removeWithSideFiles } from "./measure";
import type { Log, Row } from "./measure";
import { sqliteSaver } from "./overhead";

export interface ResumeOptions {
  /** Checkpoints in the file: supersteps 0 .. checkpoints-1. */
  checkpoints: number;
  reps: number;
  dir: string;
  log: Log;
  /** Target for each of ours: at most this many times SqliteSaver's resume from the same point (2, issue 15). */
  oursMaxRatio: number;
}

const POINTS = ["first", "middle", "last"] as const;
type Point = (typeof POINTS)[number];

/** A MemoryStore that keeps a copy of every batch committed to it. */
class RecordingStore extends MemoryStore {
  readonly batches: CommitBatch[] = [];
  override commit(batch: CommitBatch): void {
    super.commit(batch);
    // The engine goes on mutating the run record it committed; keep the batch as it was.
    this.batches.push(structuredClone(batch));
  }
}

/** Several batches as one: rows in commit order; an upserted run keeps only its last version. */
function merge(batches: CommitBatch[]): CommitBatch {
  const out: Record<string, unknown[]> = {};
  for (const b of batches) for (const [table, rows] of Object.entries(b)) (out[table] ??= []).push(...(rows as unknown[]));
  if (out.runs) out.runs = [...new Map((out.runs as { id: string }[]).map((r) => [r.id, r])).values()];
  return out as CommitBatch;
}

async function buildOurs(file: string, checkpoints: number): Promise<Record<Point, string>> {
  const last = checkpoints - 1;
  const recorder = new RecordingStore();
  const control = new RunControl();
  const engine = new Engine(tickWorkflow(), recorder, {
    control,
    onEvent: (e) => {
      if (e.type === "checkpoint" && e.superstep >= last) control.stop();
    },
  });
  const r = await engine.run({ limit: checkpoints * 10 });
  if (r.status !== "stopped" || r.superstep !== last) throw new Error(`building the resume case file: ${r.status} at ${r.superstep}`);
  removeWithSideFiles(file);
  const store = await SqlJsStore.open(file, { create: true });
  try {
    const chunk = 1000;
    for (let i = 0; i < recorder.batches.length; i += chunk) store.commit(merge(recorder.batches.slice(i, i + chunk)));
    if (store.listCheckpoints(r.runId).length !== checkpoints) throw new Error("resume case file: wrong number of checkpoints");
  } finally {
    store.close();
  }
  const id = (s: number): string => `${r.runId}:${s}`;
  return { first: id(0), middle: id(Math.floor(last / 2)), last: id(last) };
}

async function buildTheirs(file: string, checkpoints: number): Promise<{ ids: Record<Point, string>; n: Record<Point, number> }> {
  removeWithSideFiles(file);
  const saver = sqliteSaver(file, false);
  try {
    // Checkpoints are saved for steps -1 (the input) .. recursionLimit; step s holds n = s.
    const graph = tickGraph(saver);
    const last = checkpoints - 2;
    await graph.invoke({ n: 0, limit: checkpoints * 10 }, { configurable: { thread_id: "bench" }, recursionLimit: last }).then(
      () => {
        throw new Error("building the SqliteSaver file: the run ended before its recursion limit");
      },
      (e: Error) => {
        if (e.name !== "GraphRecursionError") throw e;
      },
    );
    const bySteps = new Map<number, string>();
    let count = 0;
    for await (const t of saver.list({ configurable: { thread_id: "bench" } })) {
      count++;
      bySteps.set(t.metadata?.step as number, t.checkpoint.id);
    }
    if (count !== checkpoints) throw new Error(`SqliteSaver file holds ${count} checkpoints, expected ${checkpoints}`);
    const steps: Record<Point, number> = { first: 0, middle: Math.floor(last / 2), last };
    const ids = Object.fromEntries(POINTS.map((p) => [p, bySteps.get(steps[p])!])) as Record<Point, string>;
    return { ids, n: steps };
  } finally {
    saver.db.close();
  }
}

/**
 * `firstCommitMs`: until the first batch of the resume is durable (the branch run's start, or the
 * run_resumed event), i.e. loading the checkpoint plus the store's first commit after opening.
 */
async function resumeOurs(
  built: string,
  work: string,
  id: string,
): Promise<{ resumeMs: number; openMs: number; firstCommitMs: number; cpuMs: number }> {
  copyWithSideFiles(built, work);
  collectGarbage();
  const opening = now();
  const store = await SqlJsStore.open(work);
  const openMs = msSince(opening);
  try {
    const control = new RunControl();
    let resumeMs: number | undefined;
    let firstCommitMs: number | undefined;
    let at: number | undefined;
    let t = now();
    let cpu = process.cpuUsage();
    let cpuMs: number | undefined;
    const engine = new Engine(tickWorkflow(), store, {
      control,
      onEvent: (e) => {
        if ((e.type === "run_started" || e.type === "run_resumed") && firstCommitMs === undefined) firstCommitMs = msSince(t);
        if (e.type !== "checkpoint" || resumeMs !== undefined) return;
        resumeMs = msSince(t);
        cpuMs = cpuMsSince(cpu);
        at = e.superstep;
        control.stop();
      },
    });
    t = now();
    cpu = process.cpuUsage();
    await engine.resume(id);
    const from = Number(id.slice(id.lastIndexOf(":") + 1));
    if (resumeMs === undefined || at !== from + 1)
      throw new Error(`ours resume from ${id}: first new checkpoint at ${String(at)}, expected ${from + 1}`);
    return { resumeMs, openMs, firstCommitMs: firstCommitMs ?? NaN, cpuMs: cpuMs ?? NaN };
  } finally {
    store.close();
    removeWithSideFiles(work);
  }
}

async function resumeTheirs(built: string, work: string, id: string, n: number): Promise<{ resumeMs: number; openMs: number }> {
  copyWithSideFiles(built, work);
  collectGarbage();
  const opening = now();
  const saver = sqliteSaver(work, false);
  const openMs = msSince(opening);
  try {
    const graph = tickGraph(saver);
    const t = now();
    const r = await graph.invoke(null, {
      configurable: { thread_id: "bench", checkpoint_id: id },
      interruptAfter: ["tick"],
      durability: "sync",
    });
    const resumeMs = msSince(t);
    if (r.n !== n + 1) throw new Error(`theirs resume from step ${n}: n=${String(r.n)}, expected ${n + 1}`);
    return { resumeMs, openMs };
  } finally {
    saver.db.close();
    removeWithSideFiles(work);
  }
}

export async function resume(o: ResumeOptions): Promise<Row[]> {
  const oursFile = path.join(o.dir, "resume.casefile");
  const theirsFile = path.join(o.dir, "resume.sqlite");
  let t = now();
  const ourIds = await buildOurs(oursFile, o.checkpoints);
  o.log(`  resume: built ours (${o.checkpoints} checkpoints, ${bytesOnDisk(oursFile)} bytes) in ${(msSince(t) / 1000).toFixed(1)} s`);
  t = now();
  const their = await buildTheirs(theirsFile, o.checkpoints);
  o.log(`  resume: built theirs (${o.checkpoints} checkpoints, ${bytesOnDisk(theirsFile)} bytes) in ${(msSince(t) / 1000).toFixed(1)} s`);

  const work = (side: string): string => path.join(o.dir, `resume-work.${side}`);
  await resumeOurs(oursFile, work("casefile"), ourIds.middle); // warm-up, not counted
  await resumeTheirs(theirsFile, work("sqlite"), their.ids.middle, their.n.middle);
  const samples = {
    ours: new Map<Point, number[]>(POINTS.map((p) => [p, []])),
    theirs: new Map<Point, number[]>(POINTS.map((p) => [p, []])),
  };
  const opens = { ours: [] as number[], theirs: [] as number[] };
  const firstCommits = new Map<Point, number[]>(POINTS.map((p) => [p, []]));
  const cpus = new Map<Point, number[]>(POINTS.map((p) => [p, []]));
  for (let rep = 0; rep < o.reps; rep++) {
    // Each rep starts at another point, so that no point always follows the same one.
    for (const p of [...POINTS.slice(rep % POINTS.length), ...POINTS.slice(0, rep % POINTS.length)]) {
      const a = await resumeOurs(oursFile, work("casefile"), ourIds[p]);
      const b = await resumeTheirs(theirsFile, work("sqlite"), their.ids[p], their.n[p]);
      samples.ours.get(p)!.push(a.resumeMs);
      firstCommits.get(p)!.push(a.firstCommitMs);
      cpus.get(p)!.push(a.cpuMs);
      samples.theirs.get(p)!.push(b.resumeMs);
      opens.ours.push(a.openMs);
      opens.theirs.push(b.openMs);
    }
    o.log(`  resume rep ${rep + 1}/${o.reps}: ours ${POINTS.map((p) => samples.ours.get(p)!.at(-1)!.toFixed(1)).join(" / ")} ms`);
  }
  removeWithSideFiles(oursFile);
  removeWithSideFiles(theirsFile);

  const rows: Row[] = POINTS.map((p) => {
    const ours = median(samples.ours.get(p)!);
    const theirs = median(samples.theirs.get(p)!);
    return {
      id: `resume.${p}`,
      scenario: "3 resume",
      measure: `${o.checkpoints} checkpoints: resume from the ${p} to the next checkpoint`,
      unit: "ms",
      ours,
      oursLabel: p === "last" ? "SqlJsStore, same run continues" : "SqlJsStore, branch run",
      theirs,
      theirsLabel: "SqliteSaver as shipped",
      ratio: ours / theirs,
      target: `ours/theirs <= ${o.oursMaxRatio}`,
      met: ours / theirs <= o.oursMaxRatio,
      reps: o.reps,
      samples: { ours: samples.ours.get(p)!, theirs: samples.theirs.get(p)! },
      // The rest of the time is the two fsyncs (the resume's first commit, the new checkpoint) and waiting for a CPU.
      note: `ours: ${median(firstCommits.get(p)!).toFixed(1)} ms of it until the resume's first commit is durable; CPU ${median(cpus.get(p)!).toFixed(1)} ms`,
    };
  });
  // Where in the history a resume starts should not matter: the slowest of the three over the fastest.
  const spreadOf = (xs: number[]): number => Math.max(...xs) / Math.min(...xs);
  const spread = spreadOf(rows.map((r) => r.ours));
  rows.push({
    id: "resume.spread",
    scenario: "3 resume",
    measure: "slowest of first, middle and last / fastest",
    unit: "x",
    ours: spread,
    oursLabel: "SqlJsStore",
    theirs: spreadOf(rows.map((r) => r.theirs!)),
    theirsLabel: "SqliteSaver",
    target: "ours <= 1.5",
    met: spread <= 1.5,
    reps: o.reps,
  });
  rows.push({
    id: "resume.open",
    scenario: "3 resume",
    measure: `${o.checkpoints} checkpoints: open (before resume, not in it)`,
    unit: "ms",
    ours: median(opens.ours),
    oursLabel: "SqlJsStore.open (writer)",
    theirs: median(opens.theirs),
    theirsLabel: "SqliteSaver.fromConnString + setup",
    ratio: median(opens.ours) / median(opens.theirs),
    reps: opens.ours.length,
    samples: opens,
  });
  return rows;
}
