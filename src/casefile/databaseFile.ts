import { closeSync, fstatSync, openSync, readSync, statSync } from "node:fs";
import type { Stats } from "node:fs";
import path from "node:path";
import type { Database, SqlJsStatic } from "sql.js";
import { CasefileError, errorMessage, isCasefileError, onFile } from "../engine/errors";
import type { CaseFileFs } from "./caseFileFs";
import { journalPath } from "./journal";
import { SCHEMA_VERSION, readMeta } from "./schema";
import type { StoredMeta } from "./schema";

/**
 * The case file's database file on disk, as SqlJsStore reads and replaces it: loaded and checked
 * before anything is written, replaced whole by a compaction (temp file, fsync, rename, fsync of
 * the folder), and the temp file a killed compaction left removed.
 */

const SQLITE_HEADER = Buffer.from("SQLite format 3\0", "latin1");

export interface Loaded {
  db: Database;
  meta: StoredMeta;
  stat: Stats;
}

/**
 * Reads the file and decides, without writing anything, whether it may be opened: a SQLite file,
 * structurally sound, with the casefile meta row, a schema this code knows, and the caller's tenant.
 */
export function loadDatabase(SQL: SqlJsStatic, file: string, tenant: string | undefined, room: Room = "reader"): Loaded {
  const stat = onFile("read", file, () => statSync(file));
  if (stat.isDirectory()) throw new CasefileError("NOT_A_CASE_FILE", `${file} is not a case file: it is a directory`, { file });
  const bytes = onFile("read", file, () => readWithRoom(file, MIN_ROOM[room]));
  if (bytes.length < 100 || !Buffer.from(bytes.buffer, 0, 16).equals(SQLITE_HEADER)) {
    const what = bytes.length === 0 ? "it is empty" : "it is not a SQLite database";
    throw new CasefileError("NOT_A_CASE_FILE", `${file} is not a case file: ${what}`, { file });
  }
  let db: Database;
  try {
    db = new SQL.Database(bytes);
  } catch (e) {
    throw corruptDb(file, errorMessage(e));
  }
  try {
    let meta: StoredMeta | undefined;
    try {
      meta = readMeta(db);
    } catch (e) {
      throw corruptDb(file, errorMessage(e));
    }
    if (!meta) {
      throw new CasefileError("NOT_A_CASE_FILE", `${file} is a SQLite database but not a case file (no casefile meta row)`, { file });
    }
    // quick_check walks every b-tree page: overwritten or truncated pages are caught here,
    // at open, rather than as odd errors in the middle of a run.
    let problems: string[];
    try {
      problems = (db.exec("PRAGMA quick_check(5)")[0]?.values ?? []).map((r) => String(r[0]));
    } catch (e) {
      problems = [errorMessage(e)];
    }
    // Stryker disable next-line ConditionalExpression: quick_check answers "ok" alone or problems only, so the first test alone never decides
    if (problems.length !== 1 || problems[0] !== "ok") throw corruptDb(file, problems.join("; "));
    if (meta.schemaVersion > SCHEMA_VERSION) {
      throw new CasefileError(
        "NEWER_SCHEMA",
        `${file} has case-file schema v${meta.schemaVersion}, newer than v${SCHEMA_VERSION} which this Casefile reads; update Casefile to open it`,
        { file, schemaVersion: meta.schemaVersion, supported: SCHEMA_VERSION },
      );
    }
    if (tenant !== undefined && meta.tenant !== tenant) {
      throw new CasefileError(
        "FOREIGN_TENANT",
        `${file} belongs to ${meta.tenant === undefined ? "no tenant" : `tenant "${meta.tenant}"`}, not to tenant "${tenant}"`,
        { file, tenant: meta.tenant ?? null, expected: tenant },
      );
    }
    return { db, meta, stat };
  } catch (e) {
    db.close();
    throw isCasefileError(e) ? e : corruptDb(file, errorMessage(e));
  }
}

/**
 * Who opens the database, for the least room readWithRoom leaves behind it. A reader's file grows
 * only by the journal records it replays. A writer's grows with every commit, and past the room
 * each further eighth copied all of it: opened at 1 MB, the next 16 MB of commits cost ~20 such
 * copies, ~50 µs of CPU a commit (sql.js's file writes, 116 against 56 µs a commit measured over
 * 1,500 commits from 1 MB, side by side). 16 MB of address space, resident only as it is written.
 */
export type Room = "reader" | "writer";
const MIN_ROOM: Record<Room, number> = { reader: 1 << 20, writer: 16 << 20 };

/**
 * The database file's bytes for `new SQL.Database`, at the start of a buffer with room to grow.
 * sql.js copies its argument into its in-memory file system with `data.slice(0, length)`, and
 * that file system grows a file by copying all of it into a buffer an eighth larger: so the first
 * commit after open, or the journal's replay, copied the whole database again (100 MB at 100 MB,
 * tens of ms, in every open and every resume). The view returned answers that one slice with the
 * whole buffer, so the file grows into the room behind it (the journal's size and an eighth of
 * the database, as the file system itself would have grown it, without the copy); any other
 * read of it gets the file's bytes as from any Uint8Array. The room costs address space until
 * it is written: untouched zero pages are not resident.
 */
function readWithRoom(file: string, minRoom: number): Uint8Array {
  const fd = openSync(file, "r");
  try {
    const size = fstatSync(fd).size;
    const journal = statIfExists(journalPath(file))?.size ?? 0;
    const whole = new Uint8Array(size + Math.max(size >>> 3, 2 * journal, minRoom));
    let got = 0;
    while (got < size) {
      // Stryker disable next-line ArithmeticOperator: the file holds size bytes, so asking for more reads the same
      const n = readSync(fd, whole, got, size - got, got);
      if (n === 0) break; // cut shorter while we read: what was read is the file (and fails the checks if damaged)
      got += n;
    }
    const bytes = whole.subarray(0, got);
    bytes.slice = (start?: number, end?: number) =>
      // Stryker disable next-line ConditionalExpression,EqualityOperator,LogicalOperator: only sql.js's one copy of the file calls this; which slices get the room is a matter of speed, not of the bytes read
      start === 0 && end === got ? whole : Uint8Array.prototype.slice.call(bytes, start, end);
    return bytes;
  } finally {
    closeSync(fd);
  }
}

/**
 * Removes `<file>.tmp`, the database a compaction was writing when its process was killed before
 * the rename. Called by a writer with the lock held (so no live compaction owns the temp file).
 * It is never renamed over the file: the file and its journal still hold every commit, and the
 * temp copy may be incomplete. Returns the warning to report, if there was one.
 */
export function removeStaleTemp(file: string, fs: CaseFileFs): string | undefined {
  const tmp = file + ".tmp";
  let size: number;
  try {
    size = statSync(tmp).size;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw e;
  }
  fs.remove(tmp);
  return `removed ${tmp} (${size} bytes) left by a compaction that was stopped before its rename; ${file} and its journal hold every commit`;
}

function corruptDb(file: string, detail: string): CasefileError {
  return new CasefileError("CORRUPT_CASE_FILE", `${file} is corrupted: ${detail}`, { file });
}

export function statIfExists(file: string): Stats | undefined {
  try {
    return statSync(file);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw e;
  }
}

export function changed(now: Stats, before: Stats): boolean {
  return now.ino !== before.ino || now.size !== before.size || now.mtimeMs !== before.mtimeMs;
}

/**
 * Writes `bytes` to `<file>.tmp`, fsyncs it, renames it over `file` and fsyncs the folder: a crash
 * before the rename leaves the old file, after it the new one, never a mix. Called by compaction.
 */
export function replaceDatabaseFile(fs: CaseFileFs, file: string, bytes: Uint8Array): void {
  const tmp = file + ".tmp";
  const fd = fs.open(tmp, "w");
  try {
    try {
      let written = 0;
      while (written < bytes.length) written += fs.write(fd, bytes, written, bytes.length - written);
      fs.fsync(fd);
    } finally {
      fs.close(fd);
    }
  } catch (e) {
    fs.remove(tmp); // a half-written copy (disk full) should not sit beside the file
    throw e;
  }
  fs.rename(tmp, file);
  fs.fsyncDir(path.dirname(file));
}
