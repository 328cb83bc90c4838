/**
 * Durable commit time per superstep, at a small and a large case file, for three ways of making a
 * superstep durable:
 *   ours          SqlJsStore: journal append + fsync, then apply in memory; compaction (export,
 *                 write, fsync, rename) amortised over the commits its policy lets pass between two
 *   export-each   sql.js writing the whole database out after every superstep (export + write + fsync)
 *   better-sqlite3  native SQLite, WAL, synchronous=FULL, same schema and rows
 *   bare append   the journal record ours writes for the superstep, appended with write + fsync
 *                 and nothing else: the floor a durable commit stands on (ours' commit / this <= 2)
 * Run: npx tsx test/bench/durability.bench.ts   (npm run bench:durability)
 * Prints medians and writes test/bench/results/durability.json. Times are for this machine only;
 * no test asserts them.
 */
import {
  closeSync,
  copyFileSync,
  fsyncSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { SqlJsStore } from "../../src/casefile";
import { encodeRecord } from "../../src/casefile/journal";
import { TABLES, prepareBatch } from "../../src/casefile/batch";
import type { PreparedBatch } from "../../src/casefile/batch";
import { SCHEMA_V1_SQL, WRITE_SQL, createSchema, writeParams } from "../../src/casefile/schema";
import type { WriteParam } from "../../src/casefile/schema";
import { loadSqlJs } from "../../src/casefile/sqlite";
import type { CommitBatch } from "../../src/engine/store";

// better-sqlite3 is a devDependency without type declarations here; the few calls used are typed locally.
interface BsStatement {
  run(...params: WriteParam[]): unknown;
}
interface BsDatabase {
  pragma(source: string): unknown;
  exec(sql: string): void;
  prepare(sql: string): BsStatement;
  transaction<A extends unknown[]>(fn: (...args: A) => void): (...args: A) => void;
  close(): void;
}
// eslint-disable-next-line @typescript-eslint/no-require-imports
const Database = require("better-sqlite3") as new (file: string) => BsDatabase;

const MB = 1024 * 1024;
const SIZES = [1 * MB, 100 * MB];
/**
 * Commits timed per variant and size, in ROUNDS interleaved rounds: the four journal/WAL
 * contenders take turns, so a burst of load from elsewhere on the machine hits them alike.
 * export-each at 100 MB costs most of a second a commit, hence fewer reps.
 */
const ROUNDS = 60;
const PER_ROUND = 10;
const EXPORT_EACH_REPS = { small: 40, large: 8 };
const COMPACTION_REPS = 3;
const DEFAULT_COMPACT_AT = 8 * MB;

// ---- one superstep's rows: a checkpoint, the changed values, steps, an agent call, a verdict, events

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

function superstep(i: number): CommitBatch {
  const run = "bench";
  const at = new Date(1_700_000_000_000 + i * 1000).toISOString();
  const keys: Record<string, { version: number; run: string }> = {};
  for (let k = 0; k < 20; k++) keys[`key${k}`] = { version: Math.max(1, i - k), run };
  return {
    checkpoints: [
      {
        v: 1,
        id: `c${i}`,
        runId: run,
        superstep: i,
        parentId: i > 0 ? `c${i - 1}` : undefined,
        createdAt: at,
        workflow: { name: "invoice", version: 1, graphHash: "sha256:bench", executors: ["load", "decide", "commit", "pay"] },
        keys,
        pending: [
          { to: "decide", from: "load", payload: { invoice: `INV-${i}` } },
          { to: "commit", from: "decide", payload: { proposal: i } },
        ],
        fanIn: {},
        local: { load: { cursor: i } },
        waiting: [],
      },
    ],
    values: [0, 1, 2].map((k) => ({ run, key: `key${(i + k) % 20}`, version: i * 3 + k, value: { note: text(1200), n: i } })),
    steps: ["load", "decide"].map((executor) => ({
      id: `s${i}-${executor}`,
      runId: run,
      superstep: i,
      executor,
      kind: executor === "load" ? ("loader" as const) : ("agent" as const),
      status: "ok" as const,
      startedAt: at,
      endedAt: at,
      durationMs: 5,
      writes: ["key1"],
      sent: 1,
    })),
    agentCalls: [
      {
        id: `a${i}`,
        runId: run,
        superstep: i,
        executor: "decide",
        request: {
          messages: [
            { role: "system", content: text(800) },
            { role: "user", content: text(1700) },
          ],
          model: "m",
          params: {},
          responseSchema: {},
        },
        hash: `sha256:${i}`,
        provider: "scripted",
        mode: "scripted",
        proposal: { action: "pay", reason: text(200), facts: ["invoice"] },
        at,
        durationMs: 40,
      },
    ],
    verdicts: [
      {
        id: `v${i}`,
        runId: run,
        superstep: i,
        executor: "commit",
        agentCallId: `a${i}`,
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

let eventSeq = 1;
function prepared(i: number): PreparedBatch {
  const b = prepareBatch(superstep(i), { exists: () => false, nextEventSeq: eventSeq });
  eventSeq += b.events.length;
  return b;
}

function writeRows(run: (sql: string, params: WriteParam[]) => void, b: PreparedBatch): void {
  for (const table of TABLES) for (const row of b[table] as object[]) run(WRITE_SQL[table], writeParams(table, row));
}

const BYTES_PER_SUPERSTEP = Buffer.byteLength(JSON.stringify(prepareBatch(superstep(1), { exists: () => false, nextEventSeq: 1 })));

// ---- building the case files

/** A case file of about `target` bytes, written directly (fast); returns the next superstep number. */
async function prefill(file: string, bs3File: string, target: number): Promise<number> {
  const SQL = await loadSqlJs();
  const db = new SQL.Database();
  createSchema(db, { createdAt: new Date().toISOString() });
  const bs3 = new Database(bs3File);
  bs3.pragma("journal_mode = WAL");
  bs3.pragma("synchronous = FULL");
  for (const sql of SCHEMA_V1_SQL) bs3.exec(sql);
  const bsStmts = new Map<string, BsStatement>();
  const bsRun = (sql: string, p: WriteParam[]): void => {
    let s = bsStmts.get(sql);
    if (!s) bsStmts.set(sql, (s = bs3.prepare(sql)));
    s.run(...p);
  };
  const sjStmts = new Map<string, ReturnType<typeof db.prepare>>();
  const sjRun = (sql: string, p: WriteParam[]): void => {
    let s = sjStmts.get(sql);
    if (!s) sjStmts.set(sql, (s = db.prepare(sql)));
    s.run(p);
  };
  const pragma = (name: string): number => db.exec(`PRAGMA ${name}`)[0]!.values[0]![0] as number;
  const dbBytes = (): number => pragma("page_count") * pragma("page_size");
  let n = 0;
  while (dbBytes() < target) {
    // Chunks shrink as the target nears, so the file lands just above it.
    const chunk = Math.max(5, Math.min(500, Math.floor((target - dbBytes()) / (2 * BYTES_PER_SUPERSTEP))));
    const batches = Array.from({ length: chunk }, (_, k) => prepared(n + k));
    n += chunk;
    db.run("BEGIN");
    for (const b of batches) writeRows(sjRun, b);
    db.run("COMMIT");
    bs3.transaction(() => batches.forEach((b) => writeRows(bsRun, b)))();
  }
  sjStmts.forEach((s) => s.free());
  writeFileSync(file, db.export());
  db.close();
  bs3.pragma("wal_checkpoint(TRUNCATE)");
  bs3.close();
  return n;
}

// ---- measuring

function ms(start: bigint): number {
  return Number(process.hrtime.bigint() - start) / 1e6;
}
function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}
function mean(xs: number[]): number {
  return xs.reduce((a, b) => a + b, 0) / xs.length;
}

interface Row {
  variant: string;
  sizeLabel: string;
  fileBytes: number;
  reps: number;
  medianMs: number;
  meanMs: number;
  /** ours only: the commit alone, without its share of compaction. */
  commitMedianMs?: number;
  /** The contenders timed in rounds: mean CPU per commit, µs. */
  cpuMeanUs?: number;
  /** ours only: opening the file (read, integrity check, journal replay). */
  openMs?: number;
  note?: string;
}

/** One way of committing supersteps durably, open on one prefilled file. */
interface Contender {
  variant: string;
  sizeLabel: string;
  fileBytes: number;
  /** Builds the next superstep's rows (not timed) and returns the timed durable commit. */
  next(): () => void;
  times: number[];
  /** CPU (user + system, this process) spent in the timed commits: robust where wall times are not, on a busy machine. */
  cpuUs: number;
  finish(): Row;
}

async function ours(file: string, first: number, label: string): Promise<Contender> {
  const fileBytes = statSync(file).size;
  const opening = process.hrtime.bigint();
  // A threshold no commit here reaches, so that commits and compactions are timed apart.
  const store = await SqlJsStore.open(file, { compactAtBytes: 1 << 30 });
  const openMs = ms(opening);
  let i = first;
  const times: number[] = [];
  const variant = "ours (journal+fsync, compaction amortised)";
  return {
    variant,
    sizeLabel: label,
    fileBytes,
    times,
    cpuUs: 0,
    next() {
      const b = superstep(i++);
      return () => store.commit(b);
    },
    finish() {
      const compactions: number[] = [];
      for (let r = 0; r < COMPACTION_REPS; r++) {
        store.commit(superstep(i++));
        const t = process.hrtime.bigint();
        store.compact();
        compactions.push(ms(t));
      }
      const endBytes = statSync(file).size;
      store.close();
      // The default policy compacts once the journal exceeds max(8 MB, half the database).
      const commitsPerCompaction = Math.max(DEFAULT_COMPACT_AT, endBytes / 2) / BYTES_PER_SUPERSTEP;
      const amortised = median(compactions) / commitsPerCompaction;
      return {
        variant,
        sizeLabel: label,
        fileBytes,
        reps: times.length,
        medianMs: median(times) + amortised,
        meanMs: mean(times) + amortised,
        commitMedianMs: median(times),
        openMs,
        note:
          `open ${openMs.toFixed(0)} ms; commit median ${median(times).toFixed(3)} ms + compaction ` +
          `${median(compactions).toFixed(0)} ms / ${commitsPerCompaction.toFixed(0)} commits = ${amortised.toFixed(3)} ms`,
      };
    },
  };
}

/**
 * The floor under any durable commit: the bytes ours journals for a superstep (its record, built
 * outside the timing) appended to a file with one write and one fsync, nothing else.
 */
function appendFsync(file: string, first: number, label: string): Contender {
  const fd = openSync(file, "a");
  let i = first;
  const times: number[] = [];
  const variant = "bare append+fsync of the same bytes";
  return {
    variant,
    sizeLabel: label,
    fileBytes: 0,
    times,
    cpuUs: 0,
    next() {
      const record = encodeRecord(i, JSON.stringify(prepared(i)));
      i++;
      return () => {
        let written = 0;
        while (written < record.length) written += writeSync(fd, record, written, record.length - written);
        fsyncSync(fd);
      };
    },
    finish() {
      closeSync(fd);
      return { variant, sizeLabel: label, fileBytes: 0, reps: times.length, medianMs: median(times), meanMs: mean(times) };
    },
  };
}

function betterSqlite3(file: string, first: number, label: string): Contender {
  const fileBytes = statSync(file).size;
  const db = new Database(file);
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = FULL");
  const stmts = new Map<string, BsStatement>();
  const run = (sql: string, p: WriteParam[]): void => {
    let s = stmts.get(sql);
    if (!s) stmts.set(sql, (s = db.prepare(sql)));
    s.run(...p);
  };
  const commit = db.transaction((b: PreparedBatch) => writeRows(run, b));
  let i = first;
  const times: number[] = [];
  const variant = "better-sqlite3 (WAL, synchronous=FULL)";
  return {
    variant,
    sizeLabel: label,
    fileBytes,
    times,
    cpuUs: 0,
    next() {
      // Validated and copied outside the timing: better-sqlite3 is not charged for our checks.
      const b = prepared(i++);
      return () => commit(b);
    },
    finish() {
      db.close();
      return { variant, sizeLabel: label, fileBytes, reps: times.length, medianMs: median(times), meanMs: mean(times) };
    },
  };
}

async function measureExportEach(file: string, next: number, label: string, reps: number): Promise<Row> {
  const SQL = await loadSqlJs();
  const fileBytes = statSync(file).size;
  const db = new SQL.Database(readFileSync(file));
  const stmts = new Map<string, ReturnType<typeof db.prepare>>();
  const run = (sql: string, p: WriteParam[]): void => {
    let s = stmts.get(sql);
    if (!s) stmts.set(sql, (s = db.prepare(sql)));
    s.run(p);
  };
  const out = file + ".export";
  const commit = (b: PreparedBatch): void => {
    db.run("BEGIN");
    writeRows(run, b);
    db.run("COMMIT");
    const bytes = db.export();
    const fd = openSync(out + ".tmp", "w");
    let written = 0;
    while (written < bytes.length) written += writeSync(fd, bytes, written, bytes.length - written);
    fsyncSync(fd);
    closeSync(fd);
    renameSync(out + ".tmp", out);
  };
  commit(prepared(next++)); // warm-up
  const times: number[] = [];
  for (let r = 0; r < reps; r++) {
    const b = prepared(next++);
    const t = process.hrtime.bigint();
    commit(b);
    times.push(ms(t));
  }
  stmts.forEach((s) => s.free());
  db.close();
  rmSync(out, { force: true });
  return { variant: "sql.js export on every commit", sizeLabel: label, fileBytes, reps, medianMs: median(times), meanMs: mean(times) };
}

async function main(): Promise<void> {
  const started = Date.now();
  const dir = mkdtempSync(path.join(os.tmpdir(), "casefile-bench-"));
  const rows: Row[] = [];
  try {
    const files: { label: string; ours: string; bs3: string; n: number }[] = [];
    for (const size of SIZES) {
      const label = `${size / MB} MB`;
      const f = { label, ours: path.join(dir, `ours-${size / MB}MB.casefile`), bs3: path.join(dir, `bs3-${size / MB}MB.sqlite`), n: 0 };
      const t = Date.now();
      eventSeq = 1;
      f.n = await prefill(f.ours, f.bs3, size);
      // export-each starts from the same prefilled file, not from the one ours will have grown.
      copyFileSync(f.ours, f.ours + ".orig");
      console.error(
        `prefilled ${label}: ${f.n} supersteps, ${(statSync(f.ours).size / MB).toFixed(1)} MB, in ${((Date.now() - t) / 1000).toFixed(1)} s`,
      );
      files.push(f);
    }
    // Event seqs for better-sqlite3 rows continue far above the prefilled ones.
    eventSeq = 2_000_000_000;
    const contenders: Contender[] = [];
    for (const f of files) {
      contenders.push(await ours(f.ours, f.n, f.label));
      contenders.push(betterSqlite3(f.bs3, f.n, f.label));
      contenders.push(appendFsync(path.join(dir, `append-${f.label.replace(" ", "")}.bin`), f.n, f.label));
    }
    for (const c of contenders) for (let w = 0; w < 10; w++) c.next()(); // warm-up
    for (let round = 0; round < ROUNDS; round++) {
      // Short turns in a rotating order, so no contender always follows the same one.
      const order = contenders.map((_, k) => contenders[(k + round) % contenders.length]!);
      for (const c of order) {
        for (let r = 0; r < PER_ROUND; r++) {
          const commit = c.next();
          const cpu = process.cpuUsage();
          const t = process.hrtime.bigint();
          commit();
          c.times.push(ms(t));
          const used = process.cpuUsage(cpu);
          c.cpuUs += used.user + used.system;
        }
      }
    }
    for (const c of contenders) rows.push({ ...c.finish(), cpuMeanUs: c.cpuUs / c.times.length });
    eventSeq = 3_000_000_000;
    for (const f of files) {
      const reps = f.label === "1 MB" ? EXPORT_EACH_REPS.small : EXPORT_EACH_REPS.large;
      rows.push(await measureExportEach(f.ours + ".orig", f.n + 100_000, f.label, reps));
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  report(rows, started);
}

function report(rows: Row[], started: number): void {
  const order = ["ours", "bare append", "sql.js export", "better-sqlite3"];
  rows.sort(
    (a, b) =>
      a.sizeLabel.localeCompare(b.sizeLabel, undefined, { numeric: true }) ||
      order.findIndex((o) => a.variant.startsWith(o)) - order.findIndex((o) => b.variant.startsWith(o)),
  );
  const find = (variant: string, label: string): Row => rows.find((r) => r.variant.startsWith(variant) && r.sizeLabel === label)!;
  const ours1 = find("ours", "1 MB");
  const ours100 = find("ours", "100 MB");
  const better100 = find("better-sqlite3", "100 MB");
  const exp100 = find("sql.js export", "100 MB");
  const append1 = find("bare append", "1 MB");
  const append100 = find("bare append", "100 MB");
  const ratios = {
    oursLargeOverSmall: ours100.medianMs / ours1.medianMs,
    oursOverBetterSqlite3Large: ours100.medianMs / better100.medianMs,
    exportEachOverOursLarge: exp100.medianMs / ours100.medianMs,
    // The commit alone (compaction is a separate, amortised cost) over the bare append+fsync of its bytes.
    oursCommitOverAppendFsyncSmall: ours1.commitMedianMs! / append1.medianMs,
    oursCommitOverAppendFsyncLarge: ours100.commitMedianMs! / append100.medianMs,
    oursOverAppendFsyncLarge: ours100.medianMs / append100.medianMs,
    // CPU per commit beside what the bare append+fsync of the same bytes spends: what ours adds to the floor.
    oursCpuBesideAppendUsSmall: ours1.cpuMeanUs! - append1.cpuMeanUs!,
    oursCpuBesideAppendUsLarge: ours100.cpuMeanUs! - append100.cpuMeanUs!,
  };

  const pad = (s: string, n: number): string => s.padEnd(n);
  console.log(
    `\nDurable commit per superstep (~${(BYTES_PER_SUPERSTEP / 1024).toFixed(1)} KB of rows); ${os.cpus().length} CPUs, ${os.platform()}, load ${os.loadavg()[0]!.toFixed(1)}`,
  );
  console.log(pad("variant", 46) + pad("file at start", 15) + pad("reps", 6) + pad("median ms", 12) + "mean ms");
  for (const r of rows) {
    console.log(
      pad(r.variant, 46) +
        pad(`${(r.fileBytes / MB).toFixed(1)} MB`, 15) +
        pad(String(r.reps), 6) +
        pad(r.medianMs.toFixed(3), 12) +
        r.meanMs.toFixed(3),
    );
  }
  for (const r of rows.filter((x) => x.note)) console.log(`  ours @ ${r.sizeLabel}: ${r.note}`);
  console.log(`  ours and better-sqlite3: ${ROUNDS} interleaved rounds of ${PER_ROUND} commits each`);
  console.log(
    `  export-each: ${EXPORT_EACH_REPS.small} reps at 1 MB, only ${EXPORT_EACH_REPS.large} at 100 MB (each rewrites the whole file)`,
  );
  console.log(`\nours@100MB / ours@1MB              = ${ratios.oursLargeOverSmall.toFixed(2)}  (target <= 1.5)`);
  console.log(`ours@100MB / better-sqlite3@100MB = ${ratios.oursOverBetterSqlite3Large.toFixed(2)}  (target <= 2)`);
  console.log(
    `ours commit / bare append+fsync    = ${ratios.oursCommitOverAppendFsyncSmall.toFixed(2)} at 1 MB, ${ratios.oursCommitOverAppendFsyncLarge.toFixed(2)} at 100 MB  (target <= 2; with compaction amortised ${ratios.oursOverAppendFsyncLarge.toFixed(2)} at 100 MB)`,
  );
  console.log(`export-each@100MB / ours@100MB    = ${ratios.exportEachOverOursLarge.toFixed(0)}x`);
  console.log(
    `CPU per commit (mean, µs)          = ours ${ours1.cpuMeanUs!.toFixed(0)} / ${ours100.cpuMeanUs!.toFixed(0)}, bare append+fsync ${append1.cpuMeanUs!.toFixed(0)} / ${append100.cpuMeanUs!.toFixed(0)} at 1 / 100 MB: ours adds ${ratios.oursCpuBesideAppendUsSmall.toFixed(0)} / ${ratios.oursCpuBesideAppendUsLarge.toFixed(0)}`,
  );

  const resultsDir = path.join(__dirname, "results");
  mkdirSync(resultsDir, { recursive: true });
  const result = {
    at: new Date().toISOString(),
    machine: {
      cpus: os.cpus().length,
      cpuModel: os.cpus()[0]?.model,
      platform: os.platform(),
      node: process.version,
      loadavg: os.loadavg(),
    },
    bytesPerSuperstep: BYTES_PER_SUPERSTEP,
    rows,
    ratios,
    targets: { oursLargeOverSmall: 1.5, oursOverBetterSqlite3Large: 2, oursCommitOverAppendFsyncLarge: 2 },
    durationS: (Date.now() - started) / 1000,
  };
  writeFileSync(path.join(resultsDir, "durability.json"), JSON.stringify(result, null, 2) + "\n");
  console.log(`\nwrote test/bench/results/durability.json (${result.durationS.toFixed(0)} s)`);
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
