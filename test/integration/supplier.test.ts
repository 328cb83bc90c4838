import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { rmSync } from "node:fs";
import path from "node:path";
import { startErp, type ErpServer } from "../../examples/erp/server";
import { supplierSeed } from "../../examples/supplier/erpSeed";
import { SqlJsStore } from "../../src/casefile/sqlJsStore";
import type { EventRecord, IntentRecord } from "../../src/engine/records";
import { cliPath, root, runCli, tempDir } from "./helpers";

/**
 * The supplier-onboarding example through the real CLI: a clean onboarding, and the two ways
 * the application can change between the plan (the loader's read) and the first effect. The
 * change is made while no process runs the case: the run is stopped (SIGKILL) once its decision
 * is committed, the ERP record is changed through the admin route, and the case is resumed.
 */
describe("supplier onboarding example through the CLI", function () {
  this.timeout(120_000);
  const workflow = path.join(root, "examples", "supplier", "workflow.ts");
  let erp: ErpServer;
  let dir: string;
  let env: NodeJS.ProcessEnv;

  beforeEach(async () => {
    dir = tempDir("casefile-supplier-");
    erp = await startErp({ dataDir: path.join(dir, "erp"), seed: supplierSeed(3) });
    env = { ERP_URL: erp.url };
  });
  afterEach(async () => {
    await erp.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Runs a case until the checkpoint whose next step is the first effect, then kills the process. */
  async function runUntilFirstEffect(file: string, app: string): Promise<string> {
    const child = spawn(
      process.execPath,
      [cliPath, "run", workflow, "--case-file", file, "--input", JSON.stringify({ applicationId: app })],
      {
        env: { ...process.env, ...env, CASEFILE_EVENTS: "jsonl" },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let checkpoint: string | undefined;
    let buf = "";
    child.stdout.on("data", (d: Buffer) => {
      buf += d.toString("utf8");
      const lines = buf.split("\n");
      buf = lines.pop()!;
      for (const line of lines.filter((l) => l.startsWith("{"))) {
        const e = JSON.parse(line) as EventRecord;
        const data = e.data as { checkpoint?: string; pending?: string[] };
        if (e.type === "checkpoint" && data.pending?.includes("createSupplier")) {
          checkpoint = data.checkpoint;
          child.kill("SIGKILL");
        }
      }
    });
    const signal = await new Promise<NodeJS.Signals | null>((resolve) => child.on("close", (_c, s) => resolve(s)));
    assert.equal(signal, "SIGKILL", "the run was stopped before its first effect");
    assert.ok(checkpoint, "expected: checkpoint");
    return checkpoint;
  }

  async function intents(file: string): Promise<IntentRecord[]> {
    const store = await SqlJsStore.open(file, { readOnly: true });
    try {
      return store.listIntents();
    } finally {
      store.close();
    }
  }

  async function changeApplication(app: string, changes: Record<string, unknown>): Promise<void> {
    const current = erp.snapshot().collections.applications![app]!.data;
    const res = await fetch(`${erp.url}/admin/applications/${app}`, { method: "POST", body: JSON.stringify({ ...current, ...changes }) });
    assert.equal(res.status, 200);
  }

  it("onboards: creates the supplier, requests bank details and sets payment terms, each once", async () => {
    const file = path.join(dir, "APP-0000.casefile");
    const r = await runCli(["run", workflow, "--case-file", file, "--input", '{"applicationId":"APP-0000"}'], env);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /completed at superstep 7/);
    const done = await intents(file);
    assert.deepEqual(done.map((i) => [i.executor, i.status]).sort(), [
      ["createSupplier", "done"],
      ["requestBankDetails", "done"],
      ["setPaymentTerms", "done"],
    ]);
    const data = erp.snapshot();
    // Bank request and payment terms run in the same superstep, so their order varies.
    assert.deepEqual((data.log ?? []).map((w) => `${w.method} ${w.collection}/${w.id} v${w.version}`).sort(), [
      "PATCH suppliers/SUP-1001 v2",
      "POST bank-requests/BAN-1001 v1",
      "POST suppliers/SUP-1001 v1",
    ]);
    assert.equal(data.collections.suppliers!["SUP-1001"]!.data.paymentTermsDays, 30);
  });

  it("stops for replanning when the tax number changed before the supplier was created, keeping both versions", async () => {
    const file = path.join(dir, "APP-0001.casefile");
    const checkpoint = await runUntilFirstEffect(file, "APP-0001");
    await changeApplication("APP-0001", { taxNumber: "DE000000000" });
    const r = await runCli(["resume", file, "--checkpoint", checkpoint], env);
    assert.equal(r.code, 1, "a case stopped for replanning is not a success");
    assert.match(r.stdout, /needs_replanning/);
    assert.match(
      r.stderr,
      /NEEDS_REPLANNING: .*effect "createSupplier" \(intent run-[0-9a-f]+:createSupplier:5, create supplier on erp:suppliers\) did not act: the live record changed in taxNumber/,
    );
    const [intent] = await intents(file);
    assert.equal(intent!.status, "needs_replanning");
    const drift = intent!.drift as unknown as {
      basis: { version: string; record: { taxNumber: string } };
      live: { version: string; record: { taxNumber: string } };
    };
    assert.deepEqual([drift.basis.version, drift.live.version], ['"v1"', '"v2"']);
    assert.notEqual(drift.basis.record.taxNumber, drift.live.record.taxNumber);
    assert.equal(drift.live.record.taxNumber, "DE000000000");
    assert.deepEqual(erp.snapshot().collections.suppliers ?? {}, {}, "no supplier was created");
  });

  it("goes ahead, and records the drift, when only the address changed", async () => {
    const file = path.join(dir, "APP-0002.casefile");
    const checkpoint = await runUntilFirstEffect(file, "APP-0002");
    await changeApplication("APP-0002", { address: "Kaiserkai 1, 20457 Hamburg" });
    const r = await runCli(["resume", file, "--checkpoint", checkpoint], env);
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      r.stderr,
      /warning: effect "createSupplier" .* changed \(version "v1" -> "v2"; address\) in fields it does not rely on; acting/,
    );
    const created = (await intents(file)).find((i) => i.executor === "createSupplier")!;
    assert.equal(created.status, "done");
    assert.equal((created.drift as { kind?: string }).kind, "unrelated_change");
    assert.equal(Object.keys(erp.snapshot().collections.suppliers ?? {}).length, 1);
  });
});
