import assert from "node:assert/strict";
import { copyFileSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { z } from "zod";
import { startErp, type ErpServer, type ErpWrite } from "../../../examples/erp/server";
import { MemoryStore } from "../../../src/casefile/memoryStore";
import { SqlJsStore } from "../../../src/casefile/sqlJsStore";
import { compareIntents, comparePrecondition, intentConflict, intentKey } from "../../../src/engine/effectCompare";
import { intent } from "../casefile/builders";
import { PreconditionFailedError } from "../../../src/engine/effectStep";
import { Engine } from "../../../src/engine/engine";
import { code, edge, effect, fact, loader, type LiveRecord, type PlannedEffect } from "../../../src/engine/executors";
import { stableHash } from "../../../src/engine/hash";
import type { EventRecord, IntentRecord, Json } from "../../../src/engine/records";
import type { CaseStore } from "../../../src/engine/store";
import { defineWorkflow } from "../../../src/engine/workflow";

/**
 * Effects against the real ERP stand-in on loopback: a loader reads vendor V-1 (a fact with its
 * ETag); an effect then sets its payment terms with a conditional PATCH, relying on the tax
 * number only. Tests change the vendor behind the workflow's back through the ERP's admin route.
 */

const Vendor = z.object({ name: z.string(), taxNumber: z.string(), address: z.string(), paymentTermsDays: z.number().optional() });
const seed = { vendors: { "V-1": { name: "Acme Pallets", taxNumber: "DE111", address: "Hafenstrasse 1" } } };

interface Target {
  url: string;
  /** Runs after the loader read the vendor: a change by someone else between plan and act. */
  afterLoad?: () => Promise<void>;
  /** Runs inside `check`, after the live read: a write by someone else landing between check and act. */
  afterCheck?: () => Promise<void>;
  /** Makes the act fail the way a broken system would. */
  failAct?: boolean;
  /** Makes the idempotency-key lookup fail (the ERP's lookup route down). */
  failReconcile?: boolean;
  /** Makes the act fail after its write reached the ERP (the answer lost on the way back). */
  loseAnswer?: boolean;
  /** Counts the calls of act, when set (a system without idempotency keys would take each as a new write). */
  acts?: number;
  /** The intents reconcile was handed, when set. */
  lookedUp?: PlannedEffect[];
}

async function http(
  method: string,
  url: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: unknown; etag: string }> {
  const res = await fetch(url, {
    method,
    headers: { "content-type": "application/json", ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json(), etag: res.headers.get("etag") ?? "" };
}

function workflow(target: Target) {
  return defineWorkflow({
    name: "vendor-terms",
    version: 1,
    state: { vendor: fact(Vendor), terms: z.object({ id: z.string(), version: z.number() }) },
    start: "load",
    executors: {
      load: loader({
        owns: ["vendor"],
        async run(ctx) {
          const r = await http("GET", `${target.url}/vendors/V-1`);
          ctx.fact("vendor", Vendor.parse((r.body as { data: unknown }).data), { source: "erp:vendors/V-1", sourceVersion: r.etag });
          await target.afterLoad?.();
          return "loaded";
        },
      }),
      setTerms: effect({
        reads: ["vendor"],
        owns: ["terms"],
        intent: (s) => ({
          action: "set payment terms",
          target: "erp:vendors/V-1",
          payload: { paymentTermsDays: 45 },
          reliesOn: { taxNumber: s.vendor.value.taxNumber },
          basis: { version: s.vendor.provenance.sourceVersion, record: s.vendor.value },
        }),
        async check() {
          const r = await http("GET", `${target.url}/vendors/V-1`);
          const live: LiveRecord = { version: r.etag, record: Vendor.parse((r.body as { data: unknown }).data) };
          await target.afterCheck?.();
          return live;
        },
        async act(intent) {
          if (target.acts !== undefined) target.acts++;
          if (target.failAct) {
            const r = await http("PATCH", `${target.url}/vendors/V-404`, intent.payload, { "idempotency-key": intent.key });
            throw new Error(`ERP answered ${r.status}: ${JSON.stringify(r.body)}`);
          }
          const r = await http("PATCH", `${target.url}/vendors/V-1`, intent.payload, {
            "idempotency-key": intent.key,
            "if-match": intent.expectedVersion ?? "",
          });
          if (r.status === 412) {
            const cur = (r.body as { current: { version: number; data: Json } }).current;
            throw new PreconditionFailedError("vendor V-1 changed after the check", { version: `"v${cur.version}"`, record: cur.data });
          }
          if (target.loseAnswer) throw new Error("connection reset before the ERP's answer arrived");
          const rec = r.body as { id: string; version: number };
          return { id: rec.id, version: rec.version };
        },
        async reconcile(intent) {
          target.lookedUp?.push(intent);
          if (target.failReconcile) throw new Error("ERP idempotency lookup unavailable (503)");
          const r = await http("GET", `${target.url}/idempotency/${encodeURIComponent(intent.key)}`);
          if (r.status === 404) return null;
          const rec = r.body as { id: string; version: number };
          return { id: rec.id, version: rec.version };
        },
        done(reference, ctx) {
          ctx.write("terms", reference as { id: string; version: number });
        },
      }),
    },
    edges: [edge("load", "setTerms")],
  });
}

/** The ERP's own log of writes to V-1 made by the workflow (not by the admin route). */
function workflowWrites(erp: ErpServer): ErpWrite[] {
  return (erp.snapshot().log ?? []).filter((w) => w.collection === "vendors" && w.method !== "ADMIN");
}

function onlyIntent(store: CaseStore): IntentRecord {
  const intents = store.listIntents();
  assert.equal(intents.length, 1, `expected one intent, found ${intents.map((i) => i.id).join(", ")}`);
  return intents[0]!;
}

describe("effects: precondition check against the live record", () => {
  let erp: ErpServer;
  let target: Target;
  beforeEach(async () => {
    erp = await startErp({ seed });
    target = { url: erp.url };
  });
  afterEach(async () => {
    await erp.close();
    rmSync(path.dirname(erp.dataFile), { recursive: true, force: true });
  });

  it("acts once, with If-Match and the idempotency key, when the record is unchanged", async () => {
    const store = new MemoryStore();
    const heard: string[] = [];
    const result = await new Engine(workflow(target), store, {
      onEvent: (e) => e.type === "intent" && heard.push((e.data as { what: string }).what),
    }).run();
    assert.equal(result.status, "completed");
    assert.deepEqual(heard, ["opened", "done"], "listeners (the runner, the editor) hear intents as they become durable");
    const intent = onlyIntent(store);
    assert.equal(intent.status, "done");
    assert.deepEqual(intent.reference, { id: "V-1", version: 2 });
    assert.equal(intent.expectedVersion, '"v1"', "the act wrote against the version the check saw");
    assert.equal(intent.drift, undefined, "nothing changed, so no drift is recorded");
    assert.deepEqual(workflowWrites(erp), [
      { at: workflowWrites(erp)[0]!.at, method: "PATCH", collection: "vendors", id: "V-1", version: 2, idempotencyKey: intent.id },
    ]);
    assert.equal(erp.snapshot().collections.vendors!["V-1"]!.data.paymentTermsDays, 45);
    assert.deepEqual(
      store
        .listEvents({ runId: result.runId })
        .filter((e) => e.type === "intent")
        .map((e) => (e.data as { what: string }).what),
      ["opened", "done"],
    );
  });

  it("acts and records the change when the record changed only in a field it does not rely on", async () => {
    const store = new MemoryStore();
    // The address changes after the loader read the vendor and before the effect's check.
    target.afterLoad = async () => {
      await http("POST", `${erp.url}/admin/vendors/V-1`, { ...seed.vendors["V-1"], address: "Kaiserkai 9" });
    };
    const result = await new Engine(workflow(target), store).run();
    assert.equal(result.status, "completed");
    const intent = onlyIntent(store);
    assert.equal(intent.status, "done");
    const drift = intent.drift as unknown as { kind: string; basis: LiveRecord; live: LiveRecord; changed: string[] };
    assert.equal(drift.kind, "unrelated_change");
    assert.deepEqual(drift.changed, ["address"]);
    assert.equal(drift.basis.version, '"v1"');
    assert.equal(drift.live.version, '"v2"');
    assert.equal((drift.basis.record as { address: string }).address, "Hafenstrasse 1");
    assert.equal((drift.live.record as { address: string }).address, "Kaiserkai 9");
    assert.equal(intent.expectedVersion, '"v2"', "the conditional write targets the version it checked");
    const rec = erp.snapshot().collections.vendors!["V-1"]!;
    assert.equal(rec.data.address, "Kaiserkai 9", "the PATCH merged: the outside change is kept");
    assert.equal(rec.data.paymentTermsDays, 45);
    const warnings = store.listEvents({ runId: result.runId }).filter((e) => e.type === "warning");
    assert.ok(
      warnings.some((w) =>
        /changed \(version "v1" -> "v2"; address\) in fields it does not rely on/.test(String((w.data as { message: string }).message)),
      ),
      "the change is logged as a warning event",
    );
  });

  it("does not act, and stops the case for replanning with both versions, when a relied-on field changed", async () => {
    const store = new MemoryStore();
    target.afterLoad = async () => {
      await http("POST", `${erp.url}/admin/vendors/V-1`, { ...seed.vendors["V-1"], taxNumber: "DE999" });
    };
    const result = await new Engine(workflow(target), store).run();
    assert.equal(result.status, "needs_replanning");
    assert.equal(result.error?.code, "NEEDS_REPLANNING");
    assert.match(
      result.error!.message,
      /effect "setTerms" \(intent run-[0-9a-f]+:setTerms:2, set payment terms on erp:vendors\/V-1\) did not act: the live record changed in taxNumber/,
    );
    assert.equal(store.getRun(result.runId)!.status, "needs_replanning");
    assert.deepEqual(workflowWrites(erp), [], "the ERP took no write from the workflow");
    const intent = onlyIntent(store);
    assert.equal(intent.status, "needs_replanning");
    const drift = intent.drift as unknown as {
      kind: string;
      basis: LiveRecord;
      live: LiveRecord;
      reliedOnChanged: { path: string; expected: Json; actual: Json }[];
    };
    assert.equal(drift.kind, "relied_on_change");
    assert.deepEqual(drift.reliedOnChanged, [{ path: "taxNumber", expected: "DE111", actual: "DE999" }]);
    assert.deepEqual([drift.basis.version, drift.live.version], ['"v1"', '"v2"']);
    assert.deepEqual(
      [(drift.basis.record as { taxNumber: string }).taxNumber, (drift.live.record as { taxNumber: string }).taxNumber],
      ["DE111", "DE999"],
    );
    const types = store.listEvents({ runId: result.runId }).map((e) => e.type);
    assert.equal(types[types.length - 1], "run_needs_replanning");
  });

  it("stops for replanning, keeping plan, checked and current versions, when the conditional write gets 412", async () => {
    const store = new MemoryStore();
    // Someone renames the vendor after the check: the relied-on tax number is fine, so the
    // effect acts, but its If-Match is stale by then.
    target.afterCheck = async () => {
      await http("POST", `${erp.url}/admin/vendors/V-1`, { ...seed.vendors["V-1"], name: "Acme Pallets Ltd" });
    };
    const result = await new Engine(workflow(target), store).run();
    assert.equal(result.status, "needs_replanning");
    assert.match(result.error!.message, /refused the conditional write at version "v1"; it now holds "v2"/);
    const intent = onlyIntent(store);
    assert.equal(intent.status, "needs_replanning");
    assert.equal(intent.error?.code, "PRECONDITION_FAILED");
    const drift = intent.drift as unknown as { kind: string; basis: LiveRecord; checked: LiveRecord; live: LiveRecord };
    assert.equal(drift.kind, "conflict");
    assert.deepEqual([drift.basis.version, drift.checked.version, drift.live.version], ['"v1"', '"v1"', '"v2"']);
    assert.equal((drift.live.record as { name: string }).name, "Acme Pallets Ltd");
    assert.deepEqual(workflowWrites(erp), [], "the refused write changed nothing");
    assert.equal(erp.snapshot().collections.vendors!["V-1"]!.data.paymentTermsDays, undefined);
  });

  it("records a failed act on the intent with its error and fails the case naming executor and key", async () => {
    const store = new MemoryStore();
    target.failAct = true;
    const result = await new Engine(workflow(target), store).run();
    assert.equal(result.status, "failed");
    assert.equal(result.error?.code, "EFFECT_FAILED");
    assert.equal(result.error?.executor, "setTerms");
    const intent = onlyIntent(store);
    assert.equal(intent.status, "failed");
    assert.match(
      intent.error!.message,
      new RegExp(`effect "setTerms" \\(intent ${intent.id}, set payment terms on erp:vendors/V-1\\) failed in act: ERP answered 404`),
    );
    assert.match(result.error!.message, new RegExp(intent.id));
  });

  it("replans on a branch: after a person patches the plan's basis, the same intent checks again and acts", async () => {
    const store = new MemoryStore();
    target.afterLoad = async () => {
      await http("POST", `${erp.url}/admin/vendors/V-1`, { ...seed.vendors["V-1"], taxNumber: "DE999" });
    };
    const stopped = await new Engine(workflow(target), store).run();
    target.afterLoad = undefined;
    assert.equal(stopped.status, "needs_replanning");
    // The person looks at both versions, accepts the new tax number and resumes with state patched to the live record.
    const live = await http("GET", `${erp.url}/vendors/V-1`);
    const patched = {
      value: (live.body as { data: Json }).data,
      provenance: { source: "erp:vendors/V-1", sourceVersion: live.etag, readAt: new Date().toISOString() },
    };
    const resumed = await new Engine(workflow(target), store).resume(stopped.checkpointId, {
      patch: { vendor: patched as unknown as Json },
    });
    assert.equal(resumed.status, "completed");
    assert.notEqual(resumed.runId, stopped.runId, "resuming a case stopped for replanning starts a branch");
    // The stopped run's intent never acted, so it holds no claim on the key: the branch acts under
    // it with its own record, and the parent's record stays as the person found it.
    const [parent, intent] = [store.listIntents({ runId: stopped.runId }), store.listIntents({ runId: resumed.runId })];
    assert.deepEqual(
      parent.map((i) => [i.status, i.reliesOn]),
      [["needs_replanning", { taxNumber: "DE111" }]],
    );
    assert.equal(intent.length, 1);
    assert.equal(intent[0]!.status, "done");
    assert.deepEqual(intent[0]!.reliesOn, { taxNumber: "DE999" });
    assert.equal(intent[0]!.key, parent[0]!.id, "the branch acted under the case's key");
    assert.equal(workflowWrites(erp).length, 1);
    assert.equal(workflowWrites(erp)[0]!.idempotencyKey, parent[0]!.id);
  });
});

describe("effects: open intents are reconciled on resume before anything else runs", () => {
  let dir: string;
  let erp: ErpServer;
  beforeEach(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "casefile-effects-"));
    erp = await startErp({ seed, dataDir: path.join(dir, "erp") });
  });
  afterEach(async () => {
    await erp.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /**
   * Runs the workflow on a case file and, at the test hook's pause, copies the case file and its
   * journal: exactly what a process killed at that moment would leave on disk.
   */
  async function crashCopyAt(hook: "BEFORE" | "AFTER", target: Target, onPause?: () => Promise<void> | void): Promise<string> {
    const file = path.join(dir, "case.casefile");
    const crashed = path.join(dir, "crashed.casefile");
    const store = await SqlJsStore.open(file, { create: true });
    let paused: Promise<void> | undefined;
    try {
      await new Engine(workflow(target), store, {
        hooks: hook === "AFTER" ? { pauseAfterActMs: 50 } : { pauseBeforeActMs: 50 },
        log: (m) => {
          if (!m.includes("test hook")) return;
          copyFileSync(file, crashed);
          if (existsSync(`${file}.journal`)) copyFileSync(`${file}.journal`, `${crashed}.journal`);
          paused = Promise.resolve(onPause?.());
        },
      }).run();
    } finally {
      store.close();
    }
    await paused;
    assert.ok(existsSync(crashed), "the hook paused the effect");
    return crashed;
  }

  // Kills the mutant "no reconciliation on resume" (engine.ts resume skipping resolveOpenIntents), with "unresolvable" below.
  it("a failed act whose write did reach the ERP is looked up by its key when the step runs again, and not repeated", async () => {
    // Kills the mutants of effectStep.ts's own-intent branch (`record.status === "open" || "failed"`,
    // `found !== null`): without the look-up the resumed step would write to the ERP a second time.
    const store = new MemoryStore();
    const target: Target = { url: erp.url, loseAnswer: true, acts: 0 };
    const failed = await new Engine(workflow(target), store).run();
    assert.equal(failed.status, "failed", failed.error?.message);
    assert.equal(onlyIntent(store).status, "failed");
    assert.equal(workflowWrites(erp).length, 1, "the write reached the ERP; only its answer was lost");
    target.loseAnswer = false;
    const resumed = await new Engine(workflow(target), store).resume(failed.checkpointId);
    assert.equal(resumed.status, "completed", resumed.error?.message);
    assert.equal(workflowWrites(erp).length, 1, "not written again");
    assert.equal(
      target.acts,
      1,
      "act was not called again (the ERP's own idempotency would hide a second call; another system's might not)",
    );
    const intent = onlyIntent(store);
    assert.equal(intent.status, "done");
    assert.deepEqual(intent.reference, { id: "V-1", version: 2 }, "the reference the look-up found");
    assert.deepEqual(store.readValues(store.latestCheckpoint(resumed.runId)!.keys).terms, { id: "V-1", version: 2 });
  });

  // With the test above, kills the mutants of effectStep.ts's own-intent look-up (`found !== null` as true).
  it("a failed act that never reached the ERP is acted on when the step runs again, once", async () => {
    const store = new MemoryStore();
    const target: Target = { url: erp.url, failAct: true, acts: 0 };
    const failed = await new Engine(workflow(target), store).run();
    assert.equal(failed.status, "failed", failed.error?.message);
    assert.equal(workflowWrites(erp).length, 0, "nothing reached the vendor");
    target.failAct = false;
    const resumed = await new Engine(workflow(target), store).resume(failed.checkpointId);
    assert.equal(resumed.status, "completed", resumed.error?.message);
    assert.equal(target.acts, 2, "the failed act, then one more after the look-up found nothing");
    assert.equal(workflowWrites(erp).length, 1, "written once");
    assert.equal(onlyIntent(store).status, "done");
    assert.deepEqual(store.readValues(store.latestCheckpoint(resumed.runId)!.keys).terms, { id: "V-1", version: 2 });
  });

  it("found: a crash after the action is resolved by the key, recorded done, and not acted on again", async () => {
    const target: Target = { url: erp.url, acts: 0 };
    const crashed = await crashCopyAt("AFTER", target);
    assert.equal(workflowWrites(erp).length, 1, "the action reached the ERP before the crash");

    const store = await SqlJsStore.open(crashed);
    try {
      const open = onlyIntent(store);
      assert.equal(open.status, "open", "the crash left the intent open");
      const run = store.listRuns()[0]!;
      const latest = store.latestCheckpoint(run.id)!;
      const logs: string[] = [];
      const heard: string[] = [];
      const result = await new Engine(workflow(target), store, {
        log: (m) => logs.push(m),
        onEvent: (e) => heard.push(e.type === "intent" ? `intent ${(e.data as { what: string }).what}` : e.type),
      }).resume(latest.id);
      assert.equal(result.status, "completed");
      assert.equal(result.runId, run.id, "the killed run continues");
      const intent = onlyIntent(store);
      assert.equal(intent.status, "done");
      assert.deepEqual(intent.reference, { id: "V-1", version: 2 });
      assert.equal(workflowWrites(erp).length, 1, "the ERP took exactly one write");
      // Mutant killed: a found intent acted on again (the ERP's idempotency hides it from its log).
      assert.equal(target.acts, 1, "act ran once, before the crash; the resume only looked the key up");
      const events = store.listEvents({ runId: run.id });
      const reconciled = events.find((e) => e.type === "intent" && (e.data as { what: string }).what === "reconciled: found");
      const firstAfter = events.find((e) => e.type === "step_completed" && e.superstep === latest.superstep + 1);
      assert.ok(reconciled && firstAfter && reconciled.seq! < firstAfter.seq!, "the intent was resolved before the superstep ran");
      // kills engine.ts:132 ArrowFunction () => undefined (resume's reconciliation emitting nothing):
      // a listener (the editor's run view) hears the intent resolved, before the superstep starts
      assert.ok(
        heard.includes("intent reconciled: found") && heard.indexOf("intent reconciled: found") < heard.indexOf("superstep_started"),
        `the listener heard the reconciliation before the superstep: ${JSON.stringify(heard)}`,
      );
      assert.ok(
        logs.some((l) => /already done; not acting again/.test(l)),
        "the step, run again, found its intent done",
      );
      // kills effectStep.ts:258 StringLiteral (the look-up's log line as ""): the log says what the look-up found
      assert.ok(
        logs.includes(`[setTerms] intent ${open.id}: found by its key in ${open.target}; recorded done`),
        `no log said the key was found; logs: ${JSON.stringify(logs)}`,
      );
      assert.deepEqual(store.readValues(store.latestCheckpoint(run.id)!.keys).terms, { id: "V-1", version: 2 });
    } finally {
      store.close();
    }
  });

  // Kills the mutant "an open intent that cannot be resolved is ignored" (engine.ts resume, the
  // `if (unresolved) return this.fail(...)` line removed): the run would go on into a superstep
  // while the effect's outcome is unknown.
  it("unresolvable: when the key cannot be looked up, the resume fails naming the executor, runs no superstep and leaves the intent open", async () => {
    const target: Target = { url: erp.url };
    const crashed = await crashCopyAt("AFTER", target);
    assert.equal(workflowWrites(erp).length, 1, "the action reached the ERP before the crash");
    target.failReconcile = true;
    let store = await SqlJsStore.open(crashed);
    let runId: string;
    try {
      const run = store.listRuns()[0]!;
      runId = run.id;
      const latest = store.latestCheckpoint(run.id)!;
      const events: EventRecord[] = [];
      const result = await new Engine(workflow(target), store, { onEvent: (e) => events.push(e) }).resume(latest.id);
      assert.equal(result.status, "failed", `the resume ended ${result.status}`);
      // kills engine.ts:139 ArithmeticOperator (cp.superstep - 1): the failure is the superstep the
      // resume would have run, the one after the checkpoint it rests at
      assert.equal(result.failedAt, latest.superstep + 1, "failed at the superstep after the checkpoint");
      assert.deepEqual(
        events.filter((e) => e.type === "run_failed").map((e) => [e.superstep, (e.data as { checkpoint: string }).checkpoint]),
        [[latest.superstep + 1, latest.id]],
        "run_failed at the superstep after the checkpoint, naming the checkpoint",
      );
      assert.equal(result.error?.executor, "setTerms", `error: ${JSON.stringify(result.error)}`);
      assert.match(result.error?.message ?? "", /executor "setTerms" failed: .*ERP idempotency lookup unavailable \(503\)/);
      assert.deepEqual(
        events.filter((e) => e.type === "superstep_started" || e.type === "step_completed").map((e) => `${e.type} ${e.superstep}`),
        [],
        "a superstep ran while the intent's outcome was unknown",
      );
      assert.equal(onlyIntent(store).status, "open", "the intent is no longer open though its outcome is unknown");
      assert.equal(store.latestCheckpoint(run.id)!.id, latest.id, "a checkpoint was added while the intent's outcome was unknown");
      assert.equal(workflowWrites(erp).length, 1, "the ERP took a second write");
    } finally {
      store.close();
    }
    // The lookup back: the failed run is resumed, the intent found done, nothing acted again.
    target.failReconcile = false;
    store = await SqlJsStore.open(crashed);
    try {
      const result = await new Engine(workflow(target), store).resume(store.latestCheckpoint(runId)!.id);
      assert.equal(result.status, "completed", `the second resume ended ${result.status}: ${JSON.stringify(result.error)}`);
      assert.equal(onlyIntent(store).status, "done");
      assert.equal(workflowWrites(erp).length, 1, "the ERP took a second write");
    } finally {
      store.close();
    }
  });

  it("not found: a crash after the intent opened but before the action reached the ERP acts on resume, once", async () => {
    const target: Target = { url: erp.url, lookedUp: [] };
    const dataDir = path.dirname(erp.dataFile);
    // While the effect is paused with its intent open, the ERP goes away: the original process's
    // action never reaches it, as if the process had died there.
    const crashed = await crashCopyAt("BEFORE", target, () => erp.close());
    assert.deepEqual(workflowWrites(erp), [], "nothing reached the ERP");
    erp = await startErp({ dataDir });
    target.url = erp.url;

    const store = await SqlJsStore.open(crashed);
    try {
      assert.equal(onlyIntent(store).status, "open");
      const run = store.listRuns()[0]!;
      const logs: string[] = [];
      const result = await new Engine(workflow(target), store, { log: (m) => logs.push(m) }).resume(store.latestCheckpoint(run.id)!.id);
      assert.equal(result.status, "completed");
      const intent = onlyIntent(store);
      assert.equal(intent.status, "done");
      assert.ok(
        logs.some((l) => /key not found in erp:vendors\/V-1; the effect did not happen/.test(l)),
        `no log said the key was not found; logs: ${JSON.stringify(logs)}`,
      );
      const writes = workflowWrites(erp);
      assert.equal(writes.length, 1, "acted exactly once");
      assert.equal(writes[0]!.idempotencyKey, intent.id, "with the intent's key");
      // Mutant killed: the intent handed to reconcile on resume without the basis it was planned on.
      assert.deepEqual(
        target.lookedUp!.map((i) => [i.key, i.basis?.version]),
        [[intent.id, '"v1"']],
        "looked up once, by its key, with the plan's basis",
      );
    } finally {
      store.close();
    }
  });
});

describe("effects: comparePrecondition", () => {
  const basis: LiveRecord = { version: "v1", record: { name: "A", taxNumber: "DE1", address: { city: "Hamburg", street: "X 1" } } };

  it("tells unchanged, unrelated and relied-on changes apart, by value or by fingerprint", () => {
    assert.deepEqual(comparePrecondition({ reliesOn: { taxNumber: "DE1" }, basis }, basis), {
      outcome: "unchanged",
      changed: [],
      reliedOnChanged: [],
    });
    const moved: LiveRecord = { version: "v2", record: { ...(basis.record as object), address: { city: "Hamburg", street: "Y 2" } } };
    assert.deepEqual(comparePrecondition({ reliesOn: { taxNumber: "DE1" }, basis }, moved), {
      outcome: "unrelated_change",
      changed: ["address.street"],
      reliedOnChanged: [],
    });
    const byFingerprint = { reliesOn: { address: stableHash({ city: "Hamburg", street: "X 1" }) }, basis };
    assert.equal(comparePrecondition(byFingerprint, basis).outcome, "unchanged");
    assert.deepEqual(
      comparePrecondition(byFingerprint, moved).reliedOnChanged.map((c) => c.path),
      ["address"],
    );
    assert.equal(comparePrecondition({ reliesOn: { "address.city": "Hamburg" }, basis }, moved).outcome, "unrelated_change");
  });

  it("takes a field the live record lacks as null: relied on being empty, it is unchanged; relied on a value, it changed", () => {
    // Kills the mutant that compares every relied-on value as a fingerprint (effectCompare.ts, `same`).
    const live: LiveRecord = { version: "v1", record: { name: "A" } };
    assert.deepEqual(comparePrecondition({ reliesOn: { vatId: null } }, live), { outcome: "unchanged", changed: [], reliedOnChanged: [] });
    // A version that moved with no field changed (a touch) still counts as a change.
    assert.deepEqual(comparePrecondition({ reliesOn: { name: "A" }, basis: live }, { ...live, version: "v2" }), {
      outcome: "unrelated_change",
      changed: [],
      reliedOnChanged: [],
    });
    assert.deepEqual(comparePrecondition({ reliesOn: { vatId: "DE9" } }, live).reliedOnChanged, [
      { path: "vatId", expected: "DE9", actual: null },
    ]);
  });
});

describe("effects: idempotency keys and key conflicts", () => {
  it("keys an effect by case, executor and superstep, and a second effect of the same step by its index", () => {
    // Kills intentKey's `#${index}` as "" (two effects of one step would share a key).
    assert.equal(intentKey("INV-7", "pay", 3), "INV-7:pay:3");
    assert.equal(intentKey("INV-7", "pay", 3, 0), "INV-7:pay:3", "index 0 keeps the key intents recorded before had");
    assert.equal(intentKey("INV-7", "pay", 3, 2), "INV-7:pay:3#2");
  });

  it("names each differing field in the conflict message, a long value cut at 60 characters", () => {
    // Kills intentConflict's `show` truncation mutants (no test had a long value).
    const long = "x".repeat(80);
    const holder = intent("int-a", "run-a", { key: "INV-7:pay:3", status: "done", reference: "pay-1" });
    const proposed = intent("int-b", "run-b", { key: "INV-7:pay:3", payload: { amount: 100, memo: long } });
    const differs = compareIntents(holder, proposed);
    const { message } = intentConflict(holder, proposed, differs, "this run", "2026-12-01T00:00:00.000Z");
    assert.equal(
      message,
      'effect "pay" (intent int-b, post_payment on invoice-7): idempotency key INV-7:pay:3 is held by run run-a\'s done intent int-a ' +
        `with a different intent: payload.memo: null (run run-a) vs "${"x".repeat(56)}... (this run); not acting and not reusing its reference`,
    );
  });
});

describe("effects: without a done hook", () => {
  it("sends the reference on as { reference } to the next step", async () => {
    // Kills effectStep.ts's `finish` default (`{ reference }` as `{}`).
    const wf = defineWorkflow({
      name: "post",
      version: 1,
      state: { got: z.unknown() },
      start: "post",
      executors: {
        post: effect({
          intent: () => ({ action: "post payment", target: "bank:acct-1", payload: { amount: 10 }, reliesOn: {} }),
          act: async () => ({ paymentId: "P-1" }),
        }),
        after: code({ owns: ["got"], run: (ctx) => ctx.write("got", ctx.message) }),
      },
      edges: [edge("post", "after")],
    });
    const store = new MemoryStore();
    const result = await new Engine(wf, store).run();
    assert.equal(result.status, "completed", result.error?.message);
    assert.deepEqual(store.readValues(store.latestCheckpoint(result.runId)!.keys).got, { reference: { paymentId: "P-1" } });
  });
});

describe("effects: an open intent of a step that is no longer an effect", () => {
  it("is left open on resume, with a warning naming the intent and the executor", async () => {
    // Kills the warning's message mutant in resolveOpenIntents (effectStep.ts).
    let broken = true;
    const wf = defineWorkflow({
      name: "changed",
      version: 1,
      state: {},
      start: "pay",
      executors: {
        pay: code({
          run: () => {
            if (broken) throw new Error("down");
            return "paid";
          },
        }),
      },
      edges: [],
    });
    const store = new MemoryStore();
    const failed = await new Engine(wf, store).run();
    assert.equal(failed.status, "failed");
    // An intent the step opened when it was an effect (an earlier version of the workflow).
    store.commit({ intents: [intent("int-old", failed.runId, { key: `${failed.runId}:pay:1`, executor: "pay" })] });
    broken = false;
    const logs: string[] = [];
    const resumed = await new Engine(wf, store, { log: (m) => logs.push(m) }).resume(failed.checkpointId);
    assert.equal(resumed.status, "completed", resumed.error?.message);
    assert.equal(resumed.runId, failed.runId, "the failed run continues");
    assert.ok(
      logs.includes('warning: open intent int-old names executor "pay", which is no longer an effect step; left open'),
      `the warning: ${logs.join(" | ")}`,
    );
    assert.equal(store.listIntents()[0]!.status, "open", "left for a person");
  });
});
