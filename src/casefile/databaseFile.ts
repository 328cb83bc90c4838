import { readFileSync, statSync } from "node:fs";
import type { Stats } from "node:fs";
import path from "node:path";
import type { Database, SqlJsStatic } from "sql.js";
import { CasefileError, errorMessage, isCasefileError, onFile } from "../engine/errors";
import type { CaseFileFs } from "./caseFileFs";
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
export function loadDatabase(SQL: SqlJsStatic, file: string, tenant: string | undefined): Loaded {
  const stat = onFile("read", file, () => statSync(file));
  if (stat.isDirectory()) throw new CasefileError("NOT_A_CASE_FILE", `${file} is not a case file: it is a directory`, { file });
  const bytes = onFile("read", file, () => readFileSync(file));
  if (bytes.length < 100 || !bytes.subarray(0, 16).equals(SQLITE_HEADER)) {
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
