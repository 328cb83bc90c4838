import { createHash } from "node:crypto";
import { closeSync, existsSync, fstatSync, openSync, readSync } from "node:fs";
import { CasefileError, errorMessage } from "../engine/errors";
import { nodeFs, type CaseFileFs } from "./caseFileFs";

/**
 * The journal beside a case file (`<file>.journal`): every commit is appended here and fsync'd
 * before `commit` returns, because rewriting the whole sql.js database per superstep costs time
 * linear in its size. Compaction folds the journal into the database and truncates it.
 *
 * A record is a 24-byte header and a JSON payload (one CommitBatch):
 *   0  magic "CFJ1"
 *   4  payload length, uint32 LE
 *   8  sequence number, uint64 LE (increasing over the life of the case file, never reused)
 *   16 checksum: first 8 bytes of sha256(header bytes 0..15 + payload)
 * The sequence number lets replay skip what the database already holds (meta.journal_seq), which
 * makes a crash between compaction's rename and its truncate harmless.
 */

const MAGIC = Buffer.from("CFJ1", "latin1");
export const HEADER_BYTES = 24;
/** Larger lengths are taken as damage rather than trusted (a batch is never near this size). */
const MAX_PAYLOAD = 1 << 30;

export interface JournalRecord {
  seq: number;
  /** Byte offset of the record's header in the journal. */
  offset: number;
  /** The parsed payload; only JSON.parse ran on it. */
  payload: unknown;
}

export interface JournalScan {
  records: JournalRecord[];
  /** Bytes up to the end of the last good record: where the next record is to be written. */
  validLength: number;
  fileLength: number;
  /** Set when bytes after the last good record form no good record (a torn write at a crash). */
  tornTailAt?: number;
}

export function journalPath(caseFile: string): string {
  return caseFile + ".journal";
}

function checksum(header: Buffer, payload: Buffer): Buffer {
  return createHash("sha256").update(header.subarray(0, 16)).update(payload).digest().subarray(0, 8);
}

export function encodeRecord(seq: number, payloadJson: string): Buffer {
  return sealRecord(encodeParts([payloadJson], HEADER_BYTES).bytes, seq);
}

/**
 * The UTF-8 of `parts` one after another in one buffer, after `room` bytes left for a record's
 * header; `offsets[i]` is where part i starts and `offsets[parts.length]` where the last ends.
 * A commit encodes its batch's JSON this way once: the record is the whole, and each row's bytes
 * are bound to its `data` column as a view of it (tables.ts writeRows).
 */
export function encodeParts(parts: readonly string[], room: number): { bytes: Buffer; offsets: number[] } {
  let length = room;
  for (const part of parts) length += Buffer.byteLength(part, "utf8");
  // Every byte is written below: the header by sealRecord, the payload here.
  const bytes = Buffer.allocUnsafe(length);
  const offsets: number[] = new Array(parts.length + 1);
  let at = room;
  for (let i = 0; i < parts.length; i++) {
    offsets[i] = at;
    at += bytes.write(parts[i]!, at, "utf8");
  }
  offsets[parts.length] = at;
  return { bytes, offsets };
}

/** Makes `record` (HEADER_BYTES of room, then the payload) a record of sequence `seq`: its header and checksum. */
export function sealRecord(record: Buffer, seq: number): Buffer {
  MAGIC.copy(record, 0);
  record.writeUInt32LE(record.length - HEADER_BYTES, 4);
  record.writeBigUInt64LE(BigInt(seq), 8);
  checksum(record, record.subarray(HEADER_BYTES)).copy(record, 16);
  return record;
}

/** The record at `offset` if it is whole and its checksum matches, else undefined. */
function recordAt(buf: Buffer, offset: number): { seq: number; end: number; payload: Buffer } | undefined {
  if (offset + HEADER_BYTES > buf.length) return undefined;
  if (buf.compare(MAGIC, 0, 4, offset, offset + 4) !== 0) return undefined;
  const length = buf.readUInt32LE(offset + 4);
  const end = offset + HEADER_BYTES + length;
  if (length > MAX_PAYLOAD || end > buf.length) return undefined;
  const header = buf.subarray(offset, offset + HEADER_BYTES);
  const payload = buf.subarray(offset + HEADER_BYTES, end);
  if (!checksum(header, payload).equals(header.subarray(16, 24))) return undefined;
  return { seq: Number(buf.readBigUInt64LE(offset + 8)), end, payload };
}

/**
 * Reads every good record from byte `from` on (0: the whole journal; a reader's refresh passes
 * where its last read ended, which is a record boundary). A bad record with nothing good after
 * it is the tail a crash tore mid-append, or a record a writer is appending right now: it is
 * reported (tornTailAt) and left out. A bad record followed by a good one cannot come from a
 * crash, since appends are sequential, so it is corruption and refused. Offsets are from the
 * start of the file whatever `from` is.
 */
export function readJournal(file: string, from = 0): JournalScan {
  if (!existsSync(file)) return { records: [], validLength: 0, fileLength: 0 };
  const buf = readFrom(file, from);
  const records: JournalRecord[] = [];
  const fileLength = from + buf.length;
  let at = 0;
  while (at < buf.length) {
    const offset = from + at;
    const rec = recordAt(buf, at);
    if (!rec) {
      const later = nextGoodRecord(buf, at + 1);
      if (later !== undefined) {
        throw corrupt(file, offset, `damaged record at byte ${offset} is followed by a good record at byte ${from + later}`);
      }
      return { records, validLength: offset, fileLength, tornTailAt: offset };
    }
    const prev = records[records.length - 1];
    if (prev && rec.seq <= prev.seq) {
      throw corrupt(file, offset, `record at byte ${offset} has sequence ${rec.seq}, not after ${prev.seq}`);
    }
    let payload: unknown;
    try {
      payload = JSON.parse(rec.payload.toString("utf8"));
    } catch (e) {
      throw corrupt(file, offset, `record at byte ${offset} (sequence ${rec.seq}) is not JSON: ${errorMessage(e)}`);
    }
    records.push({ seq: rec.seq, offset, payload });
    at = rec.end;
  }
  return { records, validLength: fileLength, fileLength };
}

/** The file's bytes from `from` to its end as it is now (nothing when it is shorter). */
function readFrom(file: string, from: number): Buffer {
  const fd = openSync(file, "r");
  try {
    const size = fstatSync(fd).size;
    const buf = Buffer.alloc(Math.max(0, size - from));
    let got = 0;
    while (got < buf.length) {
      const n = readSync(fd, buf, got, buf.length - got, from + got);
      if (n === 0) break; // cut shorter while we read (a compaction's truncate): what was read is all there is
      got += n;
    }
    return got === buf.length ? buf : buf.subarray(0, got);
  } finally {
    closeSync(fd);
  }
}

function nextGoodRecord(buf: Buffer, from: number): number | undefined {
  for (let at = buf.indexOf(MAGIC, from); at !== -1; at = buf.indexOf(MAGIC, at + 1)) {
    if (recordAt(buf, at)) return at;
  }
  return undefined;
}

export function corrupt(file: string, offset: number, detail: string): CasefileError {
  return new CasefileError("CORRUPT_CASE_FILE", `journal ${file} is corrupt: ${detail}`, { file, offset });
}

/**
 * The writer's handle on the journal, kept open for the store's lifetime so that a commit costs
 * one write and one fsync. Only a store holding the case file's lock creates one.
 */
export class JournalWriter {
  private size: number;
  private failed: Error | undefined;

  /** Set once a record is appended: a journal this writer created and never used is removed on close. */
  private used = false;

  private constructor(
    readonly file: string,
    private fd: number | undefined,
    private readonly created: boolean,
    private readonly fs: CaseFileFs,
  ) {
    this.size = fstatSync(fd!).size;
  }

  /**
   * Opens (creating if needed) the journal and cuts it to `validLength`, dropping a torn tail
   * so that new records never follow garbage. Returns whether the file was created, in which
   * case the caller fsyncs the directory so that the new name is durable too.
   */
  static open(file: string, validLength: number, fs: CaseFileFs = nodeFs): { writer: JournalWriter; created: boolean } {
    const created = !existsSync(file);
    const fd = fs.open(file, "a");
    try {
      if (fstatSync(fd).size > validLength) {
        fs.ftruncate(fd, validLength);
        fs.fsync(fd);
      }
    } catch (e) {
      fs.close(fd);
      throw e;
    }
    return { writer: new JournalWriter(file, fd, created, fs), created };
  }

  get bytes(): number {
    return this.size;
  }

  /**
   * Appends one record and fsyncs; the commit is durable when this returns. If the write or the
   * fsync fails, the journal is cut back to where it was and the writer refuses further appends:
   * after a failed fsync the kernel may have dropped the pages, so what is on disk is unknown and
   * the store must be reopened.
   */
  append(seq: number, payloadJson: string): void {
    this.appendRecord(encodeRecord(seq, payloadJson));
  }

  /** `append` of a record already encoded (encodeRecord, sealRecord). */
  appendRecord(record: Buffer): void {
    if (this.failed)
      throw new CasefileError(
        "CORRUPT_CASE_FILE",
        `journal ${this.file}: an earlier write failed (${this.failed.message}); reopen the case file`,
      );
    const fd = this.handle();
    this.used = true;
    const before = this.size;
    try {
      let written = 0;
      while (written < record.length) written += this.fs.write(fd, record, written, record.length - written);
      this.fs.fsync(fd);
    } catch (e) {
      this.fail(e as Error, before);
    }
    this.size = before + record.length;
  }

  private fail(e: Error, cutTo: number): never {
    this.failed = e;
    try {
      this.fs.ftruncate(this.handle(), cutTo);
    } catch {
      // The torn tail left behind is exactly what readJournal ignores.
    }
    throw e;
  }

  /** Cuts the journal back to `size` bytes (compaction empties it this way). */
  rollbackTo(size: number): void {
    const fd = this.handle();
    this.fs.ftruncate(fd, size);
    this.fs.fsync(fd);
    this.size = size;
  }

  /** Empties the journal once compaction has made the database file hold everything in it. */
  truncate(): void {
    this.rollbackTo(0);
  }

  /**
   * Closes the handle. A journal this writer created and never appended to is removed, so that a
   * writer refused before its first commit (a damaged record found on resume) leaves nothing
   * beside the case file; a missing journal reads as an empty one.
   */
  close(): void {
    if (this.fd === undefined) return;
    this.fs.close(this.fd);
    this.fd = undefined;
    if (this.created && !this.used) this.fs.remove(this.file);
  }

  private handle(): number {
    if (this.fd === undefined) throw new Error(`journal ${this.file} is closed`);
    return this.fd;
  }
}
