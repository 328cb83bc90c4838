import assert from "node:assert/strict";
import { z } from "zod";
import { isCasefileError } from "../../../src/engine/errors";
import { code, edge, extract, fact, type ExtractKey } from "../../../src/engine/executors";
import { checkExtract, extractEvents, isExtractValue, prepareExtracts } from "../../../src/engine/extracts";
import type { Extract, Json } from "../../../src/engine/records";
import { defineWorkflow } from "../../../src/engine/workflow";

/**
 * The extract checks the engine makes before each superstep, called directly (issue 18: the
 * mutants of extracts.ts that the engine-level tests in extracts.test.ts left alive). What a user
 * notices of each: the reason a stale extract is made again (in the warning and in `casefile
 * inspect`), which executors are named as its readers, what an executor sees when the document
 * is gone, and the EXTRACT_FAILED error naming the key, the document and the executor.
 */
const NOW = "2026-12-01T08:00:00.000Z";
const now = () => NOW;
const provenance = { source: "dms://contracts/C-7", sourceVersion: "v1", readAt: "2026-12-01T07:00:00.000Z" };
const doc = (text: string, over: Partial<typeof provenance> = {}): Json => ({ value: { text }, provenance: { ...provenance, ...over } });

/** A workflow whose `head` is an extract of `contract`, read by `a` and `b`, not by `c`. */
function workflowWith(run: (d: { text: string }) => unknown) {
  return defineWorkflow({
    name: "w",
    version: 1,
    state: { contract: fact(z.object({ text: z.string() })), head: extract(z.any(), { from: "contract", run }), other: z.string() },
    start: "a",
    executors: {
      a: code({ reads: ["head"], run: () => undefined }),
      b: code({ reads: ["head", "other"], run: () => undefined }),
      c: code({ reads: ["other"], run: () => undefined }),
    },
    edges: [edge("a", ["b", "c"])],
  });
}
const firstWords = (d: { text: string }) => d.text.split(" ").slice(0, 2).join(" ");

describe("extract checks: whether the extract in state may be used", () => {
  const wf = workflowWith(firstWords);
  const decl = wf.extracts.head as ExtractKey;

  async function madeFrom(contract: Json): Promise<Extract> {
    const pass = await prepareExtracts({ workflow: wf, state: { contract }, executors: ["a"], now });
    return pass.made[0]!.value;
  }

  it("says why an extract is stale: taken from another key, from another document, of another version, or edited under one version", async () => {
    const e = (await madeFrom(doc("Prices are fixed for a year."))) as unknown as Json;
    assert.deepEqual(checkExtract(decl, e, doc("Prices are fixed for a year.")), { status: "fresh" }, "same document, same version");
    const movedFrom = { ...decl, from: "contractV2" };
    assert.deepEqual(checkExtract(movedFrom, e, doc("Prices are fixed for a year.")), {
      status: "stale",
      reason: 'it was taken from "contract", and is now taken from "contractV2"',
    });
    assert.deepEqual(checkExtract(decl, e, doc("Prices are fixed for a year.", { source: "dms://contracts/C-8" })), {
      status: "stale",
      reason: 'its document in "contract" is now "dms://contracts/C-8", not "dms://contracts/C-7"',
    });
    assert.deepEqual(checkExtract(decl, e, doc("Prices are fixed for a year.", { sourceVersion: "v2" })), {
      status: "stale",
      reason: 'its document "dms://contracts/C-7" changed from version "v1" to "v2"',
    });
    assert.deepEqual(checkExtract(decl, e, doc("Prices change monthly.")), {
      status: "stale",
      reason: 'its document "dms://contracts/C-7" changed under the same version "v1" (state edited)',
    });
  });

  it("has nothing to take an extract from without the fact or its provenance, and is missing without an extract", () => {
    assert.deepEqual(checkExtract(decl, undefined, undefined), { status: "no_source" }, "no fact");
    assert.deepEqual(
      checkExtract(decl, undefined, { value: { text: "x" } }),
      { status: "no_source" },
      "a value with no provenance is no fact",
    );
    assert.deepEqual(checkExtract(decl, undefined, doc("x")), { status: "missing" });
  });

  it("fingerprints a fact value that is not frozen afresh each time, so an edit made in place is seen", async () => {
    const value = { text: "Prices are fixed for a year." };
    const contract = { value, provenance };
    const e = (await madeFrom(contract)) as unknown as Json;
    assert.deepEqual(checkExtract(decl, e, contract), { status: "fresh" });
    value.text = "Prices change monthly.";
    assert.equal(checkExtract(decl, e, contract).status, "stale", "the same object edited in place is a changed document");
  });

  it("tells an extract from a state value by all five of its fields", async () => {
    const e = (await madeFrom(doc("Prices are fixed."))) as unknown as Record<string, Json>;
    assert.equal(isExtractValue(e), true, "an extract as the engine makes it");
    for (const field of ["value", "from", "sourceVersion", "sourceHash", "extractedAt"]) {
      const { [field]: _gone, ...rest } = e;
      assert.equal(isExtractValue(rest), false, `without ${field}, a plain state value`);
    }
    assert.equal(isExtractValue(null), false, "null");
    assert.equal(isExtractValue("value from sourceVersion sourceHash extractedAt"), false, "a string");
  });
});

describe("extract checks: the pass before a superstep", () => {
  it("names each executor about to run that reads the extract once, in order, and not those that do not read it", async () => {
    const pass = await prepareExtracts({
      workflow: workflowWith(firstWords),
      state: { contract: doc("Prices are fixed for a year.") },
      executors: ["b", "c", "a", "b", "gone"],
      now,
    });
    assert.equal(pass.made.length, 1, "made once");
    assert.deepEqual(pass.made[0]!.readers, ["b", "a"], "b once, c does not read it, an unknown id is none");
    assert.equal("previous" in pass.made[0]!, false, "a first extract replaced none");
    assert.equal("stale" in pass.made[0]!, false, "a first extract is not stale");
    const made = pass.made[0]!.value;
    assert.deepEqual(made, {
      value: "Prices are",
      from: "contract",
      source: "dms://contracts/C-7",
      sourceVersion: "v1",
      sourceHash: made.sourceHash,
      extractedAt: NOW,
    });
    assert.match(made.sourceHash, /^sha256:[0-9a-f]{64}$/);
    assert.equal(pass.state.head, made as unknown as Json, "the executors see the one made");
  });

  it("makes nothing when no executor about to run reads the extract, and hands state on as it is", async () => {
    const state = { contract: doc("Prices are fixed for a year."), other: "x" };
    const pass = await prepareExtracts({ workflow: workflowWith(firstWords), state, executors: ["c"], now });
    assert.deepEqual(pass, { state, made: [] });
  });

  it("takes an old extract out of the executors' view when its document is gone from state", async () => {
    const wf = workflowWith(firstWords);
    const old = (await prepareExtracts({ workflow: wf, state: { contract: doc("Prices are fixed.") }, executors: ["a"], now })).made[0]!
      .value as unknown as Json;
    const pass = await prepareExtracts({ workflow: wf, state: { head: old, other: "x" }, executors: ["a"], now });
    assert.deepEqual(pass, { state: { other: "x" }, made: [] }, "no extract of a document that is not there");
  });

  it("keeps a fresh extract as it is, and records the one a stale extract replaced", async () => {
    const wf = workflowWith(firstWords);
    const v1 = (await prepareExtracts({ workflow: wf, state: { contract: doc("Prices are fixed.") }, executors: ["a"], now })).made[0]!
      .value;
    const fresh = await prepareExtracts({
      workflow: wf,
      state: { contract: doc("Prices are fixed."), head: v1 as unknown as Json },
      executors: ["a"],
      now,
    });
    assert.deepEqual(fresh.made, [], "nothing made again");
    assert.equal(fresh.state.head, v1 as unknown as Json, "the one in state");
    const stale = await prepareExtracts({
      workflow: wf,
      state: { contract: doc("Prices change monthly.", { sourceVersion: "v2" }), head: v1 as unknown as Json },
      executors: ["a"],
      now,
    });
    assert.equal(stale.made[0]!.previous, v1, "the extract it replaced");
    assert.equal(stale.made[0]!.stale, 'its document "dms://contracts/C-7" changed from version "v1" to "v2"');
    assert.equal(stale.made[0]!.value.value, "Prices change");
  });

  it("freezes what it makes, to the last nested value, so no executor can change an extract", async () => {
    const wf = workflowWith(() => ({ table: [{ sku: "PAL", price: 10 }] }));
    const made = (await prepareExtracts({ workflow: wf, state: { contract: doc("x") }, executors: ["a"], now })).made[0]!.value;
    const table = (made.value as { table: { sku: string }[] }).table;
    assert.ok(
      Object.isFrozen(made) && Object.isFrozen(made.value) && Object.isFrozen(table) && Object.isFrozen(table[0]),
      "frozen at every depth",
    );
  });

  it("fails with EXTRACT_FAILED naming the key, document, version and first reader when the extractor throws, returns what its schema rejects, or returns no JSON", async () => {
    const state = { contract: doc("Prices are fixed.") };
    const what = 'extract "head" of "contract" (dms://contracts/C-7, version "v1")';
    const details = { key: "head", executor: "b", source: "dms://contracts/C-7", sourceVersion: "v1" };
    const failing = async (run: (d: { text: string }) => unknown, message: string, extra: Record<string, unknown> = {}) =>
      assert.rejects(prepareExtracts({ workflow: workflowWith(run), state, executors: ["b", "a"], now }), (e: unknown) => {
        assert.ok(isCasefileError(e), `a typed error: ${String(e)}`);
        assert.equal(e.code, "EXTRACT_FAILED");
        assert.equal(e.message, message);
        assert.deepEqual(e.details, { ...details, ...extra });
        return true;
      });
    await failing(() => {
      throw new Error("no table");
    }, `${what} failed: no table`);
    await failing(() => new Date(0), `${what}: executor "extract:head" wrote a Date object at "head.value": state holds JSON data only`);
    const strict = defineWorkflow({
      name: "w",
      version: 1,
      state: {
        contract: fact(z.object({ text: z.string() })),
        head: extract(z.object({ n: z.number() }), { from: "contract", run: () => ({ n: "one" }) as unknown as { n: number } }),
      },
      start: "a",
      executors: { a: code({ reads: ["head"], run: () => undefined }) },
      edges: [],
    });
    await assert.rejects(prepareExtracts({ workflow: strict, state, executors: ["a"], now }), (e: unknown) => {
      assert.ok(isCasefileError(e), "a typed error");
      assert.match(e.message, /^extract "head" of "contract" \(dms:\/\/contracts\/C-7, version "v1"\) is invalid at "head\.value\.n": /);
      assert.deepEqual(e.details, { ...details, executor: "a", path: ["value", "n"] });
      return true;
    });
  });
});

describe("extract checks: the record of an extract made", () => {
  it("records a first extract as a first read with no warning, and a stale one with the one it replaced and a warning naming every reader", async () => {
    const wf = workflowWith(firstWords);
    const v1 = (await prepareExtracts({ workflow: wf, state: { contract: doc("Prices are fixed.") }, executors: ["a"], now })).made[0]!;
    const first = extractEvents("run-1", 3, v1, now);
    assert.deepEqual(first, [
      {
        runId: "run-1",
        superstep: 3,
        type: "extract",
        at: NOW,
        data: {
          key: "head",
          from: "contract",
          source: "dms://contracts/C-7",
          sourceVersion: "v1",
          readers: ["a"],
          stale: false,
          reason: "first read",
          previous: null,
        },
      },
    ]);
    const v2 = (
      await prepareExtracts({
        workflow: wf,
        state: { contract: doc("Prices change.", { sourceVersion: "v2" }), head: v1.value as unknown as Json },
        executors: ["b", "a"],
        now,
      })
    ).made[0]!;
    const [event, warning, ...more] = extractEvents("run-1", 5, v2, now);
    assert.equal(more.length, 0, "one extract event and one warning");
    assert.deepEqual((event!.data as { previous: Json }).previous, {
      source: "dms://contracts/C-7",
      sourceVersion: "v1",
      extractedAt: NOW,
    });
    assert.equal((event!.data as { stale: boolean }).stale, true);
    assert.deepEqual(warning, {
      runId: "run-1",
      superstep: 5,
      type: "warning",
      at: NOW,
      data: {
        executor: "b",
        message: 'extract "head" was stale: its document "dms://contracts/C-7" changed from version "v1" to "v2"; extracted again for b, a',
      },
    });
  });
});
