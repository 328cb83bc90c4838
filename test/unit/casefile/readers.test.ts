import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { CaseFileReaders, SqlJsStore } from "../../../src/casefile";
import { agentCall, checkpoint, ref, run, step } from "./builders";

/** The host's kept read-only stores: one per open case file, each read as fresh as an open. */

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), "casefile-readers-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function superstep(s: number) {
  return {
    checkpoints: [checkpoint(`r1:${s}`, "r1", s, { keys: { n: ref("r1", s + 1) } })],
    values: [{ run: "r1", key: "n", version: s + 1, value: s }],
    steps: [step(`r1:${s}:tick`, "r1", s)],
  };
}

describe("CaseFileReaders: one kept store per open case file", () => {
  it("answers each read from the one store it keeps, with what writers committed since, until dropped", async () => {
    const file = path.join(dir, "case.casefile");
    const w = await SqlJsStore.open(file, { create: true });
    w.commit({ runs: [run("r1")] });
    w.commit(superstep(0));
    const readers = new CaseFileReaders();
    readers.keep(file);
    const stores = new Set<SqlJsStore>();
    const supersteps = async (): Promise<number[]> =>
      readers.read(file, (s) => (stores.add(s), s.listCheckpoints("r1").map((c) => c.superstep)));
    assert.deepEqual(await supersteps(), [0]);
    w.commit(superstep(1));
    assert.deepEqual(await supersteps(), [0, 1], "a superstep committed after the first read shows on the next");
    w.compact();
    w.commit(superstep(2));
    // Reads asked for together run one after the other on the same store.
    assert.deepEqual(await Promise.all([supersteps(), supersteps()]), [
      [0, 1, 2],
      [0, 1, 2],
    ]);
    assert.equal(stores.size, 1, "one store answered every read");
    readers.drop(file);
    assert.equal(readers.isKept(file), false);
    const once = new Set<SqlJsStore>();
    assert.deepEqual(await readers.read(file, (s) => (once.add(s), s.listCheckpoints("r1").length)), 3);
    assert.ok(![...once].some((s) => stores.has(s)), "a read of a case file no one keeps opens its own store");
    w.close();
  });

  it("refuses a read of a file that is no case file as open does, and reads it once it is one", async () => {
    const file = path.join(dir, "later.casefile");
    const readers = new CaseFileReaders();
    readers.keep(file);
    await assert.rejects(
      readers.read(file, () => 1),
      (e: Error & { code?: string }) => e.code === "NOT_A_CASE_FILE",
    );
    const w = await SqlJsStore.open(file, { create: true });
    w.commit({ runs: [run("r1")] });
    assert.deepEqual(await readers.read(file, (s) => s.listRuns().map((r) => r.id)), ["r1"]);
    w.close();
    readers.dispose();
  });

  it("keeps agent call summaries as fresh as an open: extended by a writer's appends, read afresh after a compaction", async () => {
    const file = path.join(dir, "calls.casefile");
    const w = await SqlJsStore.open(file, { create: true });
    w.commit({ runs: [run("r1")], agentCalls: [agentCall("a1", "r1")] });
    const readers = new CaseFileReaders();
    readers.keep(file);
    const summaries = () => readers.read(file, (s) => s.agentCallSummaries());
    const fresh = async () => {
      const s = await SqlJsStore.open(file, { readOnly: true });
      try {
        return [...s.agentCallSummaries()];
      } finally {
        s.close();
      }
    };
    const first = await summaries();
    assert.deepEqual(
      first.map((c) => c.id),
      ["a1"],
    );
    assert.equal(await summaries(), first, "nothing committed: the same list");
    w.commit({ agentCalls: [agentCall("a2", "r1", { superstep: 2, executor: "triage" })] });
    assert.deepEqual([...(await summaries())], await fresh(), "a call appended to the journal shows on the next read");
    w.compact();
    w.commit({ agentCalls: [agentCall("a3", "r1", { superstep: 3 })] });
    const after = await summaries();
    assert.deepEqual(
      after.map((c) => [c.id, c.superstep, c.executor]),
      [
        ["a1", 1, "decide"],
        ["a2", 2, "triage"],
        ["a3", 3, "decide"],
      ],
    );
    assert.deepEqual([...after], await fresh(), "after a compaction (the file replaced) as an open reads it");
    readers.dispose();
    w.close();
  });
});
