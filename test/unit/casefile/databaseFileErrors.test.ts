import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { SqlJsStore } from "../../../src/casefile";
import { loadDatabase } from "../../../src/casefile/databaseFile";
import { loadSqlJs } from "../../../src/casefile/sqlite";
import { isCasefileError } from "../../../src/engine/errors";

/**
 * A case file that cannot be read is a FILE_ERROR saying so (databaseFile.ts's loadDatabase):
 * survivors of the mutation run over databaseFile.ts (issue 18), each test naming the bug it catches.
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
