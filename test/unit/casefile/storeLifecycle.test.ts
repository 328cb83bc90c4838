import assert from "node:assert/strict";
import { copyFileSync, existsSync, mkdtempSync, renameSync, rmSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { SqlJsStore } from "../../../src/casefile";
import { nodeFs, type CaseFileFs } from "../../../src/casefile/caseFileFs";
import { journalPath } from "../../../src/casefile/journal";
import { isCasefileError } from "../../../src/engine/errors";
import { checkpoint, event, ref, run } from "./builders";

/**
 * The store's open, commit, compaction and close as a caller sees them (sqlJsStore.ts):
 * survivors of the mutation run over it (issue 18), each test naming the bug it catches. Real
 * case files in a temp folder, reopened from disk; tests assert what the files and the store say.
 */

let dir: string;
const at = (name: string): string => path.join(dir, name);
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), "casefile-s18b-store-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const journalBytes = (file: string): number => (existsSync(journalPath(file)) ? statSync(journalPath(file)).size : 0);

function superstep(s: number, value: unknown = s) {
  return {
    checkpoints: [checkpoint(`r1:${s}`, "r1", s, { keys: { n: ref("r1", s + 1) } })],
    values: [{ run: "r1", key: "n", version: s + 1, value: value as never }],
    events: [event("r1", "checkpoint", s)],
  };
}

describe("store lifecycle: refusals a caller reads", () => {
  // Kills the readOnly ternary of the missing-file message: a reader is not told to create.
  it("a missing file: a writer is told to open with create, a reader is not", async () => {
    const file = at("none.casefile");
    const messages = [];
    for (const opts of [{}, { readOnly: true, create: true }]) {
      try {
        await SqlJsStore.open(file, opts);
        assert.fail("opened a missing file");
      } catch (e) {
        assert.ok(isCasefileError(e) && e.code === "NOT_A_CASE_FILE", String(e));
        messages.push(e.message);
      }
    }
    assert.deepEqual(messages, [`no case file at ${file} (open with create to make one)`, `no case file at ${file}`], "the two messages");
  });

  // Kills the folder check before create.
  it("create in a folder that does not exist says so, and creates nothing", async () => {
    const file = path.join(dir, "missing", "new.casefile");
    await assert.rejects(
      SqlJsStore.open(file, { create: true }),
      (e: unknown) =>
        isCasefileError(e) &&
        e.code === "FILE_ERROR" &&
        e.message === `cannot create ${file}: its folder ${path.dirname(file)} does not exist`,
    );
    assert.equal(existsSync(path.dirname(file)), false, "no folder made");
  });

  // Kills writable()'s closed check and the READ_ONLY message; refresh's own guards.
  it("a closed store refuses commits; a reader refuses them with READ_ONLY; a writer cannot refresh", async () => {
    const file = at("c.casefile");
    const w = await SqlJsStore.open(file, { create: true });
    await assert.rejects(w.refresh(), new RegExp(`^Error: refresh is for read-only stores; ${escape(file)} is open for writing$`));
    w.close();
    assert.throws(() => w.commit({ runs: [run("r1")] }), new RegExp(`^Error: case file ${escape(file)} is closed$`));
    const r = await SqlJsStore.open(file, { readOnly: true });
    assert.throws(
      () => r.commit({ runs: [run("r1")] }),
      (e: unknown) =>
        isCasefileError(e) &&
        e.code === "READ_ONLY" &&
        e.message === `${file} is open read-only; open it without readOnly to write` &&
        JSON.stringify(e.details) === JSON.stringify({ file }),
    );
    r.close();
    await assert.rejects(r.refresh(), new RegExp(`^Error: case file ${escape(file)} is closed$`));
  });

  it("a new case file is stamped with its tenant", async () => {
    const w = await SqlJsStore.open(at("t.casefile"), { create: true, tenant: "acme" });
    w.close();
    const r = await SqlJsStore.open(at("t.casefile"), { readOnly: true });
    assert.equal(r.meta().tenant, "acme", "the tenant read back from disk");
    r.close();
  });
});

describe("store lifecycle: when the journal is folded into the file", () => {
  // Kills close's `bytes > 0` made `>= 0` or true: a writer that changed nothing does not
  // rewrite the database file (a reader would reload it for nothing).
  it("a writer that opens and closes without committing leaves the database file as it was", async () => {
    const file = at("c.casefile");
    const w = await SqlJsStore.open(file, { create: true });
    w.commit({ runs: [run("r1")] });
    w.close();
    const before = statSync(file);
    const again = await SqlJsStore.open(file);
    again.close();
    const after = statSync(file);
    assert.deepEqual([after.ino, after.mtimeMs], [before.ino, before.mtimeMs], "the database file was rewritten");
  });

  // Kills the compaction at open (its condition made false): a writer finding a journal above
  // its threshold folds it in before its first commit.
  it("a writer opening a long journal a killed writer left compacts it at once", async () => {
    const file = at("c.casefile");
    const w = await SqlJsStore.open(file, { create: true });
    w.commit({ runs: [run("r1")], events: [event("r1", "run_started")] });
    // 100 KB of journal: more than half of a new case file (~135 KB).
    for (let s = 0; s < 5; s++) w.commit(superstep(s, "z".repeat(20_000)));
    const [kept, folded] = [at("kept.casefile"), at("folded.casefile")];
    for (const copy of [kept, folded]) {
      copyFileSync(file, copy);
      copyFileSync(journalPath(file), journalPath(copy));
    }
    w.close();
    const below = await SqlJsStore.open(kept, { compactAtBytes: 1 << 20 });
    assert.deepEqual([below.uncompactedSupersteps(), journalBytes(kept) > 0], [5, true], "below its threshold the journal stays");
    below.close();
    const above = await SqlJsStore.open(folded, { compactAtBytes: 1 });
    assert.deepEqual([above.uncompactedSupersteps(), journalBytes(folded)], [0, 0], "above it, open folded the journal in");
    assert.deepEqual(
      above.listCheckpoints("r1").map((c) => c.superstep),
      [0, 1, 2, 3, 4],
      "every superstep is there",
    );
    above.close();
  });

  // Kills compactThreshold's arithmetic: the journal is folded in once it exceeds half the
  // database file (when that is above compactAtBytes), not at compactAtBytes, and not never.
  it("compacts once the journal exceeds half the database file, when that is above compactAtBytes", async () => {
    const file = at("big.casefile");
    const w = await SqlJsStore.open(file, { create: true });
    w.commit({ runs: [run("r1")], values: [{ run: "r1", key: "doc", version: 1, value: "x".repeat(200_000) }] });
    w.close();
    const dbBytes = statSync(file).size;
    const s = await SqlJsStore.open(file, { compactAtBytes: 1000 });
    const sizes: number[] = [];
    try {
      for (let i = 0; i < 40; i++) {
        s.commit(superstep(i, "y".repeat(5000)));
        sizes.push(journalBytes(file));
      }
    } finally {
      s.close();
    }
    assert.ok(Math.max(...sizes) <= dbBytes / 2, `the journal grew to ${Math.max(...sizes)} bytes, past half of the ${dbBytes}-byte file`);
    assert.ok(
      sizes.some((n) => n > 20_000),
      `the journal was compacted near compactAtBytes (1000) rather than at half the file: ${sizes.join(", ")}`,
    );
    assert.ok(sizes.includes(0), `the journal was never compacted: ${sizes.join(", ")}`);
  });
});

describe("store lifecycle: a commit whose compaction fails", () => {
  // Kills the catch around commit's compaction and its warning: the commit is durable, so it
  // is not reported failed; the failure is a warning and the next commit tries again.
  it("keeps the commit, warns, and compacts on a later commit once the disk recovers", async () => {
    let full = false;
    const disk: CaseFileFs = {
      ...nodeFs,
      open: (p, flags) => {
        if (full && p.endsWith(".tmp")) throw Object.assign(new Error("ENOSPC: no space left on device, open"), { code: "ENOSPC" });
        return nodeFs.open(p, flags);
      },
    };
    const file = at("c.casefile");
    const w = await SqlJsStore.open(file, { create: true, fs: disk, compactAtBytes: 1 });
    full = true;
    // Past half of a new case file (~135 KB), so this commit compacts.
    w.commit({ runs: [run("r1")], values: [{ run: "r1", key: "doc", version: 1, value: "x".repeat(100_000) }] });
    assert.deepEqual(
      w.warnings,
      [`compaction of ${file} failed, will retry: ENOSPC: no space left on device, open`],
      "the failed compaction is a warning",
    );
    assert.ok(journalBytes(file) > 0, "the commit is in the journal");
    full = false;
    w.commit({ checkpoints: [checkpoint("r1:0", "r1", 0, { keys: { doc: ref("r1", 1) } })] });
    assert.equal(journalBytes(file), 0, "the next commit compacted");
    w.close();
    const r = await SqlJsStore.open(file, { readOnly: true });
    assert.deepEqual([r.listRuns().length, r.listCheckpoints("r1").length], [1, 1], "both commits read back");
    r.close();
  });
});

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

describe("store lifecycle: a reader kept open for a tenant", () => {
  // Kills the tenant dropped from a reader's bookkeeping: a refresh that opens the file again
  // (after a compaction replaced it) still refuses a case file of another tenant.
  it("refuses, on refresh, a case file that another tenant's file replaced", async () => {
    const file = at("acme.casefile");
    const w = await SqlJsStore.open(file, { create: true, tenant: "acme" });
    w.commit({ runs: [run("r1")] });
    w.close();
    const globex = at("globex.casefile");
    const g = await SqlJsStore.open(globex, { create: true, tenant: "globex" });
    g.commit({ runs: [run("g1")] });
    g.close();
    const r = await SqlJsStore.open(file, { readOnly: true, tenant: "acme" });
    try {
      copyFileSync(globex, file + ".new");
      renameSync(file + ".new", file);
      await assert.rejects(
        r.refresh(),
        (e: unknown) => isCasefileError(e) && e.code === "FOREIGN_TENANT" && /tenant "globex", not to tenant "acme"/.test(e.message),
      );
    } finally {
      r.close();
    }
  });
});
