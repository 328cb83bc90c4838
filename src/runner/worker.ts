import os from "node:os";
import path from "node:path";
import { RunControl } from "../engine/control";
import { Engine, type RunResult } from "../engine/engine";
import { CasefileError, describeError, isCasefileError } from "../engine/errors";
import type { Workflow } from "../engine/workflow";
import type { ModelProvider } from "../engine/model";
import type { EventRecord, RunRecord } from "../engine/records";
import { PostgresStore } from "../pgstore/index";
import { PgQueue, SyncPgClient, redact, storeAway, type Claim, type QueueStatus } from "../pgstore/index";
import type { ProviderConfig } from "../protocol/runner";
import { loadWorkflow } from "./bundle";
import { providerFor } from "./provider";
import { hooksFromEnv } from "./session";

/**
 * `casefile worker`: runs the cases of a Postgres store's queue, `concurrency` at a time in this
 * process. Each case is claimed with a lease (PgQueue.claim), renewed every third of its length
 * while the case runs, and the case's store is fenced with the claim's generation, so a worker
 * that was paused past its lease cannot commit once another took the case over: the commit is
 * refused (LEASE_LOST) and this worker stops that case and logs why. A case whose worker was
 * killed is claimed again when its lease expires and resumed from its latest checkpoint; the
 * engine's resume resolves the case's open intents (looking each idempotency key up) before any
 * superstep runs, so no effect is repeated.
 */

export interface WorkerOptions {
  url: string;
  tenant?: string;
  concurrency?: number;
  /** Lease length. Default 10 s. */
  leaseMs?: number;
  /** Wait between claims when the queue has nothing runnable. Default 200 ms. */
  pollMs?: number;
  /** Exit once nothing was runnable for this long (tests and batch jobs); default: never. */
  idleExitMs?: number;
  provider?: ProviderConfig;
  env?: NodeJS.ProcessEnv;
  log?: (line: string) => void;
  /** Every event of every case this worker runs, once durable (CASEFILE_EVENTS=jsonl prints them). */
  onEvent?: (caseId: string, event: EventRecord) => void;
  /** Stops claiming; running cases finish their superstep and stop. */
  signal?: AbortSignal;
}

export interface WorkerReport {
  /** Cases this worker ran to a stop (completed, waiting, failed...). */
  finished: number;
  /** Cases whose lease this worker lost (fenced off). */
  lost: number;
}

const FINAL: ReadonlySet<string> = new Set(["completed", "failed", "needs_replanning"]);

export async function runWorker(workflowPath: string, opts: WorkerOptions): Promise<WorkerReport> {
  const file = path.resolve(workflowPath);
  const { workflow } = await loadWorkflow(file);
  const env = opts.env ?? process.env;
  const provider = providerFor(opts.provider ?? { kind: "scripted" }, { workflowPath: file, env });
  const leaseMs = opts.leaseMs ?? 10_000;
  const pollMs = opts.pollMs ?? 200;
  const log = opts.log ?? (() => {});
  const owner = `${os.hostname()}:${process.pid}`;
  const queue = await openQueue(opts.url, opts.tenant, (m) => log(`worker ${owner}: ${m}`), opts.signal);
  const report: WorkerReport = { finished: 0, lost: 0 };
  let idleSince = Date.now();
  let outage = false;
  // One connection for the cases' stores, shared by every slot: each of its calls blocks this
  // thread until answered (SyncPgClient), so slots never interleave inside one, and a connection
  // per case (a thread, node-postgres loaded, a Postgres backend) cost more than the case itself.
  // A case that ends in an error drops it (it may be what broke); the next case opens another.
  let connection: SyncPgClient | undefined;
  const dropConnection = (): void => {
    connection?.close();
    connection = undefined;
  };
  const slot = async (): Promise<void> => {
    while (!opts.signal?.aborted) {
      let claim: Claim | undefined;
      try {
        claim = queue.claim(owner, leaseMs);
        if (outage) log(`worker ${owner}: the store answers again`);
        outage = false;
      } catch (e) {
        // Postgres restarting or unreachable: the queue reconnects on its next call; keep trying.
        if (!unavailable(e)) throw e;
        if (!outage) log(`worker ${owner}: ${describeError(e).message}; retrying`);
        outage = true;
        await new Promise((r) => setTimeout(r, Math.max(pollMs, 250)));
        continue;
      }
      if (!claim) {
        if (opts.idleExitMs !== undefined && Date.now() - idleSince >= opts.idleExitMs) return;
        await new Promise((r) => setTimeout(r, pollMs));
        continue;
      }
      idleSince = Date.now();
      await runClaim(claim);
      idleSince = Date.now();
    }
  };

  const runClaim = async (claim: Claim): Promise<void> => {
    const control = new RunControl();
    let leaseLost = false;
    const renew = setInterval(
      () => {
        try {
          if (!queue.renew(claim, leaseMs)) {
            leaseLost = true;
            control.stop();
          }
        } catch (e) {
          log(`worker ${owner}: case ${claim.caseId}: renewing the lease failed: ${describeError(e).message}`);
        }
      },
      Math.max(50, Math.floor(leaseMs / 3)),
    );
    let store: PostgresStore | undefined;
    try {
      connection ??= new SyncPgClient(opts.url, { where: redact(opts.url) });
      store = await PostgresStore.open(opts.url, {
        caseId: claim.caseId,
        tenant: claim.tenant,
        fence: { generation: claim.generation },
        connection,
      });
      const onEvent = opts.onEvent ? (e: EventRecord): void => opts.onEvent!(claim.caseId, e) : undefined;
      const status = await advance(store, claim, workflow, provider, control, file, env, log, onEvent);
      if (leaseLost || !queue.release(claim, status)) {
        report.lost++;
        log(
          `worker ${owner}: case ${claim.caseId}: LEASE_LOST: the lease (generation ${claim.generation}) was taken over; stopped the case`,
        );
      } else {
        report.finished++;
        log(`worker ${owner}: case ${claim.caseId}: ${status}`);
      }
    } catch (e) {
      if (!(isCasefileError(e) && e.code === "LEASE_LOST")) dropConnection();
      if (isCasefileError(e) && e.code === "LEASE_LOST") {
        report.lost++;
        log(`worker ${owner}: case ${claim.caseId}: LEASE_LOST: ${e.message}; stopped the case`);
      } else if (unavailable(e)) {
        // The store went away mid-case: nothing was recorded as failed (the failure could not be
        // committed either). Put the case back for any worker to resume from its latest
        // checkpoint; if even that cannot be written, its lease runs out and it is claimed again.
        log(`worker ${owner}: case ${claim.caseId}: STORE_UNAVAILABLE: ${describeError(e).message}; left to be resumed`);
        try {
          queue.release(claim, "queued");
        } catch {
          // Still unavailable: the lease expires.
        }
      } else {
        const { code, message } = describeError(e);
        log(`worker ${owner}: case ${claim.caseId}: ${code}: ${message}`);
        try {
          queue.release(claim, "failed");
        } catch (r) {
          log(`worker ${owner}: case ${claim.caseId}: could not record it failed: ${describeError(r).message}`);
        }
      }
    } finally {
      clearInterval(renew);
      store?.close();
    }
  };

  try {
    await Promise.all(Array.from({ length: Math.max(1, opts.concurrency ?? 1) }, slot));
  } finally {
    dropConnection();
    queue.close();
  }
  return report;
}

/**
 * Takes one claimed case as far as it goes: a new case starts its run with the enqueued input; a
 * case with an unfinished run resumes it from its latest checkpoint (open intents resolved first);
 * a waiting or ended one is left as it is. Returns the queue status to record.
 */
async function advance(
  store: PostgresStore,
  claim: Claim,
  workflow: Workflow,
  provider: ModelProvider,
  control: RunControl,
  workflowPath: string,
  env: NodeJS.ProcessEnv,
  log: (line: string) => void,
  onEvent: ((e: EventRecord) => void) | undefined,
): Promise<Exclude<QueueStatus, "running">> {
  const engine = new Engine(workflow, store, {
    provider,
    control,
    workflowPath,
    log,
    hooks: hooksFromEnv(env),
    ...(onEvent ? { onEvent } : {}),
  });
  const current: RunRecord | undefined = store
    .listRuns()
    .filter((r) => r.status !== "superseded")
    .at(-1);
  let result: RunResult;
  if (!current) {
    result = await engine.run(claim.input);
  } else if (FINAL.has(current.status) || current.status === "waiting") {
    return current.status as Exclude<QueueStatus, "running">;
  } else {
    const latest = store.latestCheckpoint(current.id);
    result = latest ? await engine.resume(latest.id) : await engine.run(claim.input);
  }
  if (result.error?.code === "LEASE_LOST") throw new CasefileError("LEASE_LOST", result.error.message);
  return (["completed", "waiting", "failed", "needs_replanning"].includes(result.status) ? result.status : "stopped") as Exclude<
    QueueStatus,
    "running"
  >;
}

/**
 * The queue, once the store answers: a worker started while Postgres restarts (a supervisor
 * bringing workers back after a crash) waits for it, up to a minute, as its claims do; a refusal
 * that is not the connection's (credentials, schema) ends the worker at once.
 */
async function openQueue(url: string, tenant: string | undefined, log: (m: string) => void, signal?: AbortSignal): Promise<PgQueue> {
  const deadline = Date.now() + 60_000;
  for (let said = false; ; said = true) {
    try {
      return new PgQueue(url, tenant);
    } catch (e) {
      if (!storeAway(e) || Date.now() > deadline || signal?.aborted) throw e;
      if (!said) log(`${describeError(e).message}; waiting for the store`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

function unavailable(e: unknown): boolean {
  return isCasefileError(e) && e.code === "STORE_UNAVAILABLE";
}
