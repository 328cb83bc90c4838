/**
 * `npm run bench:postgres`: the Postgres store, on a cluster of its own made for this run with
 * Postgres's durable defaults (fsync and synchronous_commit on; the tests' clusters run with fsync
 * off). Three figures, each printed as a ratio measured side by side in this run:
 *
 * 1. Scaling: supplier-onboarding cases per second with 1, 2 and 4 `casefile worker` processes
 *    on one store (the real CLI; the ERP stand-in on loopback, a process of its own), from the
 *    first case started to the last one ended, as the workers' own events say. Target: 4 workers
 *    at least 3x one. Measured twice: with the scripted model answering at once (the figure the
 *    target is about: every case all CPU and round trips), then answering after a hosted model's
 *    latency (`--latency-ms`, default 300 ms a call: the scripted provider's latencyMs), where a
 *    worker mostly waits, which is why a team runs several workers per core. Beside each run:
 *    CPU seconds by process (workers, Postgres, the ERP stand-in) and per case, and the load
 *    average. A machine with fewer cores than workers cannot show the first (cores printed beside).
 * 2. Durable commit per superstep on the growth graph (100 KB of facts loaded once, a counter
 *    changed every superstep; test/bench/peers/graphs.ts): ours, LangGraph's PostgresSaver
 *    (@langchain/langgraph-checkpoint-postgres) on the same server when it is installed, and the
 *    floor: one INSERT transaction per superstep of a row as large as our commit's.
 * 3. Disk per 1,000 supersteps of that graph: the growth of the tables (with indexes and TOAST)
 *    of our schema against PostgresSaver's.
 *
 * Run: npm run bench:postgres [-- --cases N --supersteps N --latency-ms N]
 * Writes test/bench/results/postgres.json.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { startErp } from "../../examples/erp/server";
import { applicationId, supplierSeed } from "../../examples/supplier/erpSeed";
import { Engine } from "../../src/engine/engine";
import type { EventRecord } from "../../src/engine/records";
import { PgQueue, PostgresStore } from "../../src/pgstore/index";
import { SyncPgClient } from "../../src/pgstore/syncClient";
import { startPgCluster, type PgCluster } from "../helpers/pgCluster";
import { growthGraph, growthWorkflow, invoiceLines } from "./peers/graphs";
import { fmtBytes, msSince, now } from "./peers/measure";

const root = path.resolve(__dirname, "../..");
const cli = path.join(root, "bin", "casefile.js");
const supplier = path.join(root, "examples", "supplier", "workflow.ts");
const erpServer = path.join(root, "examples", "erp", "server.ts");

function arg(name: string, dflt: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
}

let dbCount = 0;
function database(c: PgCluster, prefix: string): { url: string; name: string } {
  const name = `${prefix}_${++dbCount}`;
  c.psql(`CREATE DATABASE ${name}`);
  return { url: c.urlFor(name), name };
}

/** Bytes of every table of `schema` in database `db`, with its indexes and TOAST. */
function schemaBytes(c: PgCluster, db: string, schema: string): number {
  return Number(
    c.psql(
      "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace " +
        `WHERE n.nspname = '${schema}' AND c.relkind IN ('r', 'p', 'm')`,
      db,
    ),
  );
}

// ---- 1. scaling

/**
 * CPU seconds, from /proc (Linux): this process's children once reaped (the workers), the
 * postmaster's with its reaped backends (Postgres), the ERP stand-in's process, this one's, and
 * every core's busy time (the machine, whoever ran). Beside cases/s they say whether a run was
 * bound by CPU, and by whose.
 */
interface CpuClock {
  workers: number;
  postgres: number;
  erp: number;
  bench: number;
  machine: number;
  at: number;
}

const TICK = 100; // USER_HZ
function procTimes(file: string, fields: number[]): number {
  try {
    const f = readFileSync(file, "utf8").split(") ")[1]!.split(" ");
    return fields.reduce((sum, i) => sum + Number(f[i - 3]), 0) / TICK;
  } catch {
    return Number.NaN;
  }
}
function cpuClock(c: PgCluster, erpPid: number): CpuClock {
  let machine = Number.NaN;
  try {
    const t = readFileSync("/proc/stat", "utf8").split("\n")[0]!.split(/\s+/).slice(1).map(Number);
    machine = (t[0]! + t[1]! + t[2]! + t[5]! + t[6]!) / TICK; // user nice system irq softirq
  } catch {
    // Not Linux: only cases/s is printed.
  }
  const me = process.cpuUsage();
  return {
    workers: procTimes("/proc/self/stat", [16, 17]),
    postgres: procTimes(`/proc/${c.pid()}/stat`, [14, 15, 16, 17]),
    erp: procTimes(`/proc/${erpPid}/stat`, [14, 15]),
    bench: (me.user + me.system) / 1e6,
    machine,
    at: Date.now(),
  };
}
type CpuSpent = Omit<CpuClock, "at"> & { wall: number; load: number };
function cpuSince(c: PgCluster, erpPid: number, t0: CpuClock): CpuSpent {
  const t = cpuClock(c, erpPid);
  return {
    workers: t.workers - t0.workers,
    postgres: t.postgres - t0.postgres,
    erp: t.erp - t0.erp,
    bench: t.bench - t0.bench,
    machine: t.machine - t0.machine,
    wall: (t.at - t0.at) / 1000,
    load: os.loadavg()[0]!,
  };
}

/**
 * The ERP stand-in as a process of its own (examples/erp/server.ts under tsx), on the data the
 * seed made, so its CPU is counted apart from the workers' and this process's.
 */
async function startErpProcess(dir: string, cases: number): Promise<{ url: string; child: ChildProcess; close(): Promise<void> }> {
  const dataDir = path.join(dir, "erp");
  // The data file, seeded; the server started below reads it.
  await (await startErp({ dataDir, seed: supplierSeed(cases) })).close();
  const child = spawn(process.execPath, ["--import", "tsx", erpServer, "--port", "0", "--data", dataDir], {
    cwd: root,
    stdio: ["ignore", "pipe", "inherit"],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (d: Buffer) => {
      out += d.toString("utf8");
      const m = /ERP stand-in on (http:\S+)/.exec(out);
      if (m) resolve(m[1]!);
    });
    child.on("exit", (code) => reject(new Error(`the ERP stand-in exited ${code} before listening`)));
  });
  return {
    url,
    child,
    close: () =>
      new Promise<void>((resolve) => {
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
      }),
  };
}

/**
 * Waits until the workers' Postgres backends (every one on `db` but this process's queue) have
 * exited and been reaped: their CPU reaches the postmaster's count only then, a moment after
 * the workers themselves exit.
 */
async function backendsGone(c: PgCluster, db: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const n = Number(c.psql(`SELECT count(*) FROM pg_stat_activity WHERE datname = '${db}' AND pid <> pg_backend_pid()`));
    // The queue's own connection stays open until the run's end.
    if (n <= 1) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  // The postmaster reaps an exited backend on SIGCHLD: a moment more.
  await new Promise((r) => setTimeout(r, 200));
}

/** `latencyMs`: the scripted model answers each call that long after it (0: at once). */
async function casesPerSecond(c: PgCluster, workers: number, cases: number, latencyMs: number): Promise<{ rate: number; cpu: CpuSpent }> {
  const { url, name } = database(c, `scale${workers}_${latencyMs}`);
  const dir = mkdtempSync(path.join(os.tmpdir(), "casefile-pgbench-"));
  const erp = await startErpProcess(dir, cases);
  const queue = new PgQueue(url);
  const provider = latencyMs > 0 ? ["--provider", JSON.stringify({ kind: "scripted", latencyMs })] : [];
  try {
    for (let i = 0; i < cases; i++) queue.enqueue(applicationId(i), supplier, { applicationId: applicationId(i) });
    const t0 = cpuClock(c, erp.child.pid!);
    let first: bigint | undefined;
    let last: bigint | undefined;
    let ended = 0;
    const run = (): Promise<void> =>
      new Promise((resolve, reject) => {
        const child = spawn(process.execPath, [cli, "worker", supplier, "--store", url, "--idle-exit-ms", "1000", ...provider], {
          env: { ...process.env, ERP_URL: erp.url, CASEFILE_EVENTS: "jsonl" },
          stdio: ["ignore", "pipe", "pipe"],
        });
        let buf = "";
        let err = "";
        child.stdout.on("data", (d: Buffer) => {
          buf += d.toString("utf8");
          const lines = buf.split("\n");
          buf = lines.pop()!;
          for (const l of lines) {
            if (!l.startsWith("{")) continue;
            const e = JSON.parse(l) as EventRecord;
            if (e.type === "run_started") first ??= now();
            if (e.type === "run_completed" || e.type === "run_failed") {
              ended++;
              last = now();
            }
          }
        });
        child.stderr.on("data", (d: Buffer) => (err += d.toString("utf8")));
        child.on("close", (code) => (code === 0 ? resolve() : reject(new Error(`worker exited ${code}: ${err.slice(-500)}`))));
      });
    await Promise.all(Array.from({ length: workers }, run));
    if (ended !== cases || first === undefined || last === undefined) throw new Error(`${ended} of ${cases} cases ended`);
    await backendsGone(c, name);
    return { rate: cases / (Number(last - first) / 1e9), cpu: cpuSince(c, erp.child.pid!, t0) };
  } finally {
    queue.close();
    await erp.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

// ---- 2 and 3. durable commit and growth on the growth graph

interface Growth {
  msPerSuperstep: number;
  bytesPer1000: number;
}

async function oursGrowth(c: PgCluster, supersteps: number, lines: ReturnType<typeof invoiceLines>): Promise<Growth> {
  const { url, name } = database(c, "ours");
  // The schema is made (and its empty size taken) before the run.
  new PgQueue(url).close();
  const before = schemaBytes(c, name, "casefile");
  const store = await PostgresStore.open(url, { caseId: "bench", create: true });
  try {
    const t = now();
    const r = await new Engine(growthWorkflow(lines), store).run({ limit: supersteps });
    const ms = msSince(t);
    if (r.status !== "completed" || r.superstep !== supersteps + 1) throw new Error(`ours: ${r.status} at superstep ${r.superstep}`);
    return { msPerSuperstep: ms / (supersteps + 1), bytesPer1000: ((schemaBytes(c, name, "casefile") - before) * 1000) / supersteps };
  } finally {
    store.close();
  }
}

interface SaverModule {
  PostgresSaver: {
    fromConnString(
      url: string,
      opts?: { schema?: string },
    ): {
      setup(): Promise<void>;
      end(): Promise<void>;
    };
  };
}

/** PostgresSaver on the same server, or why not. */
async function theirsGrowth(c: PgCluster, supersteps: number, lines: ReturnType<typeof invoiceLines>): Promise<Growth | string> {
  let mod: SaverModule;
  try {
    mod = (await import("@langchain/langgraph-checkpoint-postgres" as string)) as SaverModule;
  } catch {
    return "@langchain/langgraph-checkpoint-postgres is not installed (npm ls): PostgresSaver not measured";
  }
  const { url, name } = database(c, "theirs");
  // node-postgres takes the socket folder from `host`; PostgresSaver hands the string to pg.Pool.
  const saver = mod.PostgresSaver.fromConnString(url, { schema: "lg" });
  try {
    await saver.setup();
    const before = schemaBytes(c, name, "lg");
    const graph = growthGraph(saver as never, lines);
    const t = now();
    const r = await graph.invoke(
      { counter: 0, limit: supersteps },
      { configurable: { thread_id: "bench" }, recursionLimit: supersteps + 10, durability: "sync" },
    );
    const ms = msSince(t);
    if (r.counter !== supersteps) throw new Error(`theirs: counter ${String(r.counter)}, expected ${supersteps}`);
    return { msPerSuperstep: ms / (supersteps + 1), bytesPer1000: ((schemaBytes(c, name, "lg") - before) * 1000) / supersteps };
  } finally {
    await saver.end();
  }
}

/** The floor: one durable INSERT transaction per superstep, of a row of `bytes`. */
function floor(c: PgCluster, supersteps: number, bytes: number): number {
  const { url } = database(c, "floor");
  const client = new SyncPgClient(url, { where: "floor" });
  try {
    client.query("CREATE TABLE t (id serial PRIMARY KEY, data json)");
    const row = JSON.stringify({ pad: "x".repeat(Math.max(0, bytes - 12)) });
    const t = now();
    for (let i = 0; i < supersteps; i++) client.transaction([{ sql: "INSERT INTO t (data) VALUES ($1::json)", params: [row] }]);
    return msSince(t) / supersteps;
  } finally {
    client.close();
  }
}

/**
 * CPU seconds of one `casefile worker` starting and exiting on an empty queue (node, the CLI, the
 * workflow's bundle, the connection thread, the schema check): what each worker of a run pays
 * before its first case. The median of three.
 */
function workerStartCpu(c: PgCluster): number {
  const { url } = database(c, "start");
  new PgQueue(url).close();
  const spent: number[] = [];
  for (let i = 0; i < 3; i++) {
    const before = procTimes("/proc/self/stat", [16, 17]);
    const r = spawnSync(process.execPath, [cli, "worker", supplier, "--store", url, "--idle-exit-ms", "1"], { stdio: "ignore" });
    if (r.status !== 0) throw new Error(`an idle worker exited ${r.status}`);
    spent.push(procTimes("/proc/self/stat", [16, 17]) - before);
  }
  return spent.sort((a, b) => a - b)[1]!;
}

/**
 * CPU seconds of a scaling run by process, then per case in ms (the workers' both with and
 * without their start-up, `startS` each), the load average at its end, and how busy the
 * machine's cores were (ours and everyone else's).
 */
function cpuLine(t: CpuSpent, cpus: number, cases: number, workers: number, startS: number): string {
  const ours = t.workers + t.postgres + t.erp + t.bench;
  const per = (s: number): string => ((s * 1000) / cases).toFixed(1);
  return (
    `CPU s: workers ${t.workers.toFixed(2)}, Postgres ${t.postgres.toFixed(2)}, ERP stand-in ${t.erp.toFixed(2)}, bench ${t.bench.toFixed(2)}; ` +
    `ms per case: workers ${per(t.workers)} (${per(t.workers - workers * startS)} after start-up), Postgres ${per(t.postgres)}, ` +
    `ERP ${per(t.erp)}, all ${per(ours)}; load ${t.load.toFixed(1)}; ` +
    `machine busy ${t.machine.toFixed(1)} of ${(cpus * t.wall).toFixed(1)} core-s, of which others' ${Math.max(0, t.machine - ours).toFixed(1)}`
  );
}

interface Scaling {
  /** Cases per second by number of workers. */
  rates: Record<string, number>;
  cpu: Record<string, CpuSpent>;
}

async function scalingRuns(c: PgCluster, cases: number, latencyMs: number, startS: number, log: (m: string) => void): Promise<Scaling> {
  const out: Scaling = { rates: {}, cpu: {} };
  for (const w of [1, 2, 4]) {
    const r = await casesPerSecond(c, w, cases, latencyMs);
    out.rates[w] = r.rate;
    out.cpu[w] = r.cpu;
    log(
      `  ${w} worker(s)${latencyMs ? `, model ${latencyMs} ms` : ""}: ${r.rate.toFixed(2)} cases/s; ${cpuLine(r.cpu, os.cpus().length, cases, w, startS)}`,
    );
  }
  return out;
}

/**
 * What N workers can reach at most on this machine, from the one-worker run: a case keeps
 * `busy` cores busy (CPU of the worker after its start-up, Postgres and the ERP stand-in per case,
 * over the wall time per case), so N workers cannot pass min(N, cpus / busy) times one worker's
 * rate. A case that never waits (the model answering at once) keeps about one core busy, which caps
 * 4 workers on 2 cores near 2x whatever the store does.
 */
function ceilingLine(s: Scaling, cpus: number, cases: number, startS: number): string {
  const t = s.cpu[1]!;
  const cpuPerCase = (t.workers - startS + t.postgres + t.erp) / cases;
  const wallPerCase = 1 / s.rates[1]!;
  const busy = cpuPerCase / wallPerCase;
  const most = (n: number): string => Math.min(n, cpus / busy).toFixed(2);
  return (
    `  ceiling on ${cpus} cores: one worker's case keeps ${busy.toFixed(2)} cores busy (${(cpuPerCase * 1000).toFixed(1)} ms CPU in ` +
    `${(wallPerCase * 1000).toFixed(1)} ms), so at most 2/1 ${most(2)}x, 4/1 ${most(4)}x`
  );
}

function scalingLine(title: string, s: Scaling, target: string): string {
  const r = s.rates;
  return (
    `${title}: 1 worker ${r[1]!.toFixed(2)}, 2 workers ${r[2]!.toFixed(2)}, 4 workers ${r[4]!.toFixed(2)} cases/s; ` +
    `scaling 2/1 ${(r[2]! / r[1]!).toFixed(2)}x, 4/1 ${(r[4]! / r[1]!).toFixed(2)}x${target}`
  );
}

async function main(): Promise<void> {
  const cases = arg("cases", 40);
  const supersteps = arg("supersteps", 1000);
  const latencyMs = arg("latency-ms", 300);
  const log = (m: string): void => console.error(m);
  const cluster = startPgCluster({ durable: true });
  const started = Date.now();
  try {
    const cpus = os.cpus().length;
    const startS = workerStartCpu(cluster);
    log(`  a worker's start and exit on an empty queue: ${startS.toFixed(2)} CPU s`);
    const immediate = await scalingRuns(cluster, cases, 0, startS, log);
    const hosted = await scalingRuns(cluster, cases, latencyMs, startS, log);
    const lines = invoiceLines(100_000);
    const ours = await oursGrowth(cluster, supersteps, lines);
    log(`  ours: ${ours.msPerSuperstep.toFixed(3)} ms/superstep, ${fmtBytes(ours.bytesPer1000)} per 1,000 supersteps`);
    const theirs = await theirsGrowth(cluster, supersteps, lines);
    log(`  theirs: ${typeof theirs === "string" ? theirs : `${theirs.msPerSuperstep.toFixed(3)} ms/superstep`}`);
    // Our commit per superstep is the counter's value row, its checkpoint, step and events: about 2 KB.
    const floorMs = floor(cluster, supersteps, 2000);

    const load = os.loadavg().map((x) => x.toFixed(1));
    console.log(`\nPostgres store, ${cpus} CPUs, load average ${load.join(" ")}; ${cases} supplier cases, ${supersteps} supersteps`);
    console.log(scalingLine("cases/s, model answering at once", immediate, " (target >= 3x)"));
    console.log(ceilingLine(immediate, cpus, cases, startS));
    console.log(`a worker's start-up (start and exit on an empty queue): ${startS.toFixed(2)} CPU s`);
    for (const w of [1, 2, 4]) console.log(`  ${w} worker(s): ${cpuLine(immediate.cpu[w]!, cpus, cases, w, startS)}`);
    console.log(scalingLine(`cases/s, model answering after ${latencyMs} ms a call (scripted latencyMs)`, hosted, ""));
    console.log(ceilingLine(hosted, cpus, cases, startS));
    for (const w of [1, 2, 4]) console.log(`  ${w} worker(s): ${cpuLine(hosted.cpu[w]!, cpus, cases, w, startS)}`);
    console.log(
      `durable commit per superstep: ours ${ours.msPerSuperstep.toFixed(3)} ms; one-row INSERT commit ${floorMs.toFixed(3)} ms (ours/floor ${(ours.msPerSuperstep / floorMs).toFixed(2)}x)`,
    );
    if (typeof theirs === "string") console.log(`PostgresSaver: ${theirs}`);
    else
      console.log(
        `PostgresSaver ${theirs.msPerSuperstep.toFixed(3)} ms per superstep (ours/theirs ${(ours.msPerSuperstep / theirs.msPerSuperstep).toFixed(2)}x); ` +
          `disk per 1,000 supersteps ours ${fmtBytes(ours.bytesPer1000)}, theirs ${fmtBytes(theirs.bytesPer1000)} (ours/theirs ${(ours.bytesPer1000 / theirs.bytesPer1000).toFixed(2)}x)`,
      );
    if (typeof theirs === "string") console.log(`disk per 1,000 supersteps: ours ${fmtBytes(ours.bytesPer1000)}`);
    const results = {
      at: new Date().toISOString(),
      cpus,
      loadAverage: os.loadavg(),
      cases,
      supersteps,
      workerStartCpuS: startS,
      scaling: immediate.rates,
      cpu: immediate.cpu,
      latency: { msPerCall: latencyMs, scaling: hosted.rates, cpu: hosted.cpu },
      ours,
      theirs,
      floorMs,
    };
    mkdirSync(path.join(__dirname, "results"), { recursive: true });
    writeFileSync(path.join(__dirname, "results", "postgres.json"), JSON.stringify(results, null, 2) + "\n");
    console.log(`\nwrote test/bench/results/postgres.json (${((Date.now() - started) / 1000).toFixed(0)} s)`);
  } finally {
    cluster.stop();
  }
}

void main().catch((e: unknown) => {
  console.error(e);
  process.exitCode = 1;
});
