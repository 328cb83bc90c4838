import * as assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { MemoryStore, openCaseFile } from "../../../src/casefile/index";
import { loadSqlJs } from "../../../src/casefile/sqlite";
import type { CaseStore, CommitBatch } from "../../../src/engine/store";
import { buildInspectorViewModel, buildOpeningViewModel } from "../../../src/extension/viewModel";
import { OPENING_ROWS, OPENING_SEARCH } from "../../../src/extension/viewModel/timeline";
import { InspectorViewModelSchema, TimelineRows, TimelineSchema } from "../../../src/protocol/webview";
import type { InspectorViewModel, SuperstepView } from "../../../src/protocol/webview";
import { longRun } from "../../fixtures/casefile/longRun";

const caseFile = { path: "/w/long.casefile", name: "long.casefile" };

const rows = (m: InspectorViewModel): SuperstepView[] => new TimelineRows(TimelineSchema.parse(m.timeline)).all();
const opts = { caseFile, canRun: { ok: true } } as const;

/** A case file on disk holding the batch, reopened read-only; `withoutCallIndex` as written before agent_calls_by_superstep. */
async function onDisk(batch: CommitBatch, withoutCallIndex: boolean): Promise<{ store: CaseStore; done: () => void }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "casefile-opening-"));
  const file = path.join(dir, "long.casefile");
  const writer = await openCaseFile(file, { create: true });
  writer.commit(batch); // into the journal: the database file holds the layout alone
  writer.close();
  if (withoutCallIndex) {
    const SQL = await loadSqlJs();
    const db = new SQL.Database(readFileSync(file));
    db.run("DROP INDEX agent_calls_by_superstep");
    writeFileSync(file, db.export());
    db.close();
  }
  const store = await openCaseFile(file, { readOnly: true });
  const SQL = await loadSqlJs();
  const db = new SQL.Database(readFileSync(file));
  const indexed = db.exec("SELECT name FROM sqlite_master WHERE name = 'agent_calls_by_superstep'").length > 0;
  db.close();
  assert.equal(indexed, !withoutCallIndex, "the file on disk has the call index only when written with it");
  return { store, done: () => (store.close(), rmSync(dir, { recursive: true, force: true })) };
}

const stores: { name: string; open: (b: CommitBatch) => Promise<{ store: CaseStore; done: () => void }> }[] = [
  {
    name: "MemoryStore",
    open: async (b) => ({
      store: (() => {
        const s = new MemoryStore();
        s.commit(b);
        return s;
      })(),
      done: () => undefined,
    }),
  },
  { name: "a case file on disk, reopened read-only", open: (b) => onDisk(b, false) },
  { name: "an older case file (no agent_calls_by_superstep index)", open: (b) => onDisk(b, true) },
];

for (const { name, open } of stores) {
  describe(`The inspector's opening view model, from ${name}`, () => {
    it("holds the run's last supersteps exactly as the whole timeline has them, down past its decision, and says more follow", async () => {
      const n = 2000;
      const { store, done } = await open(longRun(n));
      try {
        const opening = buildOpeningViewModel(store, opts);
        assert.ok(opening, "a long run with a recent decision opens from its last supersteps");
        assert.ok(InspectorViewModelSchema.safeParse(opening).success, "valid against the schema the webview parses with");
        assert.equal(opening.partial, true, "marked partial: the whole timeline follows");
        const part = rows(opening);
        const whole = rows(buildInspectorViewModel(store, opts));
        assert.equal(whole.length, n + 1, "the whole timeline has every superstep, the failed one too");
        assert.equal(part.length, OPENING_ROWS, "a panel's worth of rows, no more");
        assert.deepEqual(
          part,
          whole.slice(whole.length - part.length),
          "the same rows as the whole timeline's last ones, verdicts and all",
        );
        assert.equal(part.at(-1)!.checkpointId, null, "the failed last superstep is there, without a checkpoint");
        assert.equal(part.at(-3)!.steps[0]!.verdict, "accepted", "an agent step shows the verdict recorded one superstep later");
      } finally {
        done();
      }
    });

    it("reaches back to a decision further than a panel's worth of rows", async () => {
      const n = 2000;
      const { store, done } = await open(longRun(n, n - 200));
      try {
        const opening = buildOpeningViewModel(store, opts);
        assert.ok(opening?.partial, "still the opening part of the run");
        const part = rows(opening);
        assert.equal(part[0]!.superstep, n - 201, "down to the last superstep with a verdict, no further");
        assert.equal(part[0]!.steps.find((s) => s.executor === "commit")?.verdict, "accepted", "that superstep's commit verdict is shown");
      } finally {
        done();
      }
    });

    it("is undefined when the decision lies further back than it searches, and the whole run when the run (or branch) is short", async () => {
      const far = await open(longRun(2000, 2000 - OPENING_SEARCH - 10));
      try {
        assert.equal(buildOpeningViewModel(far.store, opts), undefined, "no opening part: only the whole timeline knows where to open");
      } finally {
        far.done();
      }
      // A branch's few supersteps of its own, numbered on from where it was forked.
      const run = longRun(2000);
      const fork = longRun(1520, 1520, { runId: "fork", from: 1500 });
      const branched = await open({
        runs: [...run.runs!, ...fork.runs!],
        steps: [...run.steps!, ...fork.steps!],
        checkpoints: [...run.checkpoints!, ...fork.checkpoints!],
        agentCalls: [...run.agentCalls!, ...fork.agentCalls!],
        verdicts: [...run.verdicts!, ...fork.verdicts!],
      });
      try {
        const forkOpts = { ...opts, runId: "fork" };
        const opening = buildOpeningViewModel(branched.store, forkOpts);
        assert.ok(opening && opening.partial === undefined, "a short branch of a long run opens whole, not marked partial");
        const whole = rows(buildInspectorViewModel(branched.store, forkOpts));
        assert.equal(whole[0]!.superstep, 1500, "the branch starts at the superstep it was forked at");
        assert.deepEqual(rows(opening), whole, "the same rows as the branch's whole view model");
      } finally {
        branched.done();
      }
      const short = await open(longRun(100));
      try {
        const opening = buildOpeningViewModel(short.store, opts);
        assert.ok(opening && opening.partial === undefined, "a short run's opening is the whole run, not marked partial");
        assert.deepEqual(rows(opening), rows(buildInspectorViewModel(short.store, opts)), "the same rows as the whole view model");
      } finally {
        short.done();
      }
    });
  });
}
