/**
 * Scenario 2, checkpoint growth: `load` puts facts of a given size into state once, then `tick`
 * changes one small counter every superstep. What is measured is the bytes on disk: the database
 * and every side file (our journal; SQLite's WAL and shared-memory index), right after the run
 * with the store still open, and again after closing (ours compacts the journal into the
 * database; SQLite checkpoints the WAL into the database).
 */
import path from "node:path";
import { SqlJsStore } from "../../../src/casefile";
import { Engine } from "../../../src/engine/engine";
import { growthGraph, growthWorkflow, invoiceLines } from "./graphs";
import { bytesOnDisk, msSince, now, removeWithSideFiles } from "./measure";
import type { Log, Row } from "./measure";
import { sqliteSaver } from "./overhead";

export interface GrowthOptions {
  /** Supersteps that change the counter, after the one that loads the facts. */
  supersteps: number;
  factsBytes: number;
  dir: string;
  log: Log;
  /** Target for ours after the run, in bytes (5 MB at full size). */
  oursMaxBytes: number;
}

interface Measured {
  afterRun: number;
  afterClose: number;
  msPerSuperstep: number;
}

async function ours(o: GrowthOptions, lines: ReturnType<typeof invoiceLines>): Promise<Measured> {
  const file = path.join(o.dir, "growth.casefile");
  removeWithSideFiles(file);
  const store = await SqlJsStore.open(file, { create: true });
  try {
    const t = now();
    const r = await new Engine(growthWorkflow(lines), store).run({ limit: o.supersteps });
    const ms = msSince(t);
    if (r.status !== "completed" || r.superstep !== o.supersteps + 1)
      throw new Error(`ours growth: ${r.status} at superstep ${r.superstep}`);
    const afterRun = bytesOnDisk(file);
    store.close();
    return { afterRun, afterClose: bytesOnDisk(file), msPerSuperstep: ms / (o.supersteps + 1) };
  } finally {
    store.close();
    removeWithSideFiles(file);
  }
}

async function theirs(o: GrowthOptions, lines: ReturnType<typeof invoiceLines>): Promise<Measured> {
  const file = path.join(o.dir, "growth.sqlite");
  removeWithSideFiles(file);
  const saver = sqliteSaver(file, false);
  try {
    const graph = growthGraph(saver, lines);
    const t = now();
    const r = await graph.invoke(
      { counter: 0, limit: o.supersteps },
      { configurable: { thread_id: "bench" }, recursionLimit: o.supersteps + 10, durability: "sync" },
    );
    const ms = msSince(t);
    if (r.counter !== o.supersteps) throw new Error(`theirs growth: counter ${String(r.counter)}, expected ${o.supersteps}`);
    const afterRun = bytesOnDisk(file);
    saver.db.close();
    return { afterRun, afterClose: bytesOnDisk(file), msPerSuperstep: ms / (o.supersteps + 1) };
  } finally {
    if (saver.db.open) saver.db.close();
    removeWithSideFiles(file);
  }
}

export async function growth(o: GrowthOptions): Promise<Row[]> {
  const lines = invoiceLines(o.factsBytes);
  const factsBytes = JSON.stringify(lines).length;
  // Bytes do not depend on the machine's noise: one run of each is the measurement.
  const a = await ours(o, lines);
  o.log(`  growth ours: ${a.afterRun} bytes after run, ${a.afterClose} after close, ${a.msPerSuperstep.toFixed(3)} ms/superstep`);
  const b = await theirs(o, lines);
  o.log(`  growth theirs: ${b.afterRun} bytes after run, ${b.afterClose} after close, ${b.msPerSuperstep.toFixed(3)} ms/superstep`);
  const label = `${o.supersteps + 1} supersteps, ${(factsBytes / 1024).toFixed(0)} KB facts`;
  const afterRunRatio = a.afterRun / b.afterRun;
  return [
    {
      id: "growth.afterRun",
      scenario: "2 checkpoint growth",
      measure: `${label}: bytes on disk after the run`,
      unit: "bytes",
      ours: a.afterRun,
      oursLabel: "case file + journal",
      theirs: b.afterRun,
      theirsLabel: "SqliteSaver db + WAL + shm",
      ratio: afterRunRatio,
      target: `ours < ${(o.oursMaxBytes / (1024 * 1024)).toFixed(0)} MB and ours/theirs <= 0.1`,
      met: a.afterRun < o.oursMaxBytes && afterRunRatio <= 0.1,
      reps: 1,
    },
    {
      id: "growth.afterClose",
      scenario: "2 checkpoint growth",
      measure: `${label}: bytes on disk after close`,
      unit: "bytes",
      ours: a.afterClose,
      oursLabel: "journal compacted into the case file",
      theirs: b.afterClose,
      theirsLabel: "WAL checkpointed into the db",
      ratio: a.afterClose / b.afterClose,
      reps: 1,
    },
    {
      id: "growth.time",
      scenario: "2 checkpoint growth",
      measure: `${label}: time, on disk`,
      unit: "ms/superstep",
      ours: a.msPerSuperstep,
      oursLabel: "SqlJsStore (fsync per superstep)",
      theirs: b.msPerSuperstep,
      theirsLabel: "SqliteSaver as shipped",
      ratio: a.msPerSuperstep / b.msPerSuperstep,
      reps: 1,
      note: "one run each; for information",
    },
  ];
}
