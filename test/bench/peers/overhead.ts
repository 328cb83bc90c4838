/**
 * Scenario 1, engine overhead: the ping-pong loop of graphs.ts for a number of supersteps with
 * trivial work, timed end to end and divided by the supersteps. Five variants run in every
 * repetition, in rotated order, so that the machine's noise falls on all of them alike:
 *   ours in memory (MemoryStore), ours durable (SqlJsStore: journal append + fsync per superstep),
 *   theirs with MemorySaver, with SqliteSaver as shipped, and with SqliteSaver at synchronous=FULL.
 * LangGraph runs with durability "sync" (the checkpoint is saved before the next step starts, as
 * ours is) and a recursionLimit above the superstep count.
 */
import path from "node:path";
import { MemorySaver } from "@langchain/langgraph";
import type { BaseCheckpointSaver } from "@langchain/langgraph";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import { MemoryStore, SqlJsStore } from "../../../src/casefile";
import { Engine } from "../../../src/engine/engine";
import { pingPongGraph, pingPongWorkflow } from "./graphs";
import { median, msSince, now, removeWithSideFiles, rotated } from "./measure";
import type { Log, Row } from "./measure";

export interface OverheadOptions {
  /** Supersteps per run (even: ping and pong alternate). */
  supersteps: number;
  reps: number;
  dir: string;
  log: Log;
}

type Variant = "ours-memory" | "ours-durable" | "theirs-memory" | "theirs-sqlite" | "theirs-sqlite-full";
const VARIANTS: readonly Variant[] = ["ours-memory", "ours-durable", "theirs-memory", "theirs-sqlite", "theirs-sqlite-full"];

/** WAL mode as SqliteSaver sets it; better-sqlite3 builds SQLite with WAL synchronous=NORMAL. */
export function sqliteSaver(file: string, full: boolean): SqliteSaver {
  const saver = SqliteSaver.fromConnString(file);
  (saver as unknown as { setup(): void }).setup();
  if (full) saver.db.pragma("synchronous = FULL");
  return saver;
}

/** Runs one variant once; returns milliseconds per superstep. */
async function runOnce(variant: Variant, supersteps: number, dir: string, tag: string): Promise<number> {
  const limit = supersteps / 2;
  if (variant === "ours-memory" || variant === "ours-durable") {
    const file = path.join(dir, `overhead-${tag}.casefile`);
    const store = variant === "ours-memory" ? new MemoryStore() : await SqlJsStore.open(file, { create: true });
    try {
      const engine = new Engine(pingPongWorkflow(), store);
      const t = now();
      const r = await engine.run({ limit });
      const ms = msSince(t);
      if (r.status !== "completed" || r.superstep !== supersteps)
        throw new Error(`ours ${variant}: ${r.status} at superstep ${r.superstep}, expected ${supersteps}`);
      return ms / supersteps;
    } finally {
      store.close();
      removeWithSideFiles(file);
    }
  }
  const file = path.join(dir, `overhead-${tag}.sqlite`);
  let saver: BaseCheckpointSaver;
  if (variant === "theirs-memory") saver = new MemorySaver();
  else saver = sqliteSaver(file, variant === "theirs-sqlite-full");
  try {
    const graph = pingPongGraph(saver);
    const t = now();
    const r = await graph.invoke(
      { a: 0, b: 0, limit },
      { configurable: { thread_id: "bench" }, recursionLimit: supersteps + 10, durability: "sync" },
    );
    const ms = msSince(t);
    if (r.b !== limit || r.a !== limit) throw new Error(`theirs ${variant}: ended at a=${String(r.a)} b=${String(r.b)}, expected ${limit}`);
    return ms / supersteps;
  } finally {
    if (saver instanceof SqliteSaver) saver.db.close();
    removeWithSideFiles(file);
  }
}

export async function overhead(o: OverheadOptions): Promise<Row[]> {
  // One short warm-up run of each, so that neither side is timed while its code is still cold.
  for (const v of VARIANTS) await runOnce(v, Math.min(200, o.supersteps), o.dir, `warm-${v}`);
  const samples = new Map<Variant, number[]>(VARIANTS.map((v) => [v, []]));
  for (let rep = 0; rep < o.reps; rep++) {
    for (const v of rotated(VARIANTS, rep)) {
      const ms = await runOnce(v, o.supersteps, o.dir, `${rep}-${v}`);
      samples.get(v)!.push(ms);
      o.log(`  overhead rep ${rep + 1}/${o.reps} ${v}: ${ms.toFixed(4)} ms/superstep`);
    }
  }
  const m = (v: Variant): number => median(samples.get(v)!);
  const row = (
    id: string,
    measure: string,
    ours: Variant,
    oursLabel: string,
    theirs: Variant,
    theirsLabel: string,
    target: number,
    note?: string,
  ): Row => {
    const ratio = m(ours) / m(theirs);
    return {
      id,
      scenario: "1 engine overhead",
      measure,
      unit: "ms/superstep",
      ours: m(ours),
      oursLabel,
      theirs: m(theirs),
      theirsLabel,
      ratio,
      target: target === 1 ? "ours/theirs < 1" : `ours/theirs <= ${target}`,
      met: target === 1 ? ratio < 1 : ratio <= target,
      reps: o.reps,
      samples: { ours: samples.get(ours)!, theirs: samples.get(theirs)! },
      note,
    };
  };
  return [
    row("overhead.memory", `${o.supersteps} supersteps, in memory`, "ours-memory", "MemoryStore", "theirs-memory", "MemorySaver", 0.1),
    row(
      "overhead.durable",
      `${o.supersteps} supersteps, on disk`,
      "ours-durable",
      "SqlJsStore (fsync per superstep)",
      "theirs-sqlite",
      "SqliteSaver as shipped (WAL, sync NORMAL: no fsync per step)",
      1,
    ),
    row(
      "overhead.durableFull",
      `${o.supersteps} supersteps, on disk, both fsync'd`,
      "ours-durable",
      "SqlJsStore (fsync per superstep)",
      "theirs-sqlite-full",
      "SqliteSaver, synchronous=FULL (fsync per commit)",
      1,
    ),
  ];
}
