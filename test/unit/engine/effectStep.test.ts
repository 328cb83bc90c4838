import assert from "node:assert/strict";
import { z } from "zod";
import { MemoryStore } from "../../../src/casefile/memoryStore";
import { PreconditionFailedError } from "../../../src/engine/effectStep";
import { Engine } from "../../../src/engine/engine";
import { CasefileError } from "../../../src/engine/errors";
import { effect, edge, fact, loader, type LiveRecord, type PlannedEffect } from "../../../src/engine/executors";
import type { IntentRecord, Json } from "../../../src/engine/records";
import { defineWorkflow } from "../../../src/engine/workflow";

/**
 * The effect step's records in cases the ERP stand-in does not produce (effects.test.ts has those):
 * a check that throws, several relied-on fields changed at once, a refusal thrown as a plain
 * CasefileError. An in-process target, a MemoryStore; each test names the mutant it kills.
 */

const Supplier = z.object({ taxNumber: z.string(), iban: z.string(), name: z.string(), city: z.string() });
const planned = { taxNumber: "DE111", iban: "DE00 1111", name: "Acme", city: "Hamburg" };

interface Target {
  live?: LiveRecord;
  checkFails?: boolean;
  /** What act throws instead of acting. */
  refuse?: unknown;
  acts: number;
  /** The plan records no basis (no version of the record it read). */
  noBasis?: boolean;
  /** The effect has no check: it acts on its plan unchecked. */
  noCheck?: boolean;
  /** When set, the effect has a reconcile that finds nothing, and each plan act and reconcile are handed is noted here. */
  handed?: [string, PlannedEffect][];
}

function workflow(target: Target) {
  return defineWorkflow({
    name: "pay-supplier",
    version: 1,
    state: { supplier: fact(Supplier), payment: z.object({ id: z.string() }) },
    start: "load",
    executors: {
      load: loader({
        owns: ["supplier"],
        run(ctx) {
          ctx.fact("supplier", planned, { source: "erp:suppliers/S-1", sourceVersion: "v1" });
          return "loaded";
        },
      }),
      pay: effect({
        reads: ["supplier"],
        owns: ["payment"],
        intent: (s) => ({
          action: "pay",
          target: "bank:payments",
          payload: { amount: 100 },
          reliesOn: { taxNumber: s.supplier.value.taxNumber, iban: s.supplier.value.iban },
          ...(target.noBasis ? {} : { basis: { version: "v1", record: s.supplier.value } }),
        }),
        ...(target.noCheck
          ? {}
          : {
              async check(): Promise<LiveRecord> {
                if (target.checkFails) throw new Error("supplier lookup timed out");
                return target.live ?? { version: "v1", record: planned };
              },
            }),
        ...(target.handed
          ? {
              async reconcile(intent: PlannedEffect): Promise<Json | null> {
                target.handed!.push(["reconcile", intent]);
                return null;
              },
            }
          : {}),
        async act(intent) {
          target.handed?.push(["act", intent]);
          if (target.refuse !== undefined) throw target.refuse;
          target.acts++;
          return { id: "PAY-1" };
        },
        done(reference, ctx) {
          ctx.write("payment", reference as { id: string });
        },
      }),
    },
    edges: [edge("load", "pay")],
  });
}

async function run(target: Target) {
  const store = new MemoryStore();
  const result = await new Engine(workflow(target), store).run();
  const intents = store.listIntents();
  assert.equal(intents.length, 1, `one intent, found ${intents.map((i) => i.id).join(", ")}`);
  const whats = store.listEvents({ runId: result.runId }).flatMap((e) => (e.type === "intent" ? [(e.data as { what: string }).what] : []));
  return { result, intent: intents[0] as IntentRecord, whats };
}

describe("effect step: records of the cases in between", () => {
  it("a check that throws fails the case in check, records the intent failed as 'check failed', and never acts", async () => {
    const target: Target = { checkFails: true, acts: 0 };
    const { result, intent, whats } = await run(target);
    assert.equal(result.status, "failed");
    assert.equal(result.error?.code, "EFFECT_FAILED");
    assert.ok(
      result.error!.message.includes(`effect "pay" (intent ${intent.id}, pay on bank:payments) failed in check: supplier lookup timed out`),
      result.error!.message,
    );
    assert.equal(intent.status, "failed");
    assert.equal(intent.error?.code, "EFFECT_FAILED");
    // Mutant killed: the event's what left empty, so the log said nothing of where it failed.
    assert.deepEqual(whats, ["check failed"], "the event log says where it stopped");
    assert.equal(target.acts, 0);
  });

  it("two relied-on fields changed: the replanning message names both, comma-separated, with both versions", async () => {
    const target: Target = { live: { version: "v2", record: { ...planned, taxNumber: "DE999", iban: "DE00 9999" } }, acts: 0 };
    const { result, intent, whats } = await run(target);
    assert.equal(result.status, "needs_replanning");
    assert.ok(
      result.error!.message.endsWith(`did not act: the live record changed in taxNumber, iban, which it relies on (version v1 -> v2)`),
      result.error!.message,
    );
    assert.equal(intent.status, "needs_replanning");
    assert.deepEqual(whats, ["needs replanning"]);
    assert.equal(target.acts, 0);
  });

  it("a relied-on change to a plan without a basis says the version it planned against is unknown", async () => {
    const target: Target = { live: { version: "v2", record: { ...planned, iban: "DE00 9999" } }, acts: 0, noBasis: true };
    const { result } = await run(target);
    assert.equal(result.status, "needs_replanning");
    assert.ok(result.error!.message.endsWith("changed in iban, which it relies on (version ? -> v2)"), result.error!.message);
  });

  for (const [what, record, said] of [
    ["two fields it does not rely on", { ...planned, name: "Acme GmbH", city: "Bremen" }, "city, name"],
    ["no field, only the version", planned, "no field"],
  ] as const) {
    it(`the record changed in ${what}: it acts, and the warning says which (${said})`, async () => {
      const store = new MemoryStore();
      const target: Target = { live: { version: "v2", record }, acts: 0 };
      const result = await new Engine(workflow(target), store).run();
      assert.equal(result.status, "completed", result.error?.message);
      assert.equal(target.acts, 1);
      const warnings = store
        .listEvents({ runId: result.runId })
        .flatMap((e) => (e.type === "warning" ? [(e.data as { message: string }).message] : []));
      const expected = `the live record changed (version v1 -> v2; ${said}) in fields it does not rely on; acting`;
      assert.ok(
        warnings.some((w) => w.endsWith(expected)),
        `no warning said "${expected}": ${JSON.stringify(warnings)}`,
      );
      const whats = store
        .listEvents({ runId: result.runId })
        .flatMap((e) => (e.type === "intent" ? [(e.data as { what: string }).what] : []));
      assert.deepEqual(whats, ["opened with drift", "done"], "the event log says it acted on a changed record");
    });
  }

  it("a refusal thrown as a plain CasefileError PRECONDITION_FAILED keeps the record it carries in its details", async () => {
    const current: LiveRecord = { version: "v3", record: { ...planned, name: "Acme GmbH" } };
    const target: Target = { refuse: new CasefileError("PRECONDITION_FAILED", "412 from the bank", { current }), acts: 0 };
    const { result, intent, whats } = await run(target);
    assert.equal(result.status, "needs_replanning");
    assert.ok(result.error!.message.endsWith("refused the conditional write at version v1; it now holds v3"), result.error!.message);
    assert.deepEqual((intent.drift as unknown as { live: Json }).live, current, "the record the bank now holds, beside the plan's");
    assert.deepEqual(whats, ["opened", "conditional write refused"]);
  });

  it("a refusal that does not say what the system holds ends its message at the version it wrote against", async () => {
    const { result, intent } = await run({ refuse: new PreconditionFailedError("412 from the bank"), acts: 0 });
    assert.equal(result.status, "needs_replanning");
    assert.ok(result.error!.message.endsWith("bank:payments refused the conditional write at version v1"), result.error!.message);
    assert.equal((intent.drift as unknown as { live: Json }).live, null, "no current record invented");
  });

  it("a refusal of an unchecked effect says it wrote against no known version", async () => {
    const { result } = await run({ refuse: new PreconditionFailedError("412 from the bank"), acts: 0, noCheck: true });
    assert.equal(result.status, "needs_replanning");
    assert.ok(result.error!.message.endsWith("bank:payments refused the conditional write at version ?"), result.error!.message);
  });

  it("a plain Error whose code happens to be PRECONDITION_FAILED is a failed act, not a refusal", async () => {
    const { result, intent, whats } = await run({
      refuse: Object.assign(new Error("socket hang up"), { code: "PRECONDITION_FAILED" }),
      acts: 0,
    });
    assert.equal(result.status, "failed");
    assert.equal(result.error?.code, "EFFECT_FAILED", result.error?.message);
    assert.ok(result.error!.message.endsWith("failed in act: socket hang up"), result.error!.message);
    assert.equal(intent.status, "failed");
    assert.deepEqual(whats, ["opened", "failed"]);
  });

  it("an act that throws a CasefileError of another code is a failed act, not a refusal", async () => {
    const { result, intent } = await run({ refuse: new CasefileError("INVALID_INPUT", "amount must be positive"), acts: 0 });
    assert.equal(result.status, "failed", "not stopped for replanning");
    assert.equal(result.error?.code, "EFFECT_FAILED", result.error?.message);
    assert.ok(result.error!.message.endsWith("failed in act: amount must be positive"), result.error!.message);
    assert.equal(intent.status, "failed");
  });

  it("a failed act of a plan without a basis is looked up and acted on again with the plan as first acted on: no basis key", async () => {
    // Kills effectStep.ts:423 ConditionalExpression `if (true) planned.basis = basis`: the plan rebuilt
    // from the intent record gave reconcile a `basis: undefined` the declared plan never had.
    const store = new MemoryStore();
    const target: Target = { refuse: new Error("bank timed out"), acts: 0, noBasis: true, noCheck: true, handed: [] };
    const failed = await new Engine(workflow(target), store).run();
    assert.equal(failed.status, "failed", "the first act threw");
    delete target.refuse;
    const resumed = await new Engine(workflow(target), store).resume(failed.checkpointId);
    assert.equal(resumed.status, "completed", resumed.error?.message);
    const key = store.listIntents()[0]?.key;
    assert.ok(key, "the intent record carries its idempotency key");
    const plan: PlannedEffect = {
      action: "pay",
      target: "bank:payments",
      payload: { amount: 100 },
      reliesOn: { taxNumber: "DE111", iban: "DE00 1111" },
      key,
    };
    assert.deepEqual(
      target.handed,
      [
        ["act", plan],
        ["reconcile", plan],
        ["act", plan],
      ],
      "act, the look-up on the run again, then act once more: each handed the plan as declared, with its key",
    );
    assert.equal(target.acts, 1, "acted once, after the look-up found nothing");
  });

  it("without the test hooks an effect does not pause or say it does (no 'test hook' line on the log)", async () => {
    const logs: string[] = [];
    const target: Target = { acts: 0 };
    const result = await new Engine(workflow(target), new MemoryStore(), { log: (m) => logs.push(m), hooks: { pauseAfterActMs: 0 } }).run();
    assert.equal(result.status, "completed");
    assert.equal(target.acts, 1);
    assert.deepEqual(
      logs.filter((l) => l.includes("test hook")),
      [],
      "a hook of 0 ms, or none, is no pause",
    );
  });

  it("PreconditionFailedError is a CasefileError whose JSON carries the record the system now holds", () => {
    const current: LiveRecord = { version: "v3", record: { iban: "DE00 3333" } };
    const e = new PreconditionFailedError("412 from the bank", current);
    assert.equal(String(e), "CasefileError: 412 from the bank", "a log line names the error kind");
    assert.deepEqual(e.toJSON(), { code: "PRECONDITION_FAILED", message: "412 from the bank", details: { current } });
    assert.deepEqual(new PreconditionFailedError("412").toJSON().details, {}, "nothing invented when the refusal does not say");
  });
});
