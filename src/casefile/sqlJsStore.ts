import { existsSync, statSync } from "node:fs";
import type { Stats } from "node:fs";
import path from "node:path";
import type { Database, SqlJsStatic } from "sql.js";
import { CasefileError, errorMessage, onFile } from "../engine/errors";
import type { CaseFileMeta, CaseStore, CommitBatch } from "../engine/store";
import { TABLES, prepareBatch } from "./batch";
import { nodeFs, type CaseFileFs } from "./caseFileFs";
import type { PreparedBatch } from "./batch";
import { HEADER_BYTES, JournalWriter, corrupt, journalPath, readJournal, sealRecord } from "./journal";
import type { JournalScan } from "./journal";
import { acquireLock, acquireLockWaiting } from "./lock";
import type { LockHandle } from "./lock";
import { SCHEMA_VERSION, createSchema, ensureIndexes, migrate } from "./schema";
import type { StoredMeta } from "./schema";
import { changed, loadDatabase, removeStaleTemp, replaceDatabaseFile, statIfExists } from "./databaseFile";
import type { Loaded } from "./databaseFile";
import { loadSqlJs } from "./sqlite";
import { SqlTables } from "./tables";

export interface OpenOptions {
  /** Read the database and journal without locking or ever writing; commit throws READ_ONLY. */
  readOnly?: boolean;
  /** Create the case file if it does not exist (writers only). */
  create?: boolean;
  /** The tenant the caller works for: a case file of another tenant is refused; a new one is stamped. */
  tenant?: string;
  /** Compact once the journal exceeds max(this, half the database file). Default 8 MB. */
  compactAtBytes?: number;
  /** The file-system calls of a writer (journal, compaction, lock); default node:fs. Tests wrap it to simulate power loss. */
  fs?: CaseFileFs;
  /** A writer finding the file locked waits this long for it (lock.ts's acquireLockWaiting) before CASE_FILE_LOCKED. Default 0. */
  waitForLockMs?: number;
}

const DEFAULT_COMPACT_AT = 8 * 1024 * 1024;

/**
 * The case file on disk: a SQLite database (held in memory by sql.js) plus a journal of the
 * commits made since it was last written out. See journal.ts for why commits go to the journal.
 *
 * Opened by the runner (a writer, holding `<file>.lock` while a run goes on) and by the CLI and
 * the extension's inspector (readers, which take no lock and see the journal too).
 */
export class SqlJsStore extends SqlTables implements CaseStore {
  /** Things a user may want to know about the open (stale lock taken over, torn journal tail). */
  readonly warnings: string[] = [];
  private nextJournalSeq: number;
  private nextEventSeq: number;
  private dbFileBytes: number;
  private closed = false;
  /** A writer's batches since the last compaction are applied in one open SQLite transaction (see commit). */
  private inTransaction = false;
  /** Why that transaction was lost, once SQLite rolled it back on its own: the writer then refuses to write. */
  private lost: string | undefined;
  /** Journal records (and the checkpoints among their rows) the database file does not hold yet. */
  private uncompacted = { records: 0, checkpoints: 0 };
  /** A reader's view of the files it read, for `refresh`: the database as loaded, the journal up to where it was read. */
  private seen: { db?: Stats; tenant?: string; journal: { offset: number; ino?: number } } = { journal: { offset: 0 } };

  private constructor(
    db: Database,
    file: string,
    readonly readOnly: boolean,
    private info: StoredMeta,
    private readonly compactAt: number,
    private readonly fs: CaseFileFs,
    private readonly journal?: JournalWriter,
    private readonly lock?: LockHandle,
  ) {
    super(db, file);
    // The database lives in sql.js memory and our journal is what makes commits durable, so
    // SQLite's own rollback journal need only support ROLLBACK (MEMORY) and never sync. No other
    // connection ever sees this in-memory file, so the lock is held for good (EXCLUSIVE): no
    // transaction pays for taking it or for checking that the cache is still current.
    db.run("PRAGMA journal_mode = MEMORY");
    db.run("PRAGMA synchronous = OFF");
    db.run("PRAGMA locking_mode = EXCLUSIVE");
    this.nextJournalSeq = info.journalSeq + 1;
    this.nextEventSeq = this.lastEventSeq() + 1;
    this.dbFileBytes = existsSync(file) ? statSync(file).size : 0;
  }

  /**
   * Opens (or with `create`, makes) the case file at `file`. Every refusal (NOT_A_CASE_FILE,
   * CORRUPT_CASE_FILE, NEWER_SCHEMA, FOREIGN_TENANT) is decided from a read-only look at the
   * file before the lock is taken, and leaves the file untouched.
   */
  static async open(file: string, opts: OpenOptions = {}): Promise<SqlJsStore> {
    const SQL = await loadSqlJs();
    file = path.resolve(file);
    const readOnly = opts.readOnly === true;
    const compactAt = opts.compactAtBytes ?? DEFAULT_COMPACT_AT;
    const fs = opts.fs ?? nodeFs;
    if (!existsSync(file)) {
      if (!opts.create || readOnly) {
        throw new CasefileError("NOT_A_CASE_FILE", `no case file at ${file}${readOnly ? "" : " (open with create to make one)"}`, { file });
      }
      const dir = path.dirname(file);
      if (!existsSync(dir)) throw new CasefileError("FILE_ERROR", `cannot create ${file}: its folder ${dir} does not exist`, { file });
      return onFile("create", file, () => SqlJsStore.create(SQL, file, opts.tenant, compactAt, fs));
    }
    if (readOnly) {
      // The journal before the database: a compaction in between then only makes the database
      // newer than the journal (whose records it skips), never older (which would lose commits).
      const jstat = statIfExists(journalPath(file));
      const scan = readJournal(journalPath(file));
      const loaded = loadDatabase(SQL, file, opts.tenant);
      try {
        const store = SqlJsStore.finish(loaded, file, true, compactAt, fs, scan);
        store.seen = {
          db: loaded.stat,
          ...(opts.tenant !== undefined ? { tenant: opts.tenant } : {}),
          journal: { offset: scan.validLength, ...(jstat ? { ino: jstat.ino } : {}) },
        };
        return store;
      } catch (e) {
        loaded.db.close();
        throw e;
      }
    }
    let loaded = loadDatabase(SQL, file, opts.tenant, "writer");
    let lock: LockHandle;
    try {
      lock = await acquireLockWaiting(file, opts.waitForLockMs ?? 0, fs);
    } catch (e) {
      loaded.db.close();
      throw e;
    }
    try {
      const staleTemp = removeStaleTemp(file, fs);
      // The previous writer may have compacted between our look and our lock.
      if (changed(statSync(file), loaded.stat)) {
        loaded.db.close();
        loaded = loadDatabase(SQL, file, opts.tenant, "writer");
      }
      const scan = readJournal(journalPath(file));
      const { writer, created } = JournalWriter.open(journalPath(file), scan.validLength, fs);
      try {
        if (created) fs.fsyncDir(path.dirname(file));
        return SqlJsStore.finish(loaded, file, false, compactAt, fs, scan, writer, lock, staleTemp);
      } catch (e) {
        writer.close();
        throw e;
      }
    } catch (e) {
      loaded.db.close();
      lock.release();
      throw e;
    }
  }

  private static create(SQL: SqlJsStatic, file: string, tenant: string | undefined, compactAt: number, fs: CaseFileFs): SqlJsStore {
    const lock = acquireLock(file, fs);
    let writer: JournalWriter | undefined;
    let db: Database | undefined;
    try {
      if (existsSync(file)) {
        throw new CasefileError("CASE_FILE_LOCKED", `${file} was created by another process while this one was creating it`, { file });
      }
      const staleTemp = removeStaleTemp(file, fs);
      const jpath = journalPath(file);
      if (existsSync(jpath) && statSync(jpath).size > 0) {
        throw new CasefileError(
          "CORRUPT_CASE_FILE",
          `journal ${jpath} exists without its database ${file}; move it away to start a new case file`,
          {
            file: jpath,
          },
        );
      }
      db = new SQL.Database();
      const meta: StoredMeta = { app: "casefile", schemaVersion: SCHEMA_VERSION, createdAt: new Date().toISOString(), journalSeq: 0 };
      if (tenant !== undefined) meta.tenant = tenant;
      createSchema(db, meta);
      writer = JournalWriter.open(jpath, 0, fs).writer;
      const store = new SqlJsStore(db, file, false, meta, compactAt, fs, writer, lock);
      if (lock.tookOverFrom) {
        const t = lock.tookOverFrom;
        store.warnings.push(`took over a stale lock on ${file} left by pid ${t.pid} on ${t.hostname} (since ${t.createdAt})`);
      }
      if (staleTemp) store.warnings.push(staleTemp);
      // Written out at once, through the same path as any compaction, so the file exists (and
      // a reader can open it) from the moment create returns.
      store.compact();
      return store;
    } catch (e) {
      writer?.close();
      db?.close();
      lock.release();
      throw e;
    }
  }

  /**
   * Migrates an older schema, replays the journal, and (for a writer) persists a migration. On
   * failure the caller closes the database, the journal and the lock it handed in.
   */
  private static finish(
    loaded: Loaded,
    file: string,
    readOnly: boolean,
    compactAt: number,
    fs: CaseFileFs,
    scan: JournalScan,
    writer?: JournalWriter,
    lock?: LockHandle,
    staleTemp?: string,
  ): SqlJsStore {
    const { db, meta } = loaded;
    const migrated = migrate(db, meta.schemaVersion, file);
    if (migrated.length) meta.schemaVersion = SCHEMA_VERSION;
    ensureIndexes(db, { readOnly });
    const store = new SqlJsStore(db, file, readOnly, meta, compactAt, fs, writer, lock);
    try {
      if (lock?.tookOverFrom) {
        const t = lock.tookOverFrom;
        store.warnings.push(`took over a stale lock on ${file} left by pid ${t.pid} on ${t.hostname} (since ${t.createdAt})`);
      }
      if (staleTemp) store.warnings.push(staleTemp);
      store.replay(scan);
      if (writer && (migrated.length || writer.bytes > store.compactThreshold())) store.compact();
      return store;
    } catch (e) {
      store.freeStatements();
      throw e;
    }
  }

  /**
   * Brings a read-only store up to date with the case file on disk, as cheaply as it can: when
   * only the journal grew, it applies just the records appended since the last read (checked and
   * torn-tail-tolerant as at open); when the database file was replaced (a compaction's rename,
   * seen as another inode, size or mtime) or the journal was cut or replaced, it opens the case
   * file again and takes that store's place. Either way, what it reads afterwards is what an open
   * now would read. Called by the extension's reader cache before each read of an open case file.
   * Throws what open throws (CORRUPT_CASE_FILE...); the store is then not to be used again.
   */
  async refresh(): Promise<"unchanged" | "appended" | "reopened"> {
    if (!this.readOnly) throw new Error(`refresh is for read-only stores; ${this.file} is open for writing`);
    if (this.closed) throw new Error(`case file ${this.file} is closed`);
    const jfile = journalPath(this.file);
    const read = this.seen.journal;
    if (this.dbReplaced()) return this.reopen();
    const jstat = statIfExists(jfile);
    const size = jstat?.size ?? 0;
    if (size < read.offset || (read.offset > 0 && jstat?.ino !== read.ino)) return this.reopen();
    if (size === read.offset) return "unchanged";
    let scan: JournalScan;
    try {
      scan = readJournal(jfile, read.offset);
    } catch {
      return this.reopen(); // what follows our offset is not a record: the journal was rewritten under us
    }
    // A compaction between the stats and the read (rename, truncate, new appends) shows here.
    if (this.dbReplaced()) return this.reopen();
    const first = scan.records[0];
    if (first && first.seq !== this.info.journalSeq + 1) return this.reopen();
    try {
      this.replay(scan, true);
    } catch {
      return this.reopen(); // open decides whether the file is damaged, and says so
    }
    this.seen.journal = { offset: scan.validLength, ...(jstat ? { ino: jstat.ino } : {}) };
    return scan.records.length > 0 ? "appended" : "unchanged";
  }

  private dbReplaced(): boolean {
    const now = statIfExists(this.file);
    return !now || !this.seen.db || changed(now, this.seen.db);
  }

  /** Opens the case file again and takes over the new store's database and bookkeeping. */
  private async reopen(): Promise<"reopened"> {
    const fresh = await SqlJsStore.open(this.file, {
      readOnly: true,
      ...(this.seen.tenant !== undefined ? { tenant: this.seen.tenant } : {}),
    });
    fresh.freeStatements(); // prepared on its database, which this store now holds
    this.freeStatements();
    this.db.close();
    this.db = fresh.db;
    this.info = fresh.info;
    this.nextJournalSeq = fresh.nextJournalSeq;
    this.nextEventSeq = fresh.nextEventSeq;
    this.dbFileBytes = fresh.dbFileBytes;
    this.uncompacted = fresh.uncompacted;
    this.seen = fresh.seen;
    this.warnings.splice(0, this.warnings.length, ...fresh.warnings);
    return "reopened";
  }

  /**
   * Applies the journal records the database does not hold yet, checking they follow on, in one
   * transaction: pages touched by many records (indexes, the meta row) are written once, not once
   * a record. A record that cannot be applied rolls back the lot; the caller (open, refresh)
   * then discards this database, so none of the journal is half applied.
   */
  private replay(scan: JournalScan, refreshing = false): void {
    const jfile = journalPath(this.file);
    const fresh = scan.records.filter((rec) => rec.seq > this.info.journalSeq); // older ones: folded in by a compaction
    const at = { ...this.info, nextJournalSeq: this.nextJournalSeq, nextEventSeq: this.nextEventSeq, uncompacted: { ...this.uncompacted } };
    if (fresh.length) this.db.run("BEGIN");
    try {
      this.replayRecords(fresh, jfile);
      if (fresh.length) this.db.run("COMMIT");
    } catch (e) {
      this.rollback();
      this.info.journalSeq = at.journalSeq;
      this.nextJournalSeq = at.nextJournalSeq;
      this.nextEventSeq = at.nextEventSeq;
      this.uncompacted = at.uncompacted;
      throw e;
    }
    // A reader refreshing meets the record a writer is appending right now: not worth a warning.
    if (scan.tornTailAt !== undefined && !refreshing) {
      const action = this.readOnly ? "ignored" : "truncated";
      this.warnings.push(
        `journal ${jfile}: ${scan.fileLength - scan.tornTailAt} bytes of an incomplete last record at byte ${scan.tornTailAt} ${action}`,
      );
    }
  }

  private replayRecords(records: JournalScan["records"], jfile: string): void {
    for (const rec of records) {
      if (rec.seq !== this.info.journalSeq + 1) {
        throw corrupt(
          jfile,
          rec.offset,
          `record at byte ${rec.offset} has sequence ${rec.seq} but the database holds up to ${this.info.journalSeq}`,
        );
      }
      let batch: PreparedBatch;
      try {
        // A row the database already holds is refused by its primary key (writeRows).
        batch = prepareBatch(rec.payload as CommitBatch, { exists: () => false, nextEventSeq: this.nextEventSeq, keepEventSeqs: true });
        this.writeRows(batch);
      } catch (e) {
        throw corrupt(jfile, rec.offset, `record at byte ${rec.offset} (sequence ${rec.seq}) cannot be applied: ${errorMessage(e)}`);
      }
      this.info.journalSeq = rec.seq;
      this.nextJournalSeq = rec.seq + 1;
      this.countUncompacted(batch);
      const lastEvent = batch.events[batch.events.length - 1];
      if (lastEvent) this.nextEventSeq = lastEvent.seq! + 1;
    }
  }

  meta(): CaseFileMeta {
    const m: CaseFileMeta = { schemaVersion: this.info.schemaVersion, createdAt: this.info.createdAt };
    if (this.info.tenant !== undefined) m.tenant = this.info.tenant;
    return m;
  }

  /**
   * Called by the engine at the end of every superstep (and around effects). Validates the whole
   * batch, appends it to the journal and fsyncs; the in-memory transaction holding its rows
   * commits only after the fsync. When this returns, the batch survives a crash; when it throws,
   * none of it is visible.
   */
  commit(batch: CommitBatch): void {
    const journal = this.writable();
    // A row an append-only table already holds is refused by its primary key (writeRows).
    const prepared = prepareBatch(batch, { exists: () => false, nextEventSeq: this.nextEventSeq });
    if (TABLES.every((t) => prepared[t].length === 0)) return;
    const seq = this.nextJournalSeq;
    // Rows are applied in a savepoint first, so a batch the database refuses never reaches the
    // journal; the savepoint is released only once the journal record is durable. If the append
    // fails it is rolled back: the batch is all there or not at all.
    //
    // The savepoints nest in one transaction that stays open until the next compaction. The
    // journal, not SQLite, makes a commit durable, so committing SQLite's transaction per batch
    // only made it write every page the batch touched (~30 of 4 KB, the b-trees' right edges
    // and the indexes) into sql.js's in-memory file, ~20% of a commit's CPU. Held open, a page
    // touched by many batches is written once, when the cache spills or compaction commits.
    if (!this.inTransaction) {
      this.execute("BEGIN");
      this.inTransaction = true;
    }
    this.execute("SAVEPOINT batch");
    try {
      journal.appendRecord(sealRecord(this.writeRows(prepared, HEADER_BYTES), seq));
      this.execute("RELEASE batch");
    } catch (e) {
      this.undoBatch();
      throw e;
    }
    this.info.journalSeq = seq;
    this.nextJournalSeq = seq + 1;
    this.nextEventSeq += prepared.events.length;
    this.countUncompacted(prepared);
    if (journal.bytes > this.compactThreshold()) {
      try {
        this.compact();
      } catch (e) {
        // The batch is durable in the journal; a failed compaction (disk full...) is retried
        // after the next commit rather than reported as a failed commit.
        this.warnings.push(`compaction of ${this.file} failed, will retry: ${errorMessage(e)}`);
      }
    }
  }

  /** Above this journal size a commit triggers compaction: bounded replay time, amortised cost. */
  /**
   * Half the database, capped at 16 MB: replaying a longer journal on open costs more (each
   * growth of sql.js's in-memory file copies all of it) than compacting more often.
   */
  private compactThreshold(): number {
    return Math.max(this.compactAt, Math.min(this.dbFileBytes / 2, 16 * 1024 * 1024));
  }

  /**
   * Folds the journal into the database file: export, write `<file>.tmp`, fsync, rename over the
   * file, fsync the directory, truncate the journal. A crash before the rename leaves the old file
   * and the whole journal; after it, the new file already holds the journal's records and replay
   * skips them by sequence number.
   */
  compact(): void {
    const journal = this.writable();
    this.stampJournalSeq(this.info.journalSeq);
    this.endTransaction();
    const bytes = this.db.export();
    replaceDatabaseFile(this.fs, this.file, bytes);
    journal.truncate();
    this.dbFileBytes = bytes.length;
    this.uncompacted = { records: 0, checkpoints: 0 };
  }

  /**
   * How many supersteps are only in the journal: the checkpoints (one per superstep, including
   * a run's checkpoint 0) in journal records the database file does not hold yet. Non-zero after
   * a writer was killed (its history is safe in the journal) or while a writer is running; zero
   * once a writer closed cleanly or `casefile compact` ran. `inspect` reports it.
   */
  uncompactedSupersteps(): number {
    return this.uncompacted.checkpoints;
  }

  /** Journal records (commits of any kind: supersteps, intents, rule edits) not yet in the database file. */
  uncompactedRecords(): number {
    return this.uncompacted.records;
  }

  private countUncompacted(batch: PreparedBatch): void {
    this.uncompacted.records++;
    this.uncompacted.checkpoints += batch.checkpoints.length;
  }

  /**
   * Compacts (a writer), then releases the journal, the lock and the database. Idempotent.
   * Called once per command by the runner's session (CLI and editor runner alike) whatever way
   * the run ended, so that after a clean exit the database file alone, as any SQLite client
   * opens it, is the whole case. A compaction that fails here (disk full) loses nothing (every
   * commit is in the journal, which the next writer folds in): it is added to `warnings` for
   * the caller to report, and close goes on to release the lock.
   */
  close(): void {
    if (this.closed) return;
    try {
      if (this.journal && this.journal.bytes > 0) this.compact();
    } catch (e) {
      this.warnings.push(
        `compaction of ${this.file} on close failed (${errorMessage(e)}); its journal keeps every commit and the next writer or \`casefile compact\` folds it in`,
      );
    } finally {
      this.closed = true;
      this.journal?.close();
      this.lock?.release();
      this.freeStatements();
      this.db.close();
    }
  }

  /** Undoes the batch `commit` was applying, keeping the batches before it in the open transaction. */
  private undoBatch(): void {
    try {
      this.execute("ROLLBACK TO batch");
      this.execute("RELEASE batch");
    } catch (e) {
      // SQLite ended the whole transaction itself (out of memory...): the batches committed
      // since the last compaction are in the journal but no longer in this database.
      this.lostTransaction(e);
    }
  }

  /** Commits the transaction the batches since the last compaction were applied in (see commit). */
  private endTransaction(): void {
    if (!this.inTransaction) return;
    try {
      this.execute("COMMIT");
      this.inTransaction = false;
    } catch (e) {
      this.lostTransaction(e);
      throw e;
    }
  }

  /**
   * From here on this database lacks commits the journal holds: it must not be written out (a
   * compaction would then truncate the journal and lose them) nor committed to again.
   */
  private lostTransaction(cause: unknown): void {
    this.inTransaction = false;
    this.lost = errorMessage(cause);
  }

  private writable(): JournalWriter {
    if (this.closed) throw new Error(`case file ${this.file} is closed`);
    if (this.readOnly || !this.journal) {
      throw new CasefileError("READ_ONLY", `${this.file} is open read-only; open it without readOnly to write`, { file: this.file });
    }
    if (this.lost !== undefined) {
      throw new CasefileError(
        "CORRUPT_CASE_FILE",
        `${this.file}: SQLite rolled back this writer's open transaction (${this.lost}); its commits are safe in the journal: reopen the case file`,
        { file: this.file },
      );
    }
    return this.journal;
  }
}
