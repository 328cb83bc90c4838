import { spawn } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { startErp, type ErpServer } from "../../examples/erp/server";
import { applicationId, hasUnknownTaxNumber, supplierSeed } from "../../examples/supplier/erpSeed";
import { SqlJsStore } from "../../src/casefile/sqlJsStore";
import type { EventRecord, Json } from "../../src/engine/records";
import type { CaseStore } from "../../src/engine/store";

/**
 * The kill test's harness. It runs supplier-onboarding cases through the real CLI in child
 * processes (the runner in-process, as `casefile run|resume`), SIGKILLs each child at chosen or
 * random moments, and resumes the case from its latest checkpoint until the run ends. Then it
 * checks the invariants against the ERP stand-in's own data and the case files.
 *
 * Kill moments ("windows"):
 *   random        a uniformly random time after the start
 *   checkpoint    right after the child reported its k-th durable checkpoint
 *   append        halfway through a journal append          (killHooks.cjs)
 *   rename        in compaction, before the rename          (killHooks.cjs; tiny compaction threshold)
 *   truncate      in compaction, after the rename, before the journal is emptied (killHooks.cjs)
 *   before-act    an intent open, its action not yet sent   (CASEFILE_TEST_PAUSE_BEFORE_ACT_MS)
 *   after-act     the action done, its reference not yet recorded (CASEFILE_TEST_PAUSE_AFTER_ACT_MS)
 * A hook-driven window is only reached if the child gets there; if it finishes first, that
 * attempt is simply not a kill, and the case's next attempt tries another window.
 */

export const WINDOWS = ["random", "checkpoint", "append", "rename", "truncate", "before-act", "after-act"] as const;
export type Window = (typeof WINDOWS)[number];

export interface KillTestOptions {
  /** Cases to run at least. */
  cases: number;
  /**
   * Kills to reach at least. Spread over the cases; a kill window a child never reaches lets
   * that case finish early, so further cases are started until this many kills happened.
   */
  kills: number;
  /** Children running at once. */
  concurrency?: number;
  workDir?: string;
  /** Keep the work folder afterwards (for looking at case files). */
  keep?: boolean;
  log?: (line: string) => void;
  seed?: number;
}

export interface KillTestReport {
  cases: number;
  attempts: number;
  kills: number;
  killsByWindow: Record<Window, number>;
  /** Kills after which the case file showed the window's trace (torn journal tail, leftover temp file, open intent). */
  evidence: {
    tornTails: number;
    compactionTempLeft: number;
    openIntentsAfterKill: number;
    reconciledFound: number;
    reconciledNotFound: number;
  };
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
const FINAL = new Set(["completed", "needs_replanning", "failed"]);
const TERMINAL_EVENTS = new Set(["run_completed", "run_failed", "run_needs_replanning", "run_stopped"]);

interface Attempt {
  window: Window | "none";
  killed: boolean;
  code: number | null;
  stdout: string;
  stderr: string;
  checkpoints: string[];
}

/** A small seeded PRNG so that a failing run can be repeated with KILL_TEST_SEED. */
export function prng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 4294967296;
  };
}

export async function runKillTest(opts: KillTestOptions): Promise<KillTestReport> {
  const t0 = Date.now();
  const log = opts.log ?? (() => {});
  const seed = opts.seed ?? Date.now() % 1_000_000;
  const rand = prng(seed);
  const work = opts.workDir ?? path.join(os.tmpdir(), `casefile-kill-${process.pid}-${seed}`);
  rmSync(work, { recursive: true, force: true });
  mkdirSync(path.join(work, "cases"), { recursive: true });
  log(`kill test: ${opts.cases} cases, aiming at ${opts.kills} kills, seed ${seed}, work ${work}`);
  const cli = privateCli(seed);

  // Spare applications for the cases started when the planned ones ended short of the kill target.
  const available = opts.cases * 3;
  const erp = await startErp({ dataDir: path.join(work, "erp"), seed: supplierSeed(available) });
  const report: KillTestReport = {
    cases: opts.cases,
    attempts: 0,
    kills: 0,
    killsByWindow: Object.fromEntries(WINDOWS.map((w) => [w, 0])) as Record<Window, number>,
    evidence: { tornTails: 0, compactionTempLeft: 0, openIntentsAfterKill: 0, reconciledFound: 0, reconciledNotFound: 0 },
    finalStatuses: {},
    onboarded: 0,
    rejected: 0,
    checkpointsReported: 0,
    durationMs: 0,
    violations: [],
  };
  const reported = new Map<number, Set<string>>();
  const perCase = Math.ceil(opts.kills / opts.cases) + 1;

  try {
    let next = 0;
    const more = (): boolean => next < opts.cases || (report.kills < opts.kills && next < available);
    const worker = async (): Promise<void> => {
      while (more()) {
        const i = next++;
        await runCase(i, perCase);
      }
    };
    await Promise.all(Array.from({ length: opts.concurrency ?? 4 }, worker));
    report.cases = next;
    if (report.kills < opts.kills)
      report.violations.push(`only ${report.kills} kills over ${next} cases, fewer than the ${opts.kills} asked for`);
    await checkInvariants(erp, next, reported, report, (i) => SqlJsStore.open(caseFile(work, i), { readOnly: true }));
  } finally {
    await erp.close();
    rmSync(path.dirname(cli), { recursive: true, force: true });
    if (!opts.keep) rmSync(work, { recursive: true, force: true });
  }
  report.durationMs = Date.now() - t0;
  return report;

  /** Runs one case to its end: attempts with a kill planned while its budget lasts, then one left alone. */
  async function runCase(i: number, budget: number): Promise<void> {
    const file = caseFile(work, i);
    const seen = new Set<string>();
    reported.set(i, seen);
    let kills = 0;
    let offset = Math.floor(rand() * WINDOWS.length);
    for (let attempt = 0; attempt < budget * 4 + 10; attempt++) {
      const state = await caseState(file);
      // A window the child cannot reach lets the case finish with its kills unspent: effect
      // windows are skipped once no effect is left (or for a case that will be rejected).
      let window: Window | "none" = "none";
      while (kills < budget && window === "none") {
        const w = WINDOWS[offset++ % WINDOWS.length]!;
        if ((w === "before-act" || w === "after-act") && (hasUnknownTaxNumber(i) || state.effectsDone >= 3)) continue;
        window = w;
      }
      if (state.final) return;
      const args = state.checkpoint
        ? ["resume", file, "--checkpoint", state.checkpoint]
        : ["run", workflow, "--case-file", file, "--input", JSON.stringify({ applicationId: applicationId(i) })];
      const result = await runChild(args, window);
      report.attempts++;
      for (const c of result.checkpoints) seen.add(c);
      // Logged by the effect step when a restart looked an open intent's key up and found nothing.
      report.evidence.reconciledNotFound += result.stderr.split("the effect did not happen").length - 1;
      if (result.killed) {
        kills++;
        report.kills++;
        if (window !== "none") report.killsByWindow[window]++;
        await afterKill(file, i, window, seen);
        continue;
      }
      if (result.code !== 0) {
        report.violations.push(
          `${applicationId(i)}: ${args[0]} exited ${result.code} without being killed: ${result.stderr.trim().split("\n").slice(-15).join(" | ")}`,
        );
        return;
      }
    }
    report.violations.push(`${applicationId(i)}: did not finish within its attempts`);
  }

  /** After each kill: the file opens, holds every checkpoint the child reported, and shows what the kill interrupted. */
  async function afterKill(file: string, i: number, window: Window | "none", seen: Set<string>): Promise<void> {
    if (existsSync(`${file}.tmp`)) report.evidence.compactionTempLeft++;
    if (!existsSync(file)) {
      if (seen.size > 0)
        report.violations.push(`${applicationId(i)}: case file gone after a ${window} kill, though checkpoints were reported`);
      return;
    }
    let store: SqlJsStore;
    try {
      store = await SqlJsStore.open(file, { readOnly: true });
    } catch (e) {
      report.violations.push(`${applicationId(i)}: case file does not open after a ${window} kill: ${(e as Error).message}`);
      return;
    }
    try {
      if (store.warnings.some((w) => w.includes("incomplete last record"))) report.evidence.tornTails++;
      if (store.listIntents({ status: "open" }).length > 0) report.evidence.openIntentsAfterKill++;
      for (const id of seen) {
        if (!store.getCheckpoint(id))
          report.violations.push(
            `${applicationId(i)}: checkpoint ${id} was reported durable before a ${window} kill and is not in the file`,
          );
      }
    } finally {
      store.close();
    }
  }

  function runChild(args: string[], window: Window | "none"): Promise<Attempt> {
    const env: NodeJS.ProcessEnv = { ...process.env, ERP_URL: erp.url, CASEFILE_EVENTS: "jsonl", CASEFILE_COMPACT_AT_BYTES: "1" };
    // Journal appends come several per superstep; compactions once or twice per child.
    const hookAt = 1 + Math.floor(rand() * (window === "append" ? 4 : window === "rename" ? 2 : 1));
    if (window === "append" || window === "rename" || window === "truncate")
      Object.assign(env, { KILLTEST_HOOK: window, KILLTEST_HOOK_AT: String(hookAt), KILLTEST_HOOK_MS: "10000" });
    if (window === "before-act") env.CASEFILE_TEST_PAUSE_BEFORE_ACT_MS = "10000";
    if (window === "after-act") env.CASEFILE_TEST_PAUSE_AFTER_ACT_MS = "10000";
    const killAtCheckpoint = 1 + Math.floor(rand() * 2);
    const child = spawn(process.execPath, ["--require", hooks, cli, ...args], { env, stdio: ["ignore", "pipe", "pipe"] });
    const attempt: Attempt = { window, killed: false, code: null, stdout: "", stderr: "", checkpoints: [] };
    const kill = (): void => {
      if (attempt.killed || child.exitCode !== null) return;
      attempt.killed = child.kill("SIGKILL");
    };
    let timer: NodeJS.Timeout | undefined;
    if (window === "random") timer = setTimeout(kill, 100 + Math.floor(rand() * 2200));
    let outBuf = "";
    child.stdout.on("data", (d: Buffer) => {
      attempt.stdout += d.toString("utf8");
      outBuf += d.toString("utf8");
      const lines = outBuf.split("\n");
      outBuf = lines.pop()!;
      for (const line of lines) {
        if (!line.startsWith("{")) continue;
        const e = JSON.parse(line) as EventRecord;
        if (e.type !== "checkpoint") continue;
        attempt.checkpoints.push((e.data as { checkpoint: string }).checkpoint);
        report.checkpointsReported++;
        if (window === "checkpoint" && attempt.checkpoints.length === killAtCheckpoint) kill();
      }
    });
    child.stderr.on("data", (d: Buffer) => {
      const text = d.toString("utf8");
      attempt.stderr += text;
      if (text.includes("KILLTEST-PAUSE") || text.includes("test hook:")) kill();
    });
    return new Promise((resolve) => {
      // "close", not "exit": every line the child wrote before dying is read first.
      child.on("close", (code, signal) => {
        if (timer) clearTimeout(timer);
        attempt.code = code;
        attempt.killed = signal === "SIGKILL";
        resolve(attempt);
      });
    });
  }
}

/**
 * A copy of the built CLI for this run only: the working tree is shared, and a rebuild of dist/
 * while children start (a half-written dist/cli.js) is not what this test is about. It sits
 * under node_modules/.cache so that the bundle's external requires (esbuild) still resolve.
 */
export function privateCli(seed: number): string {
  const dir = path.join(root, "node_modules", ".cache", "casefile-kill-test", `${process.pid}-${seed}`);
  mkdirSync(dir, { recursive: true });
  // The CLI loads its commands and the libraries it shares with the other bundles (ext-*.js,
  // vendor-*.js) and its data (the wasm, the tokenizer's *.ranks) from files beside it: copy
  // every bundle and those, not the source maps.
  for (const f of readdirSync(path.join(root, "dist")))
    if (/\.(js|wasm|ranks)$/.test(f)) copyFileSync(path.join(root, "dist", f), path.join(dir, f));
  return path.join(dir, "cli.js");
}

function caseFile(work: string, i: number): string {
  return path.join(work, "cases", `${applicationId(i)}.casefile`);
}

/** Where a case stands: no run yet, a run to resume from its latest checkpoint, or ended. */
async function caseState(file: string): Promise<{ checkpoint?: string; final: boolean; effectsDone: number }> {
  if (!existsSync(file)) return { final: false, effectsDone: 0 };
  const store = await SqlJsStore.open(file, { readOnly: true });
  try {
    const run = store.listRuns()[0];
    const effectsDone = store.listIntents({ status: "done" }).length;
    if (!run) return { final: false, effectsDone };
    if (FINAL.has(run.status)) return { final: true, effectsDone };
    return { checkpoint: store.latestCheckpoint(run.id)?.id, final: false, effectsDone };
  } finally {
    store.close();
  }
}

/**
 * The invariants, checked against the ERP's own data and every case's records (`open` reads case
 * i: its case file, or its rows in a Postgres store). Counts final statuses, onboarded and
 * rejected cases and reconciled intents into `report`; each breach is a line in its violations.
 */
export async function checkInvariants(
  erp: ErpServer,
  cases: number,
  reported: Map<number, Set<string>>,
  report: Pick<KillTestReport, "violations" | "finalStatuses" | "onboarded" | "rejected"> & {
    evidence: Pick<KillTestReport["evidence"], "reconciledFound">;
  },
  open: (i: number) => Promise<CaseStore>,
): Promise<void> {
  const v = report.violations;
  const data = erp.snapshot();
  const suppliers = Object.values(data.collections.suppliers ?? {});
  const bankRequests = Object.values(data.collections["bank-requests"] ?? {});
  const writes = data.log ?? [];

  const keysWritten = new Map<string, number>();
  for (const w of writes) if (w.idempotencyKey) keysWritten.set(w.idempotencyKey, (keysWritten.get(w.idempotencyKey) ?? 0) + 1);
  for (const [key, n] of keysWritten) if (n > 1) v.push(`ERP applied idempotency key ${key} ${n} times`);

  for (let i = 0; i < cases; i++) {
    const app = applicationId(i);
    let store: CaseStore;
    try {
      store = await open(i);
    } catch (e) {
      v.push(`${app}: case does not open: ${(e as Error).message}`);
      continue;
    }
    try {
      const runs = store.listRuns();
      if (runs.length !== 1) v.push(`${app}: ${runs.length} runs in the case file, expected 1`);
      const run = runs[0];
      if (!run) continue;
      report.finalStatuses[run.status] = (report.finalStatuses[run.status] ?? 0) + 1;
      if (run.status !== "completed") v.push(`${app}: ended ${run.status}${run.error ? `: ${run.error.message}` : ""}`);
      const events = store.listEvents({ runId: run.id });
      const terminal = events.filter((e) => TERMINAL_EVENTS.has(e.type));
      if (terminal.length !== 1)
        v.push(`${app}: ${terminal.length} final events (${terminal.map((e) => e.type).join(", ")}), expected exactly 1`);

      // No committed superstep lost: a gap-free chain 0..n, holding every checkpoint a child reported.
      const cps = store.listCheckpoints(run.id);
      cps.forEach((c, k) => {
        if (c.superstep !== k) v.push(`${app}: checkpoint chain has superstep ${c.superstep} at position ${k}`);
      });
      for (const id of reported.get(i) ?? []) if (!store.getCheckpoint(id)) v.push(`${app}: reported checkpoint ${id} missing at the end`);

      for (const e of store.listEvents({ runId: run.id })) {
        if (e.type !== "intent") continue;
        const what = (e.data as { what?: string }).what;
        if (what === "reconciled: found") report.evidence.reconciledFound++;
      }
      const intents = store.listIntents();
      for (const it of intents) if (it.status !== "done") v.push(`${app}: intent ${it.id} left ${it.status}`);

      const mine = suppliers.filter((s) => s.data.applicationId === app);
      const outputs = (run.outputs ?? []) as { outcome?: string; supplier?: string }[];
      if (hasUnknownTaxNumber(i)) {
        report.rejected++;
        if (mine.length !== 0) v.push(`${app}: tax number unknown, yet ${mine.length} supplier(s) created`);
        if (intents.length !== 0) v.push(`${app}: tax number unknown, yet ${intents.length} intent(s)`);
        continue;
      }
      if (mine.length !== 1) {
        v.push(`${app}: ${mine.length} suppliers created, expected exactly 1`);
        continue;
      }
      report.onboarded++;
      const supplier = mine[0]!;
      const requests = bankRequests.filter((b) => b.data.supplierId === supplier.id);
      if (requests.length !== 1) v.push(`${app}: ${requests.length} bank requests for ${supplier.id}, expected exactly 1`);
      const termWrites = writes.filter((w) => w.collection === "suppliers" && w.id === supplier.id && w.method === "PATCH");
      if (termWrites.length !== 1) v.push(`${app}: payment terms written ${termWrites.length} times on ${supplier.id}, expected exactly 1`);
      if (supplier.data.paymentTermsDays !== 30)
        v.push(`${app}: supplier ${supplier.id} has payment terms ${String(supplier.data.paymentTermsDays as Json)}`);
      if (outputs.length !== 1 || outputs[0]!.supplier !== supplier.id)
        v.push(`${app}: output ${JSON.stringify(outputs)} does not name supplier ${supplier.id} once`);
    } finally {
      store.close();
    }
  }
  // Three effects per onboarded case, and not one write more anywhere in the ERP.
  if (writes.length !== report.onboarded * 3)
    v.push(`the ERP took ${writes.length} writes for ${report.onboarded} onboarded cases, expected ${report.onboarded * 3}`);
}

/** `tsx test/integration/killHarness.ts`: KILL_TEST_CASES, KILL_TEST_KILLS, KILL_TEST_CONCURRENCY, KILL_TEST_SEED. */
if (require.main === module) {
  const n = (name: string, dflt: number): number => Number(process.env[name] ?? dflt);
  void runKillTest({
    cases: n("KILL_TEST_CASES", 250),
    kills: n("KILL_TEST_KILLS", 1000),
    concurrency: n("KILL_TEST_CONCURRENCY", 4),
    seed: process.env.KILL_TEST_SEED ? n("KILL_TEST_SEED", 1) : undefined,
    keep: process.env.KILL_TEST_KEEP === "1",
    log: (l) => console.log(l),
  }).then((r) => {
    console.log(JSON.stringify(r, null, 2));
    if (r.violations.length || r.kills < n("KILL_TEST_KILLS", 1000)) process.exitCode = 1;
  });
}
