import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { startErp, type ErpServer } from "../../examples/erp/server";
import { invoiceSeed } from "../../examples/invoice/erpData";
import { applicationId, supplierSeed } from "../../examples/supplier/erpSeed";
import { PgQueue, PostgresStore } from "../../src/pgstore/index";
import { createDatabase, pgCluster } from "../helpers/pgCluster";
import { cliPath, root, runCli, tempDir } from "./helpers";

const workflow = path.join(root, "examples/supplier/workflow.ts");
const CASES = 4;

interface Worker {
  child: ChildProcess;
  stderr: () => string;
  exited: Promise<number | null>;
}

/** A `casefile worker` child; its log (stderr) kept for the assertions. */
function startWorker(url: string, env: NodeJS.ProcessEnv, extra: string[] = [], file = workflow): Worker {
  const child = spawn(process.execPath, [cliPath, "worker", file, "--store", url, ...extra], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let err = "";
  child.stderr!.on("data", (d: Buffer) => (err += d.toString()));
  child.stdout!.resume();
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  return { child, stderr: () => err, exited };
}

async function until(what: string, check: () => boolean, timeoutMs = 60_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Many workers on one Postgres store (a cluster made for this run): a case whose worker was
 * SIGKILLed mid-effect is resumed by another, reconciling its open intent; a worker SIGSTOPped
 * past its lease is fenced off when it wakes. The ERP stand-in's own data shows each effect once.
 */
describe("workers on a Postgres store: leases, a killed worker's case resumed, a paused one fenced", function () {
  this.timeout(180_000);
  let erp: ErpServer;
  let dir: string;

  beforeEach(async () => {
    dir = tempDir();
    erp = await startErp({ dataDir: path.join(dir, "erp"), seed: supplierSeed(CASES) });
  });
  afterEach(() => erp.close());

  const dbOf = (url: string): string => new URL(url).pathname.slice(1);
  const openIntents = (url: string): number =>
    Number(pgCluster().psql("SELECT count(*) FROM casefile.intents WHERE status = 'open'", dbOf(url)));

  async function enqueueAll(url: string): Promise<void> {
    for (let i = 0; i < CASES; i++) {
      const r = await runCli([
        "enqueue",
        workflow,
        "--store",
        url,
        "--case",
        applicationId(i),
        "--input",
        JSON.stringify({ applicationId: applicationId(i) }),
      ]);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, new RegExp(`case ${applicationId(i)} queued`));
    }
  }

  /** Every case ended once, its checkpoints a gap-free chain, no intent left open; the ERP shows each effect once. */
  async function checkCases(url: string): Promise<void> {
    const queue = new PgQueue(url);
    try {
      assert.deepEqual(
        queue.list().map((c) => [c.caseId, c.status]),
        Array.from({ length: CASES }, (_, i) => [applicationId(i), "completed"]),
      );
    } finally {
      queue.close();
    }
    const data = erp.snapshot();
    const keys = new Map<string, number>();
    for (const w of data.log ?? []) if (w.idempotencyKey) keys.set(w.idempotencyKey, (keys.get(w.idempotencyKey) ?? 0) + 1);
    for (const [k, n] of keys) assert.equal(n, 1, `ERP applied ${k} ${n} times`);
    const suppliers = Object.values(data.collections.suppliers ?? {});
    for (let i = 0; i < CASES; i++) {
      const store = await PostgresStore.open(url, { caseId: applicationId(i), readOnly: true });
      try {
        const runs = store.listRuns();
        assert.equal(runs.length, 1, `${applicationId(i)}: one run`);
        assert.equal(runs[0]!.status, "completed");
        const finals = store.listEvents({ runId: runs[0]!.id }).filter((e) => e.type === "run_completed");
        assert.equal(finals.length, 1, `${applicationId(i)}: final exactly once`);
        store.listCheckpoints(runs[0]!.id).forEach((c, k) => assert.equal(c.superstep, k, `${applicationId(i)}: no superstep lost`));
        assert.deepEqual(store.listIntents({ status: "open" }), []);
      } finally {
        store.close();
      }
      assert.equal(suppliers.filter((s) => s.data.applicationId === applicationId(i)).length, 1, `${applicationId(i)}: one supplier`);
    }
  }

  it("a worker SIGKILLed with an intent open: another claims the case when the lease expires, reconciles the intent and finishes every case once", async () => {
    const url = createDatabase("killed");
    await enqueueAll(url);
    const env = { ERP_URL: erp.url };
    // The first worker pauses after each action, before its reference is recorded: killed there, the intent stays open.
    const a = startWorker(url, { ...env, CASEFILE_TEST_PAUSE_AFTER_ACT_MS: "3000" }, ["--lease-ms", "1000"]);
    await until("an open intent", () => openIntents(url) > 0);
    a.child.kill("SIGKILL");
    await a.exited;
    assert.ok(openIntents(url) > 0, "the kill left an intent open");

    const b = startWorker(url, env, ["--lease-ms", "1000", "--idle-exit-ms", "2500", "--concurrency", "2"]);
    assert.equal(await b.exited, 0, b.stderr());
    assert.match(b.stderr(), /case APP-0000: completed/);
    await checkCases(url);
    const store = await PostgresStore.open(url, { caseId: applicationId(0), readOnly: true });
    try {
      const reconciled = store
        .listEvents()
        .filter((e) => e.type === "intent" && /reconciled/.test(String((e.data as { what?: string }).what)));
      assert.ok(reconciled.length >= 1, "the open intent was reconciled before the case went on");
    } finally {
      store.close();
    }
  });

  it("a worker SIGSTOPped past its lease is fenced: after SIGCONT its commit is refused (LEASE_LOST) and it stops that case", async () => {
    const url = createDatabase("fenced");
    await enqueueAll(url);
    const env = { ERP_URL: erp.url };
    // Paused with an intent open and its action not yet sent: the zombie will send it after it wakes.
    const a = startWorker(url, { ...env, CASEFILE_TEST_PAUSE_BEFORE_ACT_MS: "1500" }, ["--lease-ms", "800", "--idle-exit-ms", "2000"]);
    await until("an open intent", () => openIntents(url) > 0);
    a.child.kill("SIGSTOP");
    try {
      const b = startWorker(url, env, ["--lease-ms", "800", "--idle-exit-ms", "2500"]);
      assert.equal(await b.exited, 0, b.stderr());
      await checkCases(url);
    } finally {
      a.child.kill("SIGCONT");
    }
    assert.equal(await a.exited, 0, a.stderr());
    assert.match(a.stderr(), /case APP-0000: LEASE_LOST: .*taken over/);
    await checkCases(url);
  });

  it("a worker runs every case it claims on its own two connections (its queue's and its cases'), however many cases", async () => {
    const url = createDatabase("connections");
    await enqueueAll(url);
    // Sessions Postgres established for this database; the query's own session is counted once it ends.
    const sessions = (): number =>
      Number(pgCluster().psql(`SELECT sessions FROM pg_stat_database WHERE datname = '${dbOf(url)}'`, dbOf(url)));
    const before = sessions();
    const w = startWorker(url, { ERP_URL: erp.url }, ["--idle-exit-ms", "500"]);
    assert.equal(await w.exited, 0, w.stderr());
    assert.equal(w.stderr().match(/: completed/g)?.length, CASES, w.stderr());
    assert.equal(sessions() - before - 1, 2, `${CASES} cases on two connections, not one per case`);
    await checkCases(url);
  });

  it("a case waiting for a person: respond --store records the answer and puts the case back on the queue, and a worker finishes it", async () => {
    const url = createDatabase("respond");
    const invoice = path.join(root, "examples/invoice/workflow.ts");
    const invoiceErp = await startErp({ dataDir: path.join(dir, "erp-invoice"), seed: invoiceSeed });
    try {
      const env = { ERP_URL: invoiceErp.url };
      const q = await runCli(["enqueue", invoice, "--store", url, "--case", "inv-1001", "--input", '{"invoiceId":"INV-1001"}']);
      assert.equal(q.code, 0, q.stderr);
      const first = startWorker(url, env, ["--idle-exit-ms", "1500"], invoice);
      assert.equal(await first.exited, 0, first.stderr());
      assert.match(first.stderr(), /case inv-1001: waiting/);
      const inspected = JSON.parse((await runCli(["inspect", "--store", url, "--case", "inv-1001", "--json"], env)).stdout) as {
        runs: { status: string; waiting: { id: string }[] }[];
      };
      assert.equal(inspected.runs[0]!.status, "waiting");

      const answer = await runCli(
        [
          "respond",
          "--store",
          url,
          "--case",
          "inv-1001",
          "--request",
          inspected.runs[0]!.waiting[0]!.id,
          "--answer",
          '{"decision":"reject","comment":"no"}',
        ],
        env,
      );
      assert.equal(answer.code, 0, answer.stderr);
      assert.match(answer.stdout, /answered \S+: run run-\w+ back on the queue at checkpoint/);
      const queue = new PgQueue(url);
      try {
        assert.deepEqual(
          queue.list().map((c) => c.status),
          ["queued"],
        );
      } finally {
        queue.close();
      }

      const second = startWorker(url, env, ["--idle-exit-ms", "1500"], invoice);
      assert.equal(await second.exited, 0, second.stderr());
      assert.match(second.stderr(), /case inv-1001: completed/);
      const store = await PostgresStore.open(url, { caseId: "inv-1001", readOnly: true });
      try {
        const [run] = store.listRuns();
        assert.equal(run!.status, "completed");
        assert.deepEqual(run!.outputs, [{ invoice: "INV-1001", outcome: "reject by reviewer" }]);
      } finally {
        store.close();
      }
    } finally {
      await invoiceErp.close();
    }
  });
});
