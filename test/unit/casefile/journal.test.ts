import assert from "node:assert/strict";
import { appendFileSync, mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { HEADER_BYTES, JournalWriter, encodeRecord, readJournal } from "../../../src/casefile/journal";
import { acquireLock, lockPath } from "../../../src/casefile/lock";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), "casefile-journal-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function journalOf(...payloads: unknown[]): { file: string; offsets: number[] } {
  const file = path.join(dir, "j.journal");
  const offsets: number[] = [];
  let offset = 0;
  const parts = payloads.map((p, i) => {
    const rec = encodeRecord(i + 1, JSON.stringify(p));
    offsets.push(offset);
    offset += rec.length;
    return rec;
  });
  writeFileSync(file, Buffer.concat(parts));
  return { file, offsets };
}

describe("journal records", () => {
  it("reads back what was written, with sequence numbers and offsets", () => {
    const { file, offsets } = journalOf({ a: 1 }, { b: [2, "two"] }, {});
    const scan = readJournal(file);
    assert.deepEqual(
      scan.records.map((r) => [r.seq, r.offset, r.payload]),
      [
        [1, offsets[0], { a: 1 }],
        [2, offsets[1], { b: [2, "two"] }],
        [3, offsets[2], {}],
      ],
    );
    assert.equal(scan.validLength, statSync(file).size);
    assert.equal(scan.tornTailAt, undefined);
  });

  it("treats any kind of damaged last record as a torn tail", () => {
    const tails: [string, (good: Buffer, last: Buffer) => Buffer][] = [
      ["half a header", (good, last) => Buffer.concat([good, last.subarray(0, HEADER_BYTES / 2)])],
      ["a header without all its payload", (good, last) => Buffer.concat([good, last.subarray(0, last.length - 3)])],
      ["a flipped payload byte", (good, last) => Buffer.concat([good, Buffer.from(last).fill(0x41, HEADER_BYTES + 2, HEADER_BYTES + 3)])],
      ["zeros where the record should be", (good, last) => Buffer.concat([good, Buffer.alloc(last.length)])],
    ];
    for (const [what, damage] of tails) {
      const good = Buffer.concat([encodeRecord(1, '{"a":1}'), encodeRecord(2, '{"a":2}')]);
      const file = path.join(dir, "t.journal");
      writeFileSync(file, damage(good, encodeRecord(3, '{"a":3}')));
      const scan = readJournal(file);
      assert.deepEqual(
        scan.records.map((r) => r.seq),
        [1, 2],
        what,
      );
      assert.equal(scan.tornTailAt, good.length, what);
      assert.equal(scan.validLength, good.length, what);
    }
  });

  it("refuses a damaged record followed by a good one, naming the offset", () => {
    const { file, offsets } = journalOf({ a: 1 }, { a: 2 }, { a: 3 });
    const bytes = readFileSync(file);
    bytes[offsets[1]! + HEADER_BYTES + 1] ^= 0xff;
    writeFileSync(file, bytes);
    assert.throws(
      () => readJournal(file),
      (e: Error & { code?: string; details?: { offset?: number } }) =>
        e.code === "CORRUPT_CASE_FILE" &&
        e.details?.offset === offsets[1] &&
        e.message.includes(`j.journal is corrupt: damaged record at byte ${offsets[1]} is followed by a good record at byte ${offsets[2]}`),
    );
  });

  it("refuses sequence numbers that go backwards and checksummed payloads that are not JSON", () => {
    const file = path.join(dir, "s.journal");
    writeFileSync(file, Buffer.concat([encodeRecord(5, "{}"), encodeRecord(5, "{}")]));
    assert.throws(() => readJournal(file), /record at byte \d+ has sequence 5, not after 5/);
    writeFileSync(file, encodeRecord(1, "{not json"));
    assert.throws(() => readJournal(file), /record at byte 0 \(sequence 1\) is not JSON/);
  });

  it("a writer cuts a torn tail on open, appends durably, and can take a record back", () => {
    const { file } = journalOf({ a: 1 });
    const good = statSync(file).size;
    appendFileSync(file, Buffer.from("CFJ1 torn"));
    const { writer, created } = JournalWriter.open(file, readJournal(file).validLength);
    try {
      assert.equal(created, false);
      assert.equal(statSync(file).size, good);
      writer.append(2, '{"a":2}');
      const size = writer.bytes;
      writer.rollbackTo(good);
      assert.equal(statSync(file).size, good, "a record taken back is gone from the file too");
      writer.append(2, '{"a":2}');
      assert.equal(writer.bytes, size);
      writer.append(3, '{"a":3}');
      assert.deepEqual(
        readJournal(file).records.map((r) => r.payload),
        [{ a: 1 }, { a: 2 }, { a: 3 }],
      );
      writer.truncate();
      assert.equal(statSync(file).size, 0);
    } finally {
      writer.close();
    }
  });
});

describe("lock file", () => {
  it("takes over an unreadable lock once it is old, but not while it may be being written", () => {
    const caseFile = path.join(dir, "c.casefile");
    writeFileSync(lockPath(caseFile), "");
    assert.throws(
      () => acquireLock(caseFile),
      (e: Error & { code?: string }) => e.code === "CASE_FILE_LOCKED" && /being created by another process/.test(e.message),
    );
    const old = new Date(Date.now() - 60_000);
    utimesSync(lockPath(caseFile), old, old);
    const lock = acquireLock(caseFile);
    assert.equal(lock.tookOverFrom?.pid, 0);
    assert.equal(JSON.parse(readFileSync(lockPath(caseFile), "utf8")).pid, process.pid);
    lock.release();
  });

  it("refuses a lock held on another host, which it cannot check", () => {
    const caseFile = path.join(dir, "c.casefile");
    writeFileSync(lockPath(caseFile), JSON.stringify({ pid: 4242, hostname: "build-agent-7", createdAt: "2026-01-01T00:00:00.000Z" }));
    assert.throws(
      () => acquireLock(caseFile),
      (e: Error & { code?: string }) => e.code === "CASE_FILE_LOCKED" && /locked by pid 4242 on host build-agent-7/.test(e.message),
    );
  });

  it("release removes only its own lock", () => {
    const caseFile = path.join(dir, "c.casefile");
    const lock = acquireLock(caseFile);
    rmSync(lockPath(caseFile));
    writeFileSync(lockPath(caseFile), JSON.stringify({ pid: 1, hostname: os.hostname(), createdAt: "x" }));
    lock.release();
    assert.equal(JSON.parse(readFileSync(lockPath(caseFile), "utf8")).pid, 1, "someone else's lock stays");
  });
});
