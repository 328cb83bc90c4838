import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { MemoryStore, SCHEMA_VERSION, SqlJsStore } from "../../../src/casefile";
import type { CaseStore } from "../../../src/engine/store";
import { agentCall, checkpoint, event, run } from "./builders";

/**
 * What the in-memory store (dry runs, previews, the engine's tests) says about itself, and what a
 * commit keeps of a row whose object inherits enumerable members (a polluted Object.prototype):
 * only the row's own data, in memory as in a case file reopened from disk.
 */

describe("MemoryStore's own description", () => {
  it("reports the tenant and creation time it was made with, as a copy a caller cannot change", () => {
    const store = new MemoryStore({ tenant: "acme", createdAt: "2026-03-01T00:00:00.000Z" });
    const meta = store.meta();
    assert.deepEqual(meta, { schemaVersion: SCHEMA_VERSION, createdAt: "2026-03-01T00:00:00.000Z", tenant: "acme" }, "its meta");
    meta.tenant = "other";
    assert.equal(store.meta().tenant, "acme", "changing the answer does not change the store");
    const plain = new MemoryStore().meta();
    assert.equal("tenant" in plain, false, "a store made for no tenant names none");
    assert.ok(!Number.isNaN(Date.parse(plain.createdAt)), `made now: ${plain.createdAt}`);
  });

  it("numbers events on from its last, and summarises token counts", () => {
    const store = new MemoryStore();
    store.commit({ runs: [run("r1")], events: [event("r1", "run_started"), event("r1", "superstep_started")] });
    store.commit({ events: [event("r1", "checkpoint")], agentCalls: [agentCall("a1", "r1", { tokens: { count: 12, tokenizer: "t" } })] });
    assert.deepEqual(
      store.listEvents().map((e) => e.seq),
      [1, 2, 3],
      "events numbered from 1, on across commits",
    );
    assert.deepEqual(
      store.agentCallSummaries().map((s) => s.tokens),
      [12],
      "the call's token count",
    );
    assert.equal(store.getCheckpoint("none"), undefined, "an unknown checkpoint");
    store.commit({ checkpoints: [checkpoint("c0", "r1", 0), checkpoint("c1", "r1", 1)] });
    assert.deepEqual(
      store.listCheckpoints("r1", 1).map((c) => c.id),
      ["c1"],
      "one superstep's checkpoints",
    );
  });
});

describe("a row whose object inherits enumerable members", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "casefile-memory-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("is stored with its own members only, in memory and on disk", async () => {
    const file = path.join(dir, "case.casefile");
    const stores: [string, CaseStore][] = [
      ["memory", new MemoryStore()],
      ["case file", await SqlJsStore.open(file, { create: true })],
    ];
    Object.defineProperty(Object.prototype, "injected", { value: "x", enumerable: true, configurable: true, writable: true });
    try {
      for (const [, store] of stores) store.commit({ runs: [run("r1", { input: { amount: 5 } })] });
    } finally {
      delete (Object.prototype as Record<string, unknown>).injected;
    }
    stores[1]![1].close();
    const reopened = await SqlJsStore.open(file, { readOnly: true });
    try {
      for (const [name, store] of [stores[0]!, ["case file reopened", reopened] as [string, CaseStore]]) {
        const stored = store.getRun("r1")!;
        assert.deepEqual(stored, run("r1", { input: { amount: 5 } }), `${name}: the run as committed`);
        assert.equal(Object.prototype.hasOwnProperty.call(stored, "injected"), false, `${name}: no inherited member stored`);
        assert.equal(Object.prototype.hasOwnProperty.call(stored.input, "injected"), false, `${name}: none in nested data either`);
      }
    } finally {
      reopened.close();
    }
  });
});
