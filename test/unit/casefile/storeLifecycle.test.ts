import assert from "node:assert/strict";
import { copyFileSync, existsSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { BindParams, Database, Statement } from "sql.js";
import { SqlJsStore } from "../../../src/casefile";
import { loadSqlJs } from "../../../src/casefile/sqlite";
import { lockPath } from "../../../src/casefile/lock";
import { nodeFs, type CaseFileFs } from "../../../src/casefile/caseFileFs";
import { encodeRecord, journalPath, readJournal } from "../../../src/casefile/journal";
import { isCasefileError } from "../../../src/engine/errors";
import { checkpoint, event, ref, run } from "./builders";
import { trackDatabases } from "./helpers/openDatabases";
import { tamperFile } from "./helpers/tamper";

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
  // Kills the readOnly ternary of the missing-file message: a reader is not told to create; and
  // the file dropped from the error's details (which the CLI's --json error output carries).
  it("a missing file: a writer is told to open with create, a reader is not", async () => {
    const file = at("none.casefile");
    const messages = [];
    for (const opts of [{}, { readOnly: true, create: true }]) {
      try {
        await SqlJsStore.open(file, opts);
        assert.fail("opened a missing file");
      } catch (e) {
        assert.ok(isCasefileError(e) && e.code === "NOT_A_CASE_FILE", String(e));
        assert.deepEqual(e.details, { file }, "the error names the file in its details");
        messages.push(e.message);
      }
    }
    assert.deepEqual(messages, [`no case file at ${file} (open with create to make one)`, `no case file at ${file}`], "the two messages");
  });

  // Kills the folder check before create, and the file dropped from the error's details.
  it("create in a folder that does not exist says so, and creates nothing", async () => {
    const file = path.join(dir, "missing", "new.casefile");
    await assert.rejects(
      SqlJsStore.open(file, { create: true }),
      (e: unknown) =>
        isCasefileError(e) &&
        e.code === "FILE_ERROR" &&
        e.message === `cannot create ${file}: its folder ${path.dirname(file)} does not exist` &&
        JSON.stringify(e.details) === JSON.stringify({ file }),
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

  // Kills create's check, once it holds the lock, that no other process made the file meanwhile
  // (its message and details too): the other's case file is left as it is, not overwritten.
  it("create refuses a file another process created between its look and its lock, and leaves that file alone", async () => {
    const theirs = at("theirs.casefile");
    const w = await SqlJsStore.open(theirs, { create: true });
    w.commit({ runs: [run("theirs")] });
    w.close();
    const file = at("race.casefile");
    const racing: CaseFileFs = {
      ...nodeFs,
      open: (p, flags) => {
        // The other process's create ran to its end just before our lock was taken.
        if (p === lockPath(file) && !existsSync(file)) copyFileSync(theirs, file);
        return nodeFs.open(p, flags);
      },
    };
    await assert.rejects(
      SqlJsStore.open(file, { create: true, fs: racing }),
      (e: unknown) =>
        isCasefileError(e) &&
        e.code === "CASE_FILE_LOCKED" &&
        e.message === `${file} was created by another process while this one was creating it` &&
        JSON.stringify(e.details) === JSON.stringify({ file }),
    );
    assert.ok(readFileSync(file).equals(readFileSync(theirs)), "the other process's file is as it made it");
    assert.deepEqual([existsSync(lockPath(file)), existsSync(journalPath(file))], [false, false], "no lock or journal left beside it");
    const r = await SqlJsStore.open(file, { readOnly: true });
    assert.deepEqual(
      r.listRuns().map((x) => x.id),
      ["theirs"],
      "the other process's case reads back",
    );
    r.close();
  });

  // Kills meta()'s tenant check: a case file of no tenant names none (no `tenant: undefined`
  // member), as MemoryStore's meta does, for a writer and for a reader.
  it("a case file made for no tenant names none in its meta", async () => {
    const file = at("plain.casefile");
    const w = await SqlJsStore.open(file, { create: true });
    assert.deepEqual(Object.keys(w.meta()).sort(), ["createdAt", "schemaVersion"], "the writer's meta");
    w.close();
    const r = await SqlJsStore.open(file, { readOnly: true });
    assert.deepEqual(Object.keys(r.meta()).sort(), ["createdAt", "schemaVersion"], "the reader's meta");
    r.close();
  });

  // Kills the journal's path dropped from the refusal's details: it is the journal, not the
  // database, that the user is told to move away.
  it("create beside a journal without its database names the journal in the error's details", async () => {
    const file = at("x.casefile");
    writeFileSync(journalPath(file), encodeRecord(1, "{}"));
    await assert.rejects(
      SqlJsStore.open(file, { create: true }),
      (e: unknown) =>
        isCasefileError(e) &&
        e.code === "CORRUPT_CASE_FILE" &&
        e.message === `journal ${journalPath(file)} exists without its database ${file}; move it away to start a new case file` &&
        JSON.stringify(e.details) === JSON.stringify({ file: journalPath(file) }),
    );
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
    const [kept, edge, folded] = [at("kept.casefile"), at("edge.casefile"), at("folded.casefile")];
    for (const copy of [kept, edge, folded]) {
      copyFileSync(file, copy);
      copyFileSync(journalPath(file), journalPath(copy));
    }
    w.close();
    const below = await SqlJsStore.open(kept, { compactAtBytes: 1 << 20 });
    assert.deepEqual([below.uncompactedSupersteps(), journalBytes(kept) > 0], [5, true], "below its threshold the journal stays");
    // Kills the sequence number replay leaves for the next commit: the resumed writer numbers its
    // record on from the killed writer's six, so the journal still reads (and nothing is lost).
    below.commit(superstep(5));
    assert.deepEqual(
      readJournal(journalPath(kept)).records.map((r) => r.seq),
      [1, 2, 3, 4, 5, 6, 7],
      "the resumed writer's commit follows the killed writer's records in the journal",
    );
    below.close();
    // Kills `>=` for `>` in open's threshold check: a journal exactly at the threshold stays.
    const atThreshold = await SqlJsStore.open(edge, { compactAtBytes: journalBytes(edge) });
    assert.deepEqual([atThreshold.uncompactedSupersteps(), journalBytes(edge) > 0], [5, true], "at its threshold the journal stays");
    atThreshold.close();
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

describe("store lifecycle: a writer whose open transaction SQLite rolled back", () => {
  // Kills undoBatch's catch, lostTransaction's body, and writable()'s refusal (its message and
  // details): a trigger another SQLite client left in the file RAISEs ROLLBACK, which ends the
  // transaction the commits since the last compaction were applied in. They are safe in the
  // journal but gone from this database, so the writer must refuse to commit or compact: a
  // compaction would write out the database without them and empty the journal.
  it("refuses further commits and keeps the journal, so a reopen still reads every commit", async () => {
    const file = at("c.casefile");
    (await SqlJsStore.open(file, { create: true })).close();
    await tamperFile(
      file,
      "CREATE TRIGGER boom BEFORE INSERT ON runs WHEN NEW.id = 'boom' BEGIN SELECT RAISE(ROLLBACK, 'boom refused'); END",
    );
    const w = await SqlJsStore.open(file, { compactAtBytes: Number.MAX_SAFE_INTEGER });
    w.commit({ runs: [run("r1")], events: [event("r1", "run_started")] });
    assert.throws(() => w.commit({ runs: [run("boom")] }), /boom refused/, "the trigger refuses the batch");
    const refusal = `${file}: SQLite rolled back this writer's open transaction (no such savepoint: batch); its commits are safe in the journal: reopen the case file`;
    assert.throws(
      () => w.commit({ runs: [run("r2")] }),
      (e: unknown) =>
        isCasefileError(e) &&
        e.code === "CORRUPT_CASE_FILE" &&
        e.message === refusal &&
        JSON.stringify(e.details) === JSON.stringify({ file }),
      "the next commit is refused",
    );
    w.close();
    assert.deepEqual(
      w.warnings,
      [
        `compaction of ${file} on close failed (${refusal}); its journal keeps every commit and the next writer or \`casefile compact\` folds it in`,
      ],
      "close did not compact",
    );
    assert.deepEqual(
      readJournal(journalPath(file)).records.map((r) => r.seq),
      [1],
      "the journal keeps the commit",
    );
    const r = await SqlJsStore.open(file, { readOnly: true });
    assert.deepEqual(
      r.listRuns().map((x) => x.id),
      ["r1"],
      "a reopen reads the commit made before the rollback",
    );
    r.close();
  });
});

describe("store lifecycle: a compaction whose COMMIT SQLite fails", () => {
  /**
   * Makes the next COMMIT a store runs through its prepared statements fail as SQLite fails one
   * it cannot write out (an I/O error in sql.js's in-memory file): the transaction is rolled back
   * and the statement throws. sql.js is not ours: this wraps its prepare, for the test only.
   */
  async function failingCommits(): Promise<{ failNext(): void; restore(): void }> {
    const SQL = await loadSqlJs();
    const proto = SQL.Database.prototype;
    const prepare = proto.prepare;
    let fail = false;
    proto.prepare = function (this: Database, sql: string, params?: BindParams): Statement {
      const stmt = prepare.call(this, sql, params);
      if (sql !== "COMMIT") return stmt;
      const run = stmt.run.bind(stmt);
      stmt.run = (p?: BindParams): void => {
        if (fail) {
          fail = false;
          this.run("ROLLBACK");
          throw new Error("disk I/O error");
        }
        run(p);
      };
      return stmt;
    };
    return {
      failNext: () => {
        fail = true;
      },
      restore: () => {
        proto.prepare = prepare;
      },
    };
  }

  // Kills endTransaction's catch made empty (the compaction would then write out a database
  // without the commits since the last one, and empty the journal: those commits lost) and its
  // lostTransaction dropped (the writer would go on committing to a database that lacks them).
  it("keeps the journal, refuses further commits, and a reopen reads every commit", async () => {
    const commits = await failingCommits();
    try {
      const file = at("c.casefile");
      const w = await SqlJsStore.open(file, { create: true, compactAtBytes: 1 });
      w.commit({ runs: [run("r1")], events: [event("r1", "run_started")] });
      commits.failNext();
      // Past half of a new case file (~135 KB), so this commit compacts.
      w.commit({ values: [{ run: "r1", key: "doc", version: 1, value: "x".repeat(100_000) }] });
      assert.deepEqual(w.warnings, [`compaction of ${file} failed, will retry: disk I/O error`], "the failed compaction is a warning");
      assert.throws(
        () => w.commit({ checkpoints: [checkpoint("r1:0", "r1", 0, { keys: { doc: ref("r1", 1) } })] }),
        (e: unknown) =>
          isCasefileError(e) &&
          e.code === "CORRUPT_CASE_FILE" &&
          /rolled back this writer's open transaction \(disk I\/O error\)/.test(e.message),
        "the next commit is refused",
      );
      w.close();
      assert.deepEqual(
        readJournal(journalPath(file)).records.map((r) => r.seq),
        [1, 2],
        "the journal keeps both commits",
      );
      const r = await SqlJsStore.open(file, { readOnly: true });
      assert.deepEqual(
        [r.listRuns().map((x) => x.id), Object.keys(r.readValues({ doc: ref("r1", 1) }))],
        [["r1"], ["doc"]],
        "a reopen reads both commits",
      );
      r.close();
    } finally {
      commits.restore();
    }
  });
});

describe("store lifecycle: what a refused open and a refresh leave open", () => {
  let databases: Awaited<ReturnType<typeof trackDatabases>>;
  beforeEach(async () => {
    databases = await trackDatabases();
  });
  afterEach(() => databases.restore());

  /** The file-system calls of a writer, counting the descriptors it opened and has not closed. */
  function counting(): { fs: CaseFileFs; open: Set<number> } {
    const open = new Set<number>();
    const fs: CaseFileFs = {
      ...nodeFs,
      open: (p, flags) => {
        const fd = nodeFs.open(p, flags);
        open.add(fd);
        return fd;
      },
      close: (fd) => {
        nodeFs.close(fd);
        open.delete(fd);
      },
    };
    return { fs, open };
  }

  /** A case file of one commit whose journal then gets a record repeating that commit's checkpoint: it cannot be applied. */
  async function unappliable(file: string): Promise<void> {
    const batch = { runs: [run("r1")], checkpoints: [checkpoint("r1:0", "r1", 0)] };
    const w = await SqlJsStore.open(file, { create: true });
    w.commit(batch);
    w.close();
    writeFileSync(journalPath(file), encodeRecord(2, JSON.stringify({ checkpoints: batch.checkpoints })));
  }

  const corruptRecord = (e: unknown): boolean =>
    isCasefileError(e) && e.code === "CORRUPT_CASE_FILE" && /cannot be applied/.test(e.message);

  // Kills the close of a reader's database when replaying the journal fails (and the catch
  // dropped, which went on to open the file as a writer): an inspector retrying a damaged case
  // file would keep a whole database in memory per try.
  it("a reader refused for a journal record it cannot apply keeps no database open", async () => {
    const file = at("c.casefile");
    await unappliable(file);
    await assert.rejects(SqlJsStore.open(file, { readOnly: true }), corruptRecord);
    assert.equal(databases.live(), 0, "sql.js databases left open");
  });

  // Kills the closes of a writer's database and journal when replaying the journal fails.
  it("a writer refused for a journal record it cannot apply keeps no database, journal handle or lock", async () => {
    const file = at("c.casefile");
    await unappliable(file);
    const { fs, open } = counting();
    await assert.rejects(SqlJsStore.open(file, { fs }), corruptRecord);
    assert.equal(databases.live(), 0, "sql.js databases left open");
    assert.equal(open.size, 0, "file descriptors left open");
    assert.equal(existsSync(lockPath(file)), false, "the lock is released");
  });

  // Kills the close of the database loaded before the lock, when the lock is refused: the
  // editor's runner asking again while a run holds the file would keep a database per ask.
  it("a writer refused the lock keeps no database open", async () => {
    const file = at("c.casefile");
    const holder = await SqlJsStore.open(file, { create: true });
    await assert.rejects(SqlJsStore.open(file), (e: unknown) => isCasefileError(e) && e.code === "CASE_FILE_LOCKED");
    assert.equal(databases.live(), 1, "only the holder's database is open");
    holder.close();
    assert.equal(databases.live(), 0, "none once the holder closed");
  });

  // Kills the close of the database a waiting writer loaded before the holder compacted: it
  // loads the file again, and the first copy must go.
  it("a writer that waited while the holder compacted keeps only the database it reloaded", async () => {
    const file = at("c.casefile");
    const holder = await SqlJsStore.open(file, { create: true });
    setTimeout(() => {
      holder.commit({ runs: [run("r1")] });
      holder.close(); // compacts: a new database file
    }, 150);
    const waiter = await SqlJsStore.open(file, { waitForLockMs: 5000 });
    assert.deepEqual(
      waiter.listRuns().map((r) => r.id),
      ["r1"],
      "the waiter reads the holder's commit",
    );
    assert.equal(databases.live(), 1, "sql.js databases open while the waiter is");
    waiter.close();
    assert.equal(databases.live(), 0, "sql.js databases open after it closed");
  });

  // Kills the close of the database a refresh replaced: an inspector kept open would hold one
  // more whole database after every compaction a run makes.
  it("a refresh that opens the file again closes the database it replaced", async () => {
    const file = at("c.casefile");
    (await SqlJsStore.open(file, { create: true })).close();
    const r = await SqlJsStore.open(file, { readOnly: true });
    for (let i = 1; i <= 3; i++) {
      const w = await SqlJsStore.open(file);
      w.commit({ runs: [run(`r${i}`)] });
      w.close(); // compacts: a new database file
      assert.equal(await r.refresh(), "reopened", `refresh after compaction ${i}`);
      assert.equal(databases.live(), 1, `sql.js databases open after refresh ${i}`);
    }
    r.close();
    assert.equal(databases.live(), 0, "none once the reader closed");
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
