import assert from "node:assert/strict";
import { appendFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { nodeFs, type CaseFileFs } from "../../../src/casefile/caseFileFs";
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
      // Shorter than the magic and length fields (kills the header bound's mutants in recordAt).
      ["three bytes of a header", (good, last) => Buffer.concat([good, last.subarray(0, 3)])],
      ["six bytes of a header", (good, last) => Buffer.concat([good, last.subarray(0, 6)])],
      ["half a header", (good, last) => Buffer.concat([good, last.subarray(0, HEADER_BYTES / 2)])],
      // The search for a later good record steps past each false magic (kills `at - 1`, a loop forever).
      ["garbage holding the magic three times", (good) => Buffer.concat([good, Buffer.from("CFJ1xxxxCFJ1yyyyyyyyCFJ1zz", "latin1")])],
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

// Survivors of the mutation run over journal.ts (issue 18): each test names what it kills.
describe("journal writer: what mutation testing found unchecked", () => {
  /** Open descriptors of this process (Linux, where the tests and CI run). */
  const openFds = () => readdirSync("/proc/self/fd").length;

  // Kills JournalWriter.open's close on failure (no test made the torn-tail cut fail).
  it("closes the journal again when cutting its torn tail fails, and says why", () => {
    const file = path.join(dir, "torn.journal");
    writeFileSync(file, "0123456789");
    const failing: CaseFileFs = {
      ...nodeFs,
      ftruncate: () => {
        throw Object.assign(new Error("EIO: i/o error, ftruncate"), { code: "EIO" });
      },
    };
    const before = openFds();
    assert.throws(() => JournalWriter.open(file, 4, failing), /EIO: i\/o error, ftruncate/);
    assert.equal(openFds(), before, "no descriptor left open");
    assert.equal(readFileSync(file, "utf8"), "0123456789", "the file as it was");
  });

  // Kills `record.length + written` in append's write loop: write(2) may write fewer bytes than
  // asked (a signal, a full pipe, some file systems), and the loop must ask for the rest.
  it("appends whole records through a file system that writes a few bytes per call", () => {
    const short: CaseFileFs = { ...nodeFs, write: (fd, buf, offset, length) => nodeFs.write(fd, buf, offset, Math.min(length, 7)) };
    const file = path.join(dir, "short.journal");
    const { writer } = JournalWriter.open(file, 0, short);
    try {
      writer.append(1, '{"a":"a payload longer than seven bytes"}');
      writer.append(2, '{"b":2}');
    } finally {
      writer.close();
    }
    assert.deepEqual(
      readJournal(file).records.map((r) => r.payload),
      [{ a: "a payload longer than seven bytes" }, { b: 2 }],
      "the records read back whole",
    );
  });

  // Kills the emptied `fail` (and its ftruncate): a write that fails half-way (disk full) must
  // not leave half a record that a later append would follow.
  it("cuts the journal back to where it was when a write fails half-way, and refuses further appends", () => {
    let calls = 0;
    const full: CaseFileFs = {
      ...nodeFs,
      write: (fd, buf, offset, length) => {
        if (++calls === 3) throw Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" });
        return nodeFs.write(fd, buf, offset, calls === 2 ? Math.floor(length / 2) : length);
      },
    };
    const file = path.join(dir, "full.journal");
    const { writer } = JournalWriter.open(file, 0, full);
    try {
      writer.append(1, '{"a":1}');
      const before = statSync(file).size;
      assert.throws(() => writer.append(2, '{"a":2}'), /ENOSPC/);
      assert.equal(statSync(file).size, before, "half a record was left in the journal");
      assert.throws(
        () => writer.append(3, '{"a":3}'),
        /an earlier write failed \(ENOSPC: no space left on device, write\); reopen the case file/,
      );
    } finally {
      writer.close();
    }
    const scan = readJournal(file);
    assert.deepEqual([scan.records.map((r) => r.seq), scan.tornTailAt], [[1], undefined], "one good record, no torn tail");
  });

  // Kills the emptied close, its fs.close, `used = true` from the start and the removal's condition.
  it("close releases its descriptor, removes a journal it created and never used, keeps one it used", () => {
    const before = openFds();
    const unused = path.join(dir, "unused.journal");
    const a = JournalWriter.open(unused, 0);
    assert.equal(a.created, true);
    a.writer.close();
    assert.equal(existsSync(unused), false, "a journal created and never appended to is left behind");
    const used = path.join(dir, "used.journal");
    const b = JournalWriter.open(used, 0).writer;
    b.append(1, "{}");
    b.close();
    assert.equal(existsSync(used), true, "a journal holding a record was removed");
    assert.equal(openFds(), before, "a closed writer keeps a descriptor open");
    assert.throws(() => b.append(2, "{}"), new RegExp(`^Error: journal ${used.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} is closed$`));
  });

  // Kills the deleted closeSync in readJournal's read: readers (the inspector refreshing) read
  // the journal again and again.
  it("reading the journal leaves no descriptor open", () => {
    const { file, offsets } = journalOf({ a: 1 }, { b: 2 });
    const before = openFds();
    for (let i = 0; i < 20; i++) readJournal(file, i % 2 === 0 ? 0 : offsets[1]);
    assert.equal(openFds(), before, "descriptors left open by 20 reads");
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
