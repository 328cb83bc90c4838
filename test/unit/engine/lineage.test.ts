import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { SqlJsStore } from "../../../src/casefile/sqlJsStore";
import type { CommitBatch } from "../../../src/engine/store";
import { z } from "zod";
import { isCasefileError } from "../../../src/engine/errors";
import { agent, code, commit, edge, effect } from "../../../src/engine/executors";
import { agentCallCounts, caseIdOf, readBeforeWriting } from "../../../src/engine/lineage";
import { defineWorkflow } from "../../../src/engine/workflow";
import { agentCall, checkpoint, intent, rule, run } from "../casefile/builders";

/**
 * A run's place in its case, read from a case file on disk (written, closed, reopened) as the
 * engine reads it when a run starts or resumes (issue 18: the mutants of lineage.ts). A branch's
 * agent call index counts its ancestors' calls only up to the checkpoint it was forked from: a
 * call counted once too many or too few gives a fixture keyed by call index the wrong answer,
 * and a branch's case id keys its effects' intents, so the wrong one repeats a payment.
 *
 * The tree: root R calls `classify` at supersteps 1, 3, 4 and 5 and `draft` at 2; branch B is
 * forked from R's checkpoint at superstep 3 and calls `classify` at 4 and 6; branch B2 is forked
 * from B's checkpoint at superstep 5 and calls `classify` at 6.
 */
let files = 0;

describe("lineage: agent call counts and the case of a branch, read from the case file", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "casefile-s18d-lineage-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const calls = (runId: string, at: [string, number][]) =>
    at.map(([executor, superstep], i) => agentCall(`${runId}-call-${i}`, runId, { executor, superstep }));
  const checkpoints = (runId: string, supersteps: number[]) => supersteps.map((s) => checkpoint(`${runId}:${s}`, runId, s));
  const tree: CommitBatch = {
    runs: [run("R"), run("B", { parentRunId: "R", parentCheckpointId: "R:3" }), run("B2", { parentRunId: "B", parentCheckpointId: "B:5" })],
    checkpoints: [...checkpoints("R", [1, 2, 3, 4, 5]), ...checkpoints("B", [4, 5, 6]), ...checkpoints("B2", [6])],
    agentCalls: [
      ...calls("R", [
        ["classify", 1],
        ["draft", 2],
        ["classify", 3],
        ["classify", 4],
        ["classify", 5],
      ]),
      ...calls("B", [
        ["classify", 4],
        ["classify", 6],
      ]),
      ...calls("B2", [["classify", 6]]),
    ],
  };

  /** Writes the batches to a new case file, closes it, and reads it back as a later command would. */
  async function reopened<T>(batches: CommitBatch[], read: (store: SqlJsStore) => T): Promise<T> {
    const file = path.join(dir, `claims-${++files}.casefile`);
    const writer = await SqlJsStore.open(file, { create: true });
    for (const b of batches) writer.commit(b);
    writer.close();
    const store = await SqlJsStore.open(file, { readOnly: true });
    try {
      return read(store);
    } finally {
      store.close();
    }
  }
  const countsOf = (runId: string, batches: CommitBatch[] = [tree]) =>
    reopened(batches, (store) => Object.fromEntries(agentCallCounts(store, store.getRun(runId)!)));

  it("counts a root run's own calls per agent", async () => {
    assert.deepEqual(await countsOf("R"), { classify: 4, draft: 1 }, "every call of the run, per executor");
  });

  it("counts a branch's ancestors' calls up to and including the superstep it was forked at, never past it", async () => {
    // B: its own 2, and R's up to superstep 3 (classify at 1 and 3, draft at 2), not R's at 4 and 5.
    assert.deepEqual(await countsOf("B"), { classify: 4, draft: 1 }, "B's own and R's up to its checkpoint at superstep 3");
  });

  it("counts a branch of a branch up to the earliest fork on the way to the root", async () => {
    // B2: its own 1, B's up to superstep 5 (the one at 4), and R's up to superstep 3, the earlier
    // of the two forks (the one at 1 and 3): R's calls at 4 and 5 were never in B2's history.
    assert.deepEqual(await countsOf("B2"), { classify: 4, draft: 1 }, "B2's own, B's up to 5, R's up to 3");
  });

  it("counts only a branch's own calls when its parent checkpoint is not named, not stored, or of another run", async () => {
    const own = (parent: Partial<{ parentRunId: string; parentCheckpointId: string }>): CommitBatch => ({
      runs: [run("X", parent)],
      checkpoints: checkpoints("X", [4]),
      agentCalls: calls("X", [["classify", 4]]),
    });
    for (const [why, parent] of [
      ["no checkpoint named", { parentRunId: "R" }],
      ["its checkpoint not stored", { parentRunId: "R", parentCheckpointId: "R:9" }],
      ["its checkpoint of another run", { parentRunId: "R", parentCheckpointId: "B:5" }],
    ] as const)
      assert.deepEqual(await countsOf("X", [tree, own(parent)]), { classify: 1 }, why);
  });

  it("gives every run of the tree the root run as its case", async () => {
    const cases = await reopened([tree], (store) => ["R", "B", "B2"].map((id) => caseIdOf(store, store.getRun(id)!)));
    assert.deepEqual(cases, ["R", "R", "R"], "the root, a branch and a branch of a branch");
  });

  it("stops at the last run the file holds when a parent run is missing (a row deleted by hand)", async () => {
    const orphan: CommitBatch = {
      runs: [run("O", { parentRunId: "gone", parentCheckpointId: "gone:1" }), run("O2", { parentRunId: "O", parentCheckpointId: "O:1" })],
      checkpoints: checkpoints("O", [1]),
    };
    const cases = await reopened([orphan], (store) => ["O", "O2"].map((id) => caseIdOf(store, store.getRun(id)!)));
    assert.deepEqual(cases, ["O", "O"], "the oldest ancestor still in the file");
  });
});

/**
 * readBeforeWriting reads, before a run's first commit, the records its later steps will read:
 * every intent for a workflow with effects, every business rule for one with agents or commit
 * steps. A damaged one (a row edited by hand) is then refused with CORRUPT_CASE_FILE before the
 * run is written, not found mid-run leaving it `running` for ever; a workflow that reads neither
 * is not refused for a damaged row it never reads.
 */
describe("lineage: the records a run reads later, read before its first write", () => {
  let dir: string;
  let file: string;
  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "casefile-s18d-readbefore-"));
    file = path.join(dir, "claims.casefile");
    const writer = await SqlJsStore.open(file, { create: true });
    writer.commit({ runs: [run("R")], checkpoints: [checkpoint("R:0", "R", 0)], intents: [intent("pay-7", "R")], rules: [rule("eur")] });
    writer.close();
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const step = { code: code({ run: () => "x" }) };
  const Proposal = z.object({ action: z.string(), reason: z.string(), facts: z.array(z.string()) });
  const kinds = {
    code: defineWorkflow({ name: "w", version: 1, state: {}, start: "code", executors: step, edges: [] }),
    effect: defineWorkflow({
      name: "w",
      version: 1,
      state: {},
      start: "code",
      executors: {
        ...step,
        pay: effect({ intent: () => ({ action: "pay", target: "t", payload: 1, reliesOn: {} }), act: async () => "ref" }),
      },
      edges: [edge("code", "pay")],
    }),
    agent: defineWorkflow({
      name: "w",
      version: 1,
      state: {},
      start: "code",
      executors: { ...step, ask: agent({ proposal: Proposal, model: { model: "m" }, context: () => [{ role: "user", content: "?" }] }) },
      edges: [edge("code", "ask")],
    }),
    commit: defineWorkflow({
      name: "w",
      version: 1,
      state: {},
      start: "code",
      executors: { ...step, decide: commit({ rules: {}, apply: () => undefined }) },
      edges: [edge("code", "decide")],
    }),
  };

  /** The case file with one table's first row made unreadable, opened as the engine opens it. */
  async function damaged<T>(table: "intents" | "rules", read: (store: SqlJsStore) => T): Promise<T> {
    const copy = path.join(dir, `${table}-${++files}.casefile`);
    copyFileSync(file, copy);
    execFileSync("/usr/bin/sqlite3", [copy, `UPDATE ${table} SET data = 'not json'`]);
    const store = await SqlJsStore.open(copy, { readOnly: true });
    try {
      return read(store);
    } finally {
      store.close();
    }
  }
  const corrupt = (table: string) => (e: unknown) =>
    isCasefileError(e) && e.code === "CORRUPT_CASE_FILE" && new RegExp(`is corrupted: ${table} row `).test(e.message);

  it("refuses a workflow with effects when an intent is damaged, and one with agents or commit steps when a rule is", async () => {
    await damaged("intents", (s) =>
      assert.throws(() => readBeforeWriting(s, kinds.effect, s, s.getRun("R")!), corrupt("intents"), "effects read intents"),
    );
    await damaged("rules", (s) =>
      assert.throws(() => readBeforeWriting(s, kinds.agent, s, s.getRun("R")!), corrupt("rules"), "agents read rules"),
    );
    await damaged("rules", (s) =>
      assert.throws(() => readBeforeWriting(s, kinds.commit, s, s.getRun("R")!), corrupt("rules"), "commits read rules"),
    );
  });

  it("does not refuse a workflow for a damaged row of a table it never reads, and gives the run's case and counts", async () => {
    for (const [table, wf] of [
      ["intents", kinds.code],
      ["intents", kinds.agent],
      ["intents", kinds.commit],
      ["rules", kinds.code],
      ["rules", kinds.effect],
    ] as const) {
      const lineage = await damaged(table, (s) => readBeforeWriting(s, wf, s, s.getRun("R")!));
      assert.deepEqual(
        lineage,
        { caseId: "R", callCounts: new Map() },
        `a damaged ${table} row is not read for ${Object.keys(wf.executors).join("+")}`,
      );
    }
  });
});
