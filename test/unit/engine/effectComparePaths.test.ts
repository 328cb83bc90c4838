import assert from "node:assert/strict";
import {
  comparePrecondition,
  compareIntents,
  diffPaths,
  getPath,
  holderOf,
  intentConflict,
  intentRecordId,
  keyOf,
} from "../../../src/engine/effectCompare";
import { stableHash } from "../../../src/engine/hash";
import type { IntentRecord } from "../../../src/engine/records";

/**
 * The pure comparisons behind an effect's drift report and its key conflicts, at their edges: the
 * JSON paths a person reads, a relied-on value that is itself a "sha256:" string, lists compared
 * whole, and which run's intent holds a key. Each names the slip in effectCompare.ts it catches.
 */

const T = "2026-12-01T00:00:00.000Z";
function intent(id: string, runId: string, over: Partial<IntentRecord> = {}): IntentRecord {
  return {
    id,
    runId,
    superstep: 2,
    executor: "pay",
    action: "pay",
    target: "erp:invoices/INV-7",
    payload: { amount: 100 },
    reliesOn: { iban: "DE1" },
    status: "done",
    createdAt: T,
    updatedAt: T,
    ...over,
  };
}

describe("effect comparisons: paths, fingerprints and key holders", () => {
  it("getPath reads through objects and list indexes, and gives undefined past a leaf or a missing key", () => {
    const v = { lines: [{ qty: 2 }, { qty: 5 }], total: 7 };
    assert.equal(getPath(v, "lines.1.qty"), 5);
    assert.deepEqual(getPath(v, "lines.0"), { qty: 2 });
    assert.equal(getPath(v, "total.cents"), undefined, "below a number");
    assert.equal(getPath(v, "lines.9.qty"), undefined, "past the list's end");
    assert.equal(getPath(null, "a"), undefined, "below null");
    assert.equal(getPath({ a: null }, "a"), null, "a null leaf is null, not missing");
  });

  it("diffPaths names leaf paths member by member, lists as a whole, and (root) for two different scalars", () => {
    assert.deepEqual(diffPaths({ a: { b: 1, c: 2 }, l: [1, 2] }, { a: { b: 1, c: 3 }, l: [1, 3], n: 1 }), ["a.c", "l", "n"]);
    assert.deepEqual(diffPaths(1, 2), ["(root)"]);
    assert.deepEqual(diffPaths({ a: 1 }, { a: 1 }), []);
    assert.deepEqual(diffPaths({ a: null }, {}), [], "a null member and a missing one read the same");
    assert.deepEqual(diffPaths({ z: 1, a: 1 }, { z: 2, a: 2 }), ["a", "z"], "sorted");
    // kills effectCompare.ts:137 ConditionalExpression (isObj's `v !== null` as true): null is no object to walk into
    assert.deepEqual(diffPaths({ a: null }, { a: { b: 1 } }), ["a"], "a member null on one side and an object on the other");
    assert.deepEqual(diffPaths(null, { b: 1 }), ["(root)"], "null against an object at the root");
  });

  it("a relied-on value that is itself a sha256: string matches the same string live, and a fingerprint matches its value", () => {
    const live = { version: "v1", record: { ref: "sha256:abc", name: "A" } };
    assert.equal(comparePrecondition({ reliesOn: { ref: "sha256:abc" } }, live).outcome, "unchanged", "the literal string");
    assert.equal(comparePrecondition({ reliesOn: { name: stableHash("A") } }, live).outcome, "unchanged", "a fingerprint of the value");
    assert.deepEqual(comparePrecondition({ reliesOn: { name: stableHash("B") } }, live).reliedOnChanged, [
      { path: "name", expected: stableHash("B"), actual: "A" },
    ]);
    assert.deepEqual(comparePrecondition({ reliesOn: { gone: stableHash(null) } }, live).outcome, "unchanged", "a fingerprint of nothing");
  });

  it("relies on nothing when reliesOn is no object (a list, null, a string), and a basis at the same version unchanged is unchanged", () => {
    const live = { version: "v1", record: { a: 1 } };
    for (const reliesOn of [["a"], null, "a"]) {
      assert.deepEqual(comparePrecondition({ reliesOn, basis: live }, live), { outcome: "unchanged", changed: [], reliedOnChanged: [] });
    }
    assert.deepEqual(
      comparePrecondition({ reliesOn: { a: 2 }, basis: { version: "v0", record: { a: 1 } } }, live).outcome,
      "relied_on_change",
    );
  });

  it("a live record whose fields changed at the same version (a system without versions) is an unrelated change, naming the fields", () => {
    // kills effectCompare.ts:39 ConditionalExpression (`changed.length > 0` as false): only a moved version counted
    const basis = { version: "", record: { name: "A", city: "Bonn" } };
    assert.deepEqual(comparePrecondition({ reliesOn: { name: "A" }, basis }, { version: "", record: { name: "A", city: "Köln" } }), {
      outcome: "unrelated_change",
      changed: ["city"],
      reliedOnChanged: [],
    });
  });

  it("the conflict message keeps a value of exactly 60 characters whole and separates the fields by a semicolon", () => {
    // kills effectCompare.ts:101 EqualityOperator (`> 60` as `>= 60`) and :103 StringLiteral (the "; " join as "")
    const sixty = "y".repeat(58); // 60 characters as JSON, with its quotes
    const holder = intent("INV-7:pay:2", "INV-7", { key: "INV-7:pay:2" });
    const proposed = intent("INV-7:pay:2@run-b", "run-b", { key: "INV-7:pay:2", payload: { amount: 200, memo: sixty } });
    const { message } = intentConflict(holder, proposed, compareIntents(holder, proposed), "this run", T);
    assert.equal(
      message,
      'effect "pay" (intent INV-7:pay:2@run-b, pay on erp:invoices/INV-7): idempotency key INV-7:pay:2 is held by run INV-7\'s done intent INV-7:pay:2 ' +
        `with a different intent: payload.amount: 100 (run INV-7) vs 200 (this run); payload.memo: null (run INV-7) vs "${sixty}" (this run); ` +
        "not acting and not reusing its reference",
    );
  });

  it("compareIntents compares action, target, payload and relied-on values, not the basis or status", () => {
    const a = intent("k", "run-a");
    assert.deepEqual(compareIntents(a, intent("k@run-b", "run-b", { status: "open", basis: { version: "v9", record: {} } })), []);
    assert.deepEqual(compareIntents(a, intent("k@run-b", "run-b", { target: "erp:invoices/INV-8", reliesOn: { iban: "DE2" } })), [
      { path: "reliesOn.iban", existing: "DE1", proposed: "DE2" },
      { path: "target", existing: "erp:invoices/INV-7", proposed: "erp:invoices/INV-8" },
    ]);
    assert.deepEqual(compareIntents(a, intent("k@run-b", "run-b", { payload: { amount: 100, memo: "x" } })), [
      { path: "payload.memo", existing: null, proposed: "x" },
    ]);
  });

  it("an intent record's id is its key on the root run and key@run on a branch; its key is the id when it has none", () => {
    assert.equal(intentRecordId("INV-7:pay:2", "INV-7", "INV-7"), "INV-7:pay:2");
    assert.equal(intentRecordId("INV-7:pay:2", "run-b", "INV-7"), "INV-7:pay:2@run-b");
    assert.equal(keyOf(intent("INV-7:pay:2", "INV-7")), "INV-7:pay:2");
    assert.equal(keyOf(intent("INV-7:pay:2@run-b", "run-b", { key: "INV-7:pay:2" })), "INV-7:pay:2");
  });

  it("the holder of a key is another run's done intent first, else its open or failed one; reused, refused and own intents hold nothing", () => {
    const open = intent("k@run-o", "run-o", { status: "open" });
    const done = intent("k@run-d", "run-d", { status: "done" });
    const failed = intent("k@run-f", "run-f", { status: "failed" });
    const mine = intent("k@me", "me", { status: "done" });
    const reused = intent("k@run-r", "run-r", { status: "done", reusedFrom: { run: "run-d", intent: "k@run-d" } });
    const stopped = intent("k@run-s", "run-s", { status: "needs_replanning" as IntentRecord["status"] });
    assert.equal(holderOf([open, done, mine], "me"), done, "done beats open");
    assert.equal(holderOf([mine, failed], "me"), failed, "failed may have acted");
    assert.equal(holderOf([mine, open], "me"), open);
    assert.equal(holderOf([mine, reused, stopped], "me"), undefined, "a reuse, a stop or my own intent holds nothing");
    const refused = intent("k@run-c", "run-c", {
      status: "done",
      conflict: { key: "k", existing: {} as never, proposed: {} as never, differs: [], detectedAt: T },
    });
    assert.equal(holderOf([refused], "me"), undefined, "a refused intent holds nothing");
  });
});
