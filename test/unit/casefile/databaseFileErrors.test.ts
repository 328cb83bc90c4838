import assert from "node:assert/strict";
import fs, { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, truncateSync, writeFileSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { SqlJsStore } from "../../../src/casefile";
import { loadDatabase } from "../../../src/casefile/databaseFile";
import { lockPath } from "../../../src/casefile/lock";
import { loadSqlJs } from "../../../src/casefile/sqlite";
import { isCasefileError } from "../../../src/engine/errors";
import { run } from "./builders";

/**
 * A case file that cannot be read is a FILE_ERROR saying so (databaseFile.ts's loadDatabase); a
 * load leaves no descriptor behind and survives a file cut under it; a writer refuses a temp file
 * it cannot look at: survivors of the mutation run over databaseFile.ts (issue 18), each test
 * naming the bug it catches.
 */
describe("database file: a file that cannot be read", () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(path.join(os.tmpdir(), "casefile-s18b-dberr-"))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  // Kills the verb of the stat's onFile ("read") blanked: a file deleted between the caller's
  // look and the load is "cannot read <file>".
  it("a file gone before it is loaded: cannot read it", async () => {
    const file = path.join(dir, "gone.casefile");
    const SQL = await loadSqlJs();
    assert.throws(
      () => loadDatabase(SQL, file, undefined),
      (e: unknown) =>
        isCasefileError(e) && e.code === "FILE_ERROR" && e.message.startsWith(`cannot read ${file}: `) && /\(ENOENT\)$/.test(e.message),
    );
  });

  // Kills the verb of the read's onFile blanked: a socket where the case file should be cannot be opened.
  it("a socket where the case file should be: cannot read it (ENXIO)", async () => {
    const file = path.join(dir, "socket.casefile");
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(file, resolve));
    try {
      await assert.rejects(
        SqlJsStore.open(file, { readOnly: true }),
        (e: unknown) =>
          isCasefileError(e) && e.code === "FILE_ERROR" && e.message.startsWith(`cannot read ${file}: `) && /\(ENXIO\)$/.test(e.message),
      );
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  // Kills the details of the two NOT_A_CASE_FILE refusals emptied: `--json` callers read the file from them.
  it("a file that is not SQLite, and a SQLite database that is no case file, name the file in their details", async () => {
    const notes = path.join(dir, "notes.casefile");
    writeFileSync(notes, "just some notes, not a database\n".repeat(10));
    const SQL = await loadSqlJs();
    const db = new SQL.Database();
    db.run("CREATE TABLE meta (k TEXT, v TEXT)");
    const other = path.join(dir, "other.db");
    writeFileSync(other, db.export());
    db.close();
    for (const file of [notes, other]) {
      await assert.rejects(
        SqlJsStore.open(file, { readOnly: true }),
        (e: unknown) => isCasefileError(e) && e.code === "NOT_A_CASE_FILE" && JSON.stringify(e.details) === JSON.stringify({ file }),
        file,
      );
    }
  });

  // Kills corruptDb's details `{ file }` emptied: `--json` callers read the file from them.
  it("a corrupted database names the file in its details", async () => {
    const file = path.join(dir, "bare.casefile");
    writeFileSync(file, Buffer.concat([Buffer.from("SQLite format 3\0", "latin1"), Buffer.alloc(100 - 16)]));
    await assert.rejects(SqlJsStore.open(file, { readOnly: true }), (e: unknown) => {
      assert.ok(isCasefileError(e) && e.code === "CORRUPT_CASE_FILE", String(e));
      assert.deepEqual(e.details, { file }, "the details");
      return true;
    });
  });

  // Kills readWithRoom's `finally { closeSync(fd) }` emptied: every open, and every reopen of
  // the inspector's reader, would leave a descriptor of the database file open.
  it("loading a case file leaves no descriptor open", async () => {
    const file = path.join(dir, "case.casefile");
    (await SqlJsStore.open(file, { create: true })).close();
    const SQL = await loadSqlJs();
    const openFds = () => readdirSync("/proc/self/fd").length;
    const before = openFds();
    for (let i = 0; i < 5; i++) loadDatabase(SQL, file, undefined).db.close();
    assert.equal(openFds(), before, "descriptors after five loads");
  });

  // Kills readWithRoom's `if (n === 0) break` made false: a file cut shorter while it is read
  // would be read again and again for ever. node:fs's readSync is wrapped to cut the file, for
  // real, just before its first read.
  it("a database cut to nothing while it is read is refused as empty, not read for ever", async () => {
    const file = path.join(dir, "case.casefile");
    (await SqlJsStore.open(file, { create: true })).close();
    const SQL = await loadSqlJs();
    const real = fs.readSync;
    let reads = 0;
    fs.readSync = ((...args: Parameters<typeof fs.readSync>) => {
      if (++reads > 100) throw new Error("the database was read 100 times past its end");
      if (reads === 1) truncateSync(file, 0);
      return real(...args);
    }) as typeof fs.readSync;
    try {
      assert.throws(
        () => loadDatabase(SQL, file, undefined),
        (e: unknown) => isCasefileError(e) && e.code === "NOT_A_CASE_FILE" && e.message === `${file} is not a case file: it is empty`,
      );
    } finally {
      fs.readSync = real;
    }
    assert.ok(reads > 0, "the database was read through readSync");
  });

  // Kills removeStaleTemp's `code === "ENOENT"` made true: a temp file the writer cannot look at
  // (here a symlink to itself) is not taken for no temp file; the open is refused before it
  // writes anything, and lets go of the lock.
  it("a writer is refused when it cannot look at a compaction's temp file, and lets go of the lock", async () => {
    const file = path.join(dir, "case.casefile");
    (await SqlJsStore.open(file, { create: true })).close();
    const bytes = readFileSync(file);
    symlinkSync("case.casefile.tmp", file + ".tmp");
    await assert.rejects(SqlJsStore.open(file), (e: NodeJS.ErrnoException) => e.code === "ELOOP" && e.message.includes(file + ".tmp"));
    assert.equal(existsSync(lockPath(file)), false, "the lock is let go");
    assert.deepEqual(readFileSync(file), bytes, "the database file as it was");
    rmSync(file + ".tmp");
    const w = await SqlJsStore.open(file);
    w.commit({ runs: [run("r1")] });
    w.close();
  });

  // Kills the db.close() dropped from a refused load: an inspector refreshing a file it must refuse
  // (a newer schema) would keep a whole database in memory per try.
  it("a database loaded and then refused is closed again", async () => {
    const file = path.join(dir, "future.casefile");
    const w = await SqlJsStore.open(file, { create: true });
    w.close();
    const SQL = await loadSqlJs();
    const raw = new SQL.Database(readFileSync(file));
    raw.run("UPDATE meta SET schema_version = schema_version + 1");
    writeFileSync(file, raw.export());
    raw.close();
    let closed = 0;
    class Tracked extends SQL.Database {
      override close(): void {
        closed++;
        super.close();
      }
    }
    assert.throws(
      () => loadDatabase({ ...SQL, Database: Tracked }, file, undefined),
      (e: unknown) => isCasefileError(e) && e.code === "NEWER_SCHEMA",
    );
    assert.equal(closed, 1, "the refused database was closed");
  });
});
