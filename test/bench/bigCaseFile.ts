import { writeFileSync } from "node:fs";
import { TABLES, prepareBatch } from "../../src/casefile/batch";
import { WRITE_SQL, createSchema, writeParams } from "../../src/casefile/schema";
import { loadSqlJs } from "../../src/casefile/sqlite";
import type { CommitBatch } from "../../src/engine/store";

/**
 * Case files of a given size for the benchmarks, shaped like an invoice workflow's run: each
 * superstep a loader and an agent step (whose model call carries a ~2.5 KB context), a commit
 * step's verdict, three changed state values, a checkpoint and its events (~11 KB a superstep in the file).
 * Written straight into a sql.js database and exported once (writing them through the store would
 * fsync once per superstep). A second run, forked from the first, gives the Context tab's picker
 * "the same step in another branch" to offer.
 */

export const RUN = "bench";
export const BRANCH = "bench-branch";
const MB = 1024 * 1024;

let seed = 42;
function text(n: number): string {
  const words = ["invoice", "supplier", "amount", "EUR", "matches", "purchase", "order", "line", "net", "due", "approve", "rule"];
  const out: string[] = [];
  let len = 0;
  while (len < n) {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    const w = words[seed % words.length]! + (seed % 97);
    out.push(w);
    len += w.length + 1;
  }
  return out.join(" ").slice(0, n);
}

function runs(supersteps: number): CommitBatch {
  const at = "2026-11-30T10:00:00.000Z";
  const workflow = { name: "invoice", version: 1, graphHash: "sha256:bench" };
  return {
    runs: [
      { id: RUN, workflow, status: "completed", createdAt: at, updatedAt: at },
      {
        id: BRANCH,
        workflow,
        status: "completed",
        createdAt: at,
        updatedAt: "2026-11-30T09:00:00.000Z",
        parentRunId: RUN,
        parentCheckpointId: `${RUN}-c${Math.floor(supersteps / 2)}`,
      },
    ],
  };
}

/** One superstep of `run`, as the engine commits it. */
export function benchSuperstep(run: string, i: number): CommitBatch {
  const at = new Date(1_700_000_000_000 + i * 1000).toISOString();
  const keys: Record<string, { version: number; run: string }> = {};
  // Each key's latest version: superstep i writes versions 3i..3i+2, version v to key v % 20.
  const top = i * 3 + 2;
  for (let k = 0; k < 20; k++) {
    const version = top - ((((top - k) % 20) + 20) % 20);
    if (version >= 0) keys[`key${k}`] = { version, run };
  }
  return {
    checkpoints: [
      {
        v: 1,
        id: `${run}-c${i}`,
        runId: run,
        superstep: i,
        createdAt: at,
        workflow: { name: "invoice", version: 1, graphHash: "sha256:bench", executors: ["load", "decide", "commit"] },
        keys,
        pending: [{ to: "decide", from: "load", payload: { invoice: `INV-${i}` } }],
        fanIn: {},
        local: { load: { cursor: i } },
        waiting: [],
      },
    ],
    values: [0, 1, 2].map((k) => ({ run, key: `key${(i * 3 + k) % 20}`, version: i * 3 + k, value: { note: text(1200), n: i } })),
    steps: (["load", "decide", "commit"] as const).map((executor) => ({
      id: `${run}-s${i}-${executor}`,
      runId: run,
      superstep: i,
      executor,
      kind: executor === "load" ? ("loader" as const) : executor === "decide" ? ("agent" as const) : ("commit" as const),
      status: "ok" as const,
      startedAt: at,
      endedAt: at,
      durationMs: 5,
      writes: [`key${(i * 3) % 20}`],
      sent: 1,
    })),
    agentCalls: [
      {
        id: `${run}-a${i}`,
        runId: run,
        superstep: i,
        executor: "decide",
        request: {
          messages: [
            { role: "system", content: text(800) },
            { role: "user", content: text(1700) },
          ],
          model: "gpt-4o-mini",
          params: {},
          responseSchema: {},
        },
        hash: `sha256:${run}-${i}`,
        provider: "scripted",
        mode: "scripted",
        proposal: { action: "pay", reason: text(200), facts: ["invoice"] },
        tokens: { count: 600, tokenizer: "o200k_base" },
        at,
        durationMs: 40,
      },
    ],
    verdicts: [
      {
        id: `${run}-v${i}`,
        runId: run,
        superstep: i,
        executor: "commit",
        agentCallId: `${run}-a${i}`,
        rules: [{ name: "amountMatches", ok: true, message: text(80) }],
        verdict: "accepted",
        reason: "all rules passed",
        diff: { decision: { before: null, after: "pay" } },
        at,
      },
    ],
    events: ["superstep_started", "step_completed", "step_completed", "checkpoint"].map((type) => ({
      runId: run,
      superstep: i,
      type: type as "checkpoint",
      at,
      data: { i },
    })),
  };
}

/**
 * Writes a case file of at least `targetBytes` at `file`: the main run gets supersteps until the
 * file is that big, its branch 20. Returns the main run's superstep count.
 */
export async function writeBigCaseFile(file: string, targetBytes: number): Promise<number> {
  const SQL = await loadSqlJs();
  const db = new SQL.Database();
  createSchema(db, { createdAt: "2026-11-30T10:00:00.000Z" });
  const stmts = new Map<string, ReturnType<typeof db.prepare>>();
  let nextEventSeq = 1;
  const write = (batch: CommitBatch): void => {
    const b = prepareBatch(batch, { exists: () => false, nextEventSeq });
    nextEventSeq += b.events.length;
    for (const table of TABLES) {
      for (const row of b[table] as object[]) {
        const sql = WRITE_SQL[table];
        let s = stmts.get(sql);
        if (!s) stmts.set(sql, (s = db.prepare(sql)));
        s.run(writeParams(table, row));
      }
    }
  };
  const pragma = (name: string): number => db.exec(`PRAGMA ${name}`)[0]!.values[0]![0] as number;
  const bytes = (): number => pragma("page_count") * pragma("page_size");
  const perSuperstep = 11.5 * 1024; // as laid out in SQLite pages
  const n = Math.max(30, Math.ceil(targetBytes / perSuperstep));
  db.run("BEGIN");
  write(runs(n));
  for (let i = 0; i < 20; i++) write(benchSuperstep(BRANCH, i));
  let i = 0;
  for (; i < n || bytes() < targetBytes; i++) {
    write(benchSuperstep(RUN, i));
    if (i % 500 === 499) {
      db.run("COMMIT");
      db.run("BEGIN");
    }
  }
  db.run("COMMIT");
  stmts.forEach((s) => s.free());
  writeFileSync(file, db.export());
  db.close();
  return i;
}

export { MB };
