import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { startErp, type ErpServer } from "../../../examples/erp/server";
import { invoiceSeed } from "../../../examples/invoice/erpData";
import { supplierSeed } from "../../../examples/supplier/erpSeed";
import { lockPath } from "../../../src/casefile/lock";
import { SqlJsStore } from "../../../src/casefile/sqlJsStore";
import { RunControl } from "../../../src/engine/control";
import { Engine } from "../../../src/engine/engine";
import type { CommitBatch } from "../../../src/engine/store";
import type { EventRecord, Json } from "../../../src/engine/records";
import type { Workflow } from "../../../src/engine/workflow";
import { createProvider } from "../../../src/engine/providers/index";
import type { ModelProvider } from "../../../src/engine/model";
import { loadWorkflow } from "../../../src/runner/bundle";
import { PowerLoss, PowerLossFs } from "./helpers/powerLossFs";

/**
 * Power loss, simulated. The invoice and supplier examples run in this process against their ERP
 * stand-in on loopback, the case file written through PowerLossFs. One clean run counts the
 * file-system calls; then, for every one of them, a run loses power at that call, and the files a
 * reboot would find (only what was fsync'd, or everything written: both are possible) are opened
 * again with the real file system and the case is driven to its end. At every point:
 *  - every event the engine emitted (it emits only after the commit is durable) is in the file;
 *  - no event is in the file that was not in a batch handed to commit (a half-written record is never accepted);
 *  - the case ends as the clean run did, and the ERP's log holds each effect once (none repeated, none lost).
 * This is what SIGKILL cannot test: a killed process's writes survive in the page cache.
 */

const root = path.resolve(__dirname, "../../..");

interface Scenario {
  name: string;
  workflowFile: string;
  seed: Record<string, Record<string, Record<string, unknown>>>;
  input: Json;
  /** A person's answer to the run's review request, when it waits for one. */
  answer?: Json;
  /** Writes the clean run makes to the ERP. */
  effects: number;
}

const SCENARIOS: Scenario[] = [
  {
    name: "invoice INV-1001 (escalated to a person, answered)",
    workflowFile: path.join(root, "examples/invoice/workflow.ts"),
    seed: invoiceSeed,
    input: { invoiceId: "INV-1001" },
    answer: { decision: "reject", comment: "Price rise not agreed" },
    effects: 0,
  },
  {
    name: "supplier APP-0000 (three effects)",
    workflowFile: path.join(root, "examples/supplier/workflow.ts"),
    seed: supplierSeed(2),
    input: { applicationId: "APP-0000" },
    effects: 3,
  },
];

const FINAL = new Set(["completed", "failed", "needs_replanning", "stopped"]);

const eventKey = (e: EventRecord): string => `${e.runId}/${e.superstep}/${e.type}/${JSON.stringify(e.data)}`;

interface Outcome {
  statuses: string[];
  /** Idempotency keys of the ERP's writes, in order. */
  erpWrites: string[];
}

class Case {
  /** Events the engine emitted after their commit returned: reported durable. */
  readonly emitted: EventRecord[] = [];
  /** Events emitted with no commit returned for them: live notices (superstep_started), or a bug if a commit follows. */
  readonly live: EventRecord[] = [];
  readonly handedToCommit = new Set<string>();
  private readonly durable = new Set<string>();

  constructor(
    readonly scenario: Scenario,
    readonly workflow: Workflow,
    readonly provider: ModelProvider,
  ) {}

  /**
   * Drives the case in `store` to its end as a person at the CLI would: starts the run, answers
   * its request, resumes whatever is unfinished from its latest checkpoint.
   */
  async drive(store: SqlJsStore): Promise<void> {
    const commit = store.commit.bind(store);
    store.commit = (batch: CommitBatch) => {
      for (const e of batch.events ?? []) this.handedToCommit.add(eventKey(e));
      commit(batch);
      for (const e of batch.events ?? []) this.durable.add(eventKey(e));
    };
    const engine = new Engine(this.workflow, store, {
      provider: this.provider,
      control: new RunControl(),
      onEvent: (e) => (this.durable.has(eventKey(e)) ? this.emitted : this.live).push(e),
    });
    for (let round = 0; round < 6; round++) {
      const runs = store.listRuns();
      if (runs.length === 0) {
        await engine.run(this.scenario.input);
        continue;
      }
      const open = runs.filter((r) => !FINAL.has(r.status) && r.status !== "superseded");
      if (open.length === 0) return;
      const run = open[0]!;
      const cp = store.latestCheckpoint(run.id)!;
      if (run.status === "waiting" && cp.waiting[0]) {
        await engine.respond(cp.waiting[0].id, this.scenario.answer ?? null);
      } else {
        await engine.resume(cp.id);
      }
    }
    assert.fail(`${this.scenario.name}: the case did not end within 6 commands: ${JSON.stringify(store.listRuns().map((r) => r.status))}`);
  }
}

function outcome(file: string, erp: ErpServer): Promise<Outcome> {
  return SqlJsStore.open(file, { readOnly: true }).then((store) => {
    try {
      return {
        statuses: store.listRuns().map((r) => r.status),
        // Keys name the run (random id): a repeat by a branch run would still show as a second write.
        erpWrites: (erp.snapshot().log ?? []).map((w) =>
          `${w.method} ${w.collection} ${w.idempotencyKey ?? "-"}`.replace(/run-[0-9a-f]+/, "run"),
        ),
      };
    } finally {
      store.close();
    }
  });
}

/** A power loss took the lock's process with it: after the reboot its boot id is another one. */
function rebootLock(file: string): void {
  let text: string;
  try {
    text = readFileSync(lockPath(file), "utf8");
  } catch {
    return;
  }
  const owner = JSON.parse(text) as Record<string, unknown>;
  writeFileSync(lockPath(file), JSON.stringify({ ...owner, bootId: "before-the-power-loss" }));
}

describe("power loss at every file-system call of the examples (simulated)", function () {
  this.timeout(120_000);
  let work: string;
  let erp: ErpServer;
  let savedEnv: string | undefined;

  before(() => {
    work = mkdtempSync(path.join(os.tmpdir(), "casefile-powerloss-"));
    savedEnv = process.env.ERP_URL;
  });
  after(() => {
    if (savedEnv === undefined) delete process.env.ERP_URL;
    else process.env.ERP_URL = savedEnv;
    rmSync(work, { recursive: true, force: true });
  });
  afterEach(async () => {
    await erp?.close();
  });

  for (const scenario of SCENARIOS) {
    it(`${scenario.name}: every durable superstep survives, nothing half-written is read, no effect repeats`, async () => {
      const { workflow } = await loadWorkflow(scenario.workflowFile);
      const provider = createProvider({ kind: "scripted" }, { workflowPath: scenario.workflowFile, env: {} });
      const slug = scenario.name.split(" ")[1]!;
      erp = await startErp({ dataDir: path.join(work, `${slug}-erp`), seed: scenario.seed });
      process.env.ERP_URL = erp.url;
      const seeded = erp.snapshot();

      // The clean run: how many calls, and how the case ends.
      const cleanDir = path.join(work, `${slug}-clean`);
      const cleanFs = new PowerLossFs();
      const clean = new Case(scenario, workflow, provider);
      rmSync(cleanDir, { recursive: true, force: true });
      mkdirSync(cleanDir);
      const cleanFile = path.join(cleanDir, "case.casefile");
      const s0 = await SqlJsStore.open(cleanFile, { create: true, fs: cleanFs, compactAtBytes: 1 });
      try {
        await clean.drive(s0);
      } finally {
        s0.close();
      }
      const expected = await outcome(cleanFile, erp);
      assert.ok(
        expected.statuses.every((s) => FINAL.has(s)),
        `clean run ended ${JSON.stringify(expected.statuses)}`,
      );
      assert.equal(expected.erpWrites.length, scenario.effects, `the clean run's ERP writes: ${JSON.stringify(expected.erpWrites)}`);
      const points = cleanFs.calls.length;
      assert.ok(points > 20, `the clean run made only ${points} file-system calls`);
      assert.ok(
        cleanFs.calls.some((c) => c.op === "rename"),
        "the clean run never compacted mid-run; the crash points would miss the compaction",
      );

      for (let at = 0; at < points; at++) {
        const call = cleanFs.calls[at]!;
        const where = `${scenario.name}, power lost at call ${at} of ${points} (${call.op} ${call.file}${call.detail ? " " + call.detail : ""})`;
        erp.restore(seeded);
        const dir = path.join(work, `${slug}-${at}`);
        mkdirSync(dir);
        const file = path.join(dir, "case.casefile");
        const fs = new PowerLossFs();
        fs.crashAt = at;
        const crashed = new Case(scenario, workflow, provider);
        let store: SqlJsStore | undefined;
        try {
          store = await SqlJsStore.open(file, { create: true, fs, compactAtBytes: 1 });
          await crashed.drive(store);
        } catch (e) {
          if (!fs.crashed) throw e;
        } finally {
          try {
            store?.close();
          } catch (e) {
            if (!(e instanceof PowerLoss)) throw e;
          }
        }
        assert.ok(fs.crashed, `${where}: the run never reached the call (${fs.calls.length} calls made)`);
        const erpAtCrash = erp.snapshot();

        for (const mode of ["durable", "flushed"] as const) {
          const after = path.join(work, `${slug}-${at}-${mode}`);
          const files = fs.materialize(dir, after, mode);
          const reopened = path.join(after, "case.casefile");
          if (!files.includes("case.casefile")) {
            assert.deepEqual(crashed.emitted, [], `${where} (${mode}): events were emitted but the case file did not survive`);
          }
          rebootLock(reopened);
          erp.restore(erpAtCrash);
          const recovery = new Case(scenario, workflow, provider);
          let store2: SqlJsStore;
          try {
            store2 = await SqlJsStore.open(reopened, { create: true });
          } catch (e) {
            assert.fail(`${where} (${mode}): the case file does not open again: ${(e as Error).message}`);
          }
          try {
            const inFile = new Set(store2.listEvents().map(eventKey));
            const lost = crashed.emitted.filter((e) => !inFile.has(eventKey(e)));
            assert.deepEqual(
              lost.map((e) => `${e.type} (superstep ${e.superstep})`),
              [],
              `${where} (${mode}): events emitted before the crash are missing from the file`,
            );
            const early = crashed.live.filter((e) => crashed.handedToCommit.has(eventKey(e)));
            assert.deepEqual(
              early.map((e) => `${e.type} (superstep ${e.superstep})`),
              [],
              `${where} (${mode}): events were emitted before their commit was durable`,
            );
            const invented = [...inFile].filter((k) => !crashed.handedToCommit.has(k));
            assert.deepEqual(invented, [], `${where} (${mode}): the file holds events no commit was handed`);
            await recovery.drive(store2);
          } finally {
            store2.close();
          }
          const got = await outcome(reopened, erp);
          assert.deepEqual(got, expected, `${where} (${mode}): the case ended otherwise than the clean run`);
          rmSync(after, { recursive: true, force: true });
        }
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }
});
