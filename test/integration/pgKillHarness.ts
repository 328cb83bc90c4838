import { spawn } from "node:child_process";
import { mkdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { startErp } from "../../examples/erp/server";
import { applicationId, supplierSeed } from "../../examples/supplier/erpSeed";
import type { EventRecord } from "../../src/engine/records";
import { PgQueue, PostgresStore } from "../../src/pgstore/index";
import type { PgCluster } from "../helpers/pgCluster";
import { checkInvariants, privateCli, prng } from "./killHarness";

/**
 * The kill test on a Postgres store. `workers` `casefile worker` processes (the real CLI, one
 * case at a time each) run supplier-onboarding cases from one store's queue; each worker process
 * is SIGKILLed at one of the kill windows below, and a new one takes its place, until the
 * planned kills are spent. Once, when about half the cases have ended, the Postgres server
 * itself is stopped with `pg_ctl restart -m immediate` (a crash: no checkpoint, no clean
 * disconnect) while workers are mid-case. Then the invariants of the sql.js kill test are
 * checked against the ERP stand-in's own data and every case's rows (killHarness.ts,
 * checkInvariants), and every checkpoint a worker reported durable must still be in the store,
 * both right after the crash and at the end.
 *
 * Kill windows:
 *   random        a random time after the worker started
 *   checkpoint    right after the worker reported its k-th durable checkpoint
 *   before-act    an intent open, its action not yet sent   (CASEFILE_TEST_PAUSE_BEFORE_ACT_MS)
 *   after-act     the action done, its reference not yet recorded (CASEFILE_TEST_PAUSE_AFTER_ACT_MS)
 *   pg-commit     a commit's statement (one: the whole superstep) about to be sent (killHooks.cjs): nothing reaches Postgres
 *   pg-committed  that statement sent, its answer not read (killHooks.cjs): durable, never acknowledged
 * The journal and compaction windows of the case file have no counterpart here.
 */

export const PG_WINDOWS = ["random", "checkpoint", "before-act", "after-act", "pg-commit", "pg-committed"] as const;
export type PgWindow = (typeof PG_WINDOWS)[number];

export interface PgKillTestOptions {
  cluster: PgCluster;
  /** A database of `cluster` made for this run. */
  url: string;
  cases: number;
  kills: number;
  /** Worker processes running at once. */
  workers?: number;
  seed?: number;
  log?: (line: string) => void;
}

export interface PgKillTestReport {
  cases: number;
  workerProcesses: number;
  kills: number;
  killsByWindow: Record<PgWindow, number>;
  /** Whether the server was crashed and restarted mid-run, and how many cases had ended by then. */
  restart: { done: boolean; casesEndedBefore: number; reportedCheckpointsChecked: number };
  evidence: { openIntentsAfterKill: number; reconciledFound: number; reconciledNotFound: number; leasesLost: number; storeOutages: number };
  finalStatuses: Record<string, number>;
  onboarded: number;
  rejected: number;
  checkpointsReported: number;
  durationMs: number;
  violations: string[];
}

const root = path.resolve(__dirname, "../..");
const hooks = path.join(__dirname, "killHooks.cjs");
const workflow = path.join(root, "examples", "supplier", "workflow.ts");
const LEASE_MS = 2000;

export async function runPgKillTest(opts: PgKillTestOptions): Promise<PgKillTestReport> {
  const t0 = Date.now();
  const log = opts.log ?? (() => {});
  const seed = opts.seed ?? Date.now() % 1_000_000;
  const rand = prng(seed);
  const work = path.join(os.tmpdir(), `casefile-pgkill-${process.pid}-${seed}`);
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  const workers = opts.workers ?? 4;
  log(`postgres kill test: ${opts.cases} cases, ${workers} workers, aiming at ${opts.kills} kills, seed ${seed}`);
  const cli = privateCli(seed);
  // Spare applications, enqueued when the planned cases ended short of the kill target.
  const available = opts.cases * 3;
  const erp = await startErp({ dataDir: path.join(work, "erp"), seed: supplierSeed(available) });
  const report: PgKillTestReport = {
    cases: opts.cases,
    workerProcesses: 0,
    kills: 0,
    killsByWindow: Object.fromEntries(PG_WINDOWS.map((w) => [w, 0])) as Record<PgWindow, number>,
    restart: { done: false, casesEndedBefore: 0, reportedCheckpointsChecked: 0 },
    evidence: { openIntentsAfterKill: 0, reconciledFound: 0, reconciledNotFound: 0, leasesLost: 0, storeOutages: 0 },
    finalStatuses: {},
    onboarded: 0,
    rejected: 0,
    checkpointsReported: 0,
    durationMs: 0,
    violations: [],
  };
  const db = new URL(opts.url).pathname.slice(1);
  const sql = (q: string): string => opts.cluster.psql(q, db).trim();
  /** Checkpoint ids reported durable by any worker, by case index. */
  const reported = new Map<number, Set<string>>();
  let enqueued = 0;
  const enqueue = (n: number): void => {
    const queue = new PgQueue(opts.url);
    try {
      for (const end = Math.min(enqueued + n, available); enqueued < end; enqueued++)
        queue.enqueue(applicationId(enqueued), workflow, { applicationId: applicationId(enqueued) });
    } finally {
      queue.close();
    }
  };
  const count = (where: string): number => Number(sql(`SELECT count(*) FROM casefile.cases WHERE ${where}`));
  const ended = (): number => count("queue_status IN ('completed', 'failed', 'needs_replanning')");
  // Claimable now or within a second: queued, or running under a lease about to run out (a killed worker's).
  const runnable = (): number =>
    count("queue_status = 'queued' OR (queue_status = 'running' AND lease_expires_at < clock_timestamp() + interval '1 second')");

  try {
    enqueue(opts.cases);
    let windowAt = Math.floor(rand() * PG_WINDOWS.length);
    const slot = async (): Promise<void> => {
      for (;;) {
        const done = ended();
        if (done >= enqueued) {
          // Every case ended: more only while kills are short of the target.
          if (report.kills >= opts.kills || enqueued >= available) return;
          enqueue(workers);
        }
        if (done < enqueued && runnable() === 0) {
          // The cases left are held by live workers: a new worker would only wait and exit.
          await new Promise((r) => setTimeout(r, 300));
          continue;
        }
        const window: PgWindow | "none" = report.kills < opts.kills ? PG_WINDOWS[windowAt++ % PG_WINDOWS.length]! : "none";
        await runWorker(window);
      }
    };
    // The crash: once half the planned cases have ended, with workers mid-case.
    const crasher = async (): Promise<void> => {
      for (;;) {
        const done = ended();
        if (done >= enqueued) return;
        if (done >= opts.cases / 2) return crash(done);
        await new Promise((r) => setTimeout(r, 200));
      }
    };
    await Promise.all([...Array.from({ length: workers }, slot), crasher()]);
    if (!report.restart.done) report.violations.push("the Postgres server was never restarted mid-run");
    if (report.kills < opts.kills) report.violations.push(`only ${report.kills} kills, fewer than the ${opts.kills} asked for`);
    report.cases = enqueued;
    const statuses = sql(`SELECT id || '=' || queue_status FROM casefile.cases ORDER BY pos`).split("\n");
    for (const s of statuses) if (!s.endsWith("=completed")) report.violations.push(`queue: case ${s}`);
    checkReported("at the end");
    await checkInvariants(erp, enqueued, reported, report, (i) =>
      PostgresStore.open(opts.url, { caseId: applicationId(i), readOnly: true }),
    );
  } finally {
    await erp.close();
    rmSync(path.dirname(cli), { recursive: true, force: true });
    rmSync(work, { recursive: true, force: true });
  }
  report.durationMs = Date.now() - t0;
  return report;

  /** `pg_ctl restart -m immediate` with workers mid-case, then every checkpoint reported so far must be there. */
  function crash(done: number): void {
    log(`crashing Postgres (pg_ctl restart -m immediate) with ${done} of ${enqueued} cases ended`);
    opts.cluster.restart("immediate");
    report.restart = { done: true, casesEndedBefore: done, reportedCheckpointsChecked: 0 };
    report.restart.reportedCheckpointsChecked = checkReported("after the crash");
  }

  /** Every checkpoint a worker reported durable is in the store; returns how many were checked. */
  function checkReported(when: string): number {
    const held = new Set(sql("SELECT case_id || ' ' || id FROM casefile.checkpoints").split("\n"));
    let n = 0;
    for (const [i, ids] of reported) {
      for (const id of ids) {
        n++;
        if (!held.has(`${applicationId(i)} ${id}`))
          report.violations.push(`${applicationId(i)}: checkpoint ${id} was reported durable and is missing ${when}`);
      }
    }
    return n;
  }

  /** One `casefile worker` process, killed in `window` if it gets there; resolves when it is gone. */
  function runWorker(window: PgWindow | "none"): Promise<void> {
    const env: NodeJS.ProcessEnv = { ...process.env, ERP_URL: erp.url, CASEFILE_EVENTS: "jsonl" };
    if (window === "pg-commit" || window === "pg-committed")
      Object.assign(env, { KILLTEST_HOOK: window, KILLTEST_HOOK_AT: String(2 + Math.floor(rand() * 8)), KILLTEST_HOOK_MS: "20000" });
    if (window === "before-act") env.CASEFILE_TEST_PAUSE_BEFORE_ACT_MS = "20000";
    if (window === "after-act") env.CASEFILE_TEST_PAUSE_AFTER_ACT_MS = "20000";
    const killAtCheckpoint = 1 + Math.floor(rand() * 6);
    const args = [cli, "worker", workflow, "--store", opts.url, "--lease-ms", String(LEASE_MS), "--idle-exit-ms", "1500"];
    const child = spawn(process.execPath, ["--require", hooks, ...args], { env, stdio: ["ignore", "pipe", "pipe"] });
    report.workerProcesses++;
    let killed = false;
    let checkpoints = 0;
    let stderr = "";
    const kill = (): void => {
      if (killed || child.exitCode !== null) return;
      killed = child.kill("SIGKILL");
    };
    const timer = window === "random" ? setTimeout(kill, 300 + Math.floor(rand() * 3000)) : undefined;
    let outBuf = "";
    child.stdout.on("data", (d: Buffer) => {
      outBuf += d.toString("utf8");
      const lines = outBuf.split("\n");
      outBuf = lines.pop()!;
      for (const line of lines) {
        if (!line.startsWith("{")) continue;
        const e = JSON.parse(line) as EventRecord & { caseId: string };
        if (e.type !== "checkpoint") continue;
        const i = Number(e.caseId.slice("APP-".length));
        if (!reported.has(i)) reported.set(i, new Set());
        reported.get(i)!.add((e.data as { checkpoint: string }).checkpoint);
        report.checkpointsReported++;
        if (window === "checkpoint" && ++checkpoints === killAtCheckpoint) kill();
      }
    });
    child.stderr.on("data", (d: Buffer) => {
      const text = d.toString("utf8");
      stderr += text;
      if (text.includes("KILLTEST-PAUSE") || text.includes("test hook:")) kill();
    });
    return new Promise((resolve) => {
      child.on("close", (code, signal) => {
        if (timer) clearTimeout(timer);
        report.evidence.reconciledNotFound += stderr.split("the effect did not happen").length - 1;
        report.evidence.leasesLost += stderr.split("LEASE_LOST").length - 1;
        report.evidence.storeOutages += stderr.split("STORE_UNAVAILABLE").length - 1 + (stderr.split("; retrying").length - 1);
        if (signal === "SIGKILL") {
          report.kills++;
          if (window !== "none") report.killsByWindow[window]++;
          if (window === "before-act" || window === "after-act") {
            try {
              if (Number(sql("SELECT count(*) FROM casefile.intents WHERE status = 'open'")) > 0) report.evidence.openIntentsAfterKill++;
            } catch {
              // The server is being restarted: this kill's evidence is not counted.
            }
          }
        } else if (code !== 0) {
          report.violations.push(`a worker exited ${code} without being killed: ${stderr.trim().split("\n").slice(-10).join(" | ")}`);
        }
        resolve();
      });
    });
  }
}
