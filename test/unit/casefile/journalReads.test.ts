import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import fs from "node:fs";
import { mkdtempSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { HEADER_BYTES, JournalWriter, encodeRecord, readJournal } from "../../../src/casefile/journal";
import { PowerLossFs } from "./helpers/powerLossFs";

/**
 * The journal read from an offset (a reader's refresh), a record's header under its checksum,
 * and what a reboot finds after the writer takes records back: survivors of the mutation run
 * over journal.ts (issue 18), each test naming the bug it catches.
 */

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), "casefile-s18b-journal-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function journalOf(count: number): { file: string; offsets: number[] } {
  const file = path.join(dir, "j.journal");
  const records = Array.from({ length: count }, (_, i) => encodeRecord(i + 1, JSON.stringify({ n: i + 1 })));
  const offsets = records.map((_, i) => records.slice(0, i).reduce((sum, r) => sum + r.length, 0));
  writeFileSync(file, Buffer.concat(records));
  return { file, offsets };
}

describe("journal read from where a reader left off", () => {
  // Kills `from + at` offsets and `from + buf.length` lengths computed from the slice instead of the file.
  it("gives offsets and lengths from the start of the file, whatever byte it starts at", () => {
    const { file, offsets } = journalOf(3);
    const scan = readJournal(file, offsets[1]);
    assert.deepEqual(
      { records: scan.records.map((r) => [r.seq, r.offset, r.payload]), validLength: scan.validLength, fileLength: scan.fileLength },
      {
        records: [
          [2, offsets[1], { n: 2 }],
          [3, offsets[2], { n: 3 }],
        ],
        validLength: statSync(file).size,
        fileLength: statSync(file).size,
      },
      "the scan from the second record",
    );
  });

  it("a torn tail and a damaged record after the offset are placed in the file, not in the slice", () => {
    const { file, offsets } = journalOf(3);
    const size = statSync(file).size;
    writeFileSync(file, Buffer.concat([readFileSync(file), encodeRecord(4, '{"n":4}').subarray(0, 10)]));
    const torn = readJournal(file, offsets[1]);
    assert.deepEqual([torn.tornTailAt, torn.validLength, torn.fileLength], [size, size, size + 10], "the torn tail's place");
    const bytes = readFileSync(file).subarray(0, size);
    bytes[offsets[1]! + HEADER_BYTES] ^= 0xff;
    writeFileSync(file, bytes);
    assert.throws(
      () => readJournal(file, offsets[1]),
      new RegExp(`damaged record at byte ${offsets[1]} is followed by a good record at byte ${offsets[2]}$`),
    );
  });

  // Kills readFrom's Math.max(0, ...) bound: a journal cut shorter than the offset (a compaction's
  // truncate) reads as nothing after it.
  it("reads nothing, without failing, from past the end of a journal that was cut shorter", () => {
    const { file } = journalOf(2);
    const size = statSync(file).size;
    const scan = readJournal(file, size + 100);
    assert.deepEqual([scan.records, scan.tornTailAt], [[], undefined], "nothing to read");
  });

  // Kills the checksum's coverage of the header: a flipped sequence or length byte is damage.
  it("a record whose sequence number or length was changed is damage, not a record", () => {
    for (const [what, at] of [
      ["sequence", 8],
      ["length", 4],
    ] as const) {
      const { file, offsets } = journalOf(2);
      const bytes = readFileSync(file);
      bytes[offsets[1]! + at] ^= 0x01;
      writeFileSync(file, bytes);
      const scan = readJournal(file);
      assert.deepEqual([scan.records.map((r) => r.seq), scan.tornTailAt], [[1], offsets[1]], `a changed ${what} byte`);
    }
  });
});

describe("journal writer: what a reboot finds", () => {
  // Kills rollbackTo's fsync: records taken back must stay taken back after a power cut.
  it("records taken back, and a journal emptied, stay so after a power cut", () => {
    const fs = new PowerLossFs();
    const file = path.join(dir, "w.journal");
    const { writer } = JournalWriter.open(file, 0, fs);
    fs.fsyncDir(dir);
    writer.append(1, '{"n":1}');
    const one = writer.bytes;
    writer.append(2, '{"n":2}');
    writer.rollbackTo(one);
    const reboot = (name: string) => {
      const into = path.join(dir, name);
      fs.materialize(dir, into, "durable");
      return readJournal(path.join(into, "w.journal")).records.map((r) => r.seq);
    };
    assert.deepEqual(reboot("after-rollback"), [1], "the record taken back is gone after a reboot");
    writer.truncate();
    assert.deepEqual(reboot("after-truncate"), [], "the emptied journal is empty after a reboot");
    writer.close();
  });

  // Kills close's early return for a closed writer.
  it("closing twice is harmless", () => {
    const { writer } = JournalWriter.open(path.join(dir, "twice.journal"), 0);
    writer.append(1, "{}");
    writer.close();
    assert.doesNotThrow(() => writer.close(), "a second close");
  });
});

/**
 * `record` (as encodeRecord made it) with its magic replaced and its length field set, and a
 * checksum computed as a writer would over the header and the payload bytes it holds: records
 * crafted by hand, which the checksum alone would pass as whole.
 */
function sealedAs(record: Buffer, magic: string, length = record.length - HEADER_BYTES): Buffer {
  const out = Buffer.from(record);
  out.write(magic, 0, "latin1");
  out.writeUInt32LE(length, 4);
  createHash("sha256").update(out.subarray(0, 16)).update(out.subarray(HEADER_BYTES)).digest().copy(out, 16, 0, 8);
  return out;
}

// journal.ts recordAt's checks besides the checksum. A torn or flipped record fails the checksum
// anyway; these are the records whose checksum is right and which still are no record of ours.
describe("journal records crafted with a right checksum", () => {
  // kills journal.ts:87 ConditionalExpression (the magic check) -> false
  it("a record of another format (its own magic) followed by one of ours is refused as damage", () => {
    const file = path.join(dir, "m.journal");
    const other = sealedAs(encodeRecord(1, '{"n":1}'), "CFJ0");
    writeFileSync(file, Buffer.concat([other, encodeRecord(2, '{"n":2}')]));
    assert.throws(
      () => readJournal(file),
      (e: Error & { code?: string }) => {
        assert.equal(e.code, "CORRUPT_CASE_FILE", `the code (${e.message})`);
        assert.equal(
          e.message,
          `journal ${file} is corrupt: damaged record at byte 0 is followed by a good record at byte ${other.length}`,
          "the message",
        );
        return true;
      },
      "a CFJ0 record",
    );
  });

  // kills journal.ts:90 ConditionalExpression (the whole bound) -> false, LogicalOperator || -> &&,
  // and ConditionalExpression end > buf.length -> false: the checksum covers only the bytes read.
  it("a last record claiming more payload than the file holds is a torn tail, even when its checksum fits what is there", () => {
    const { file } = journalOf(2);
    const size = statSync(file).size;
    const long = sealedAs(encodeRecord(3, '{"n":3}'), "CFJ1", 7 + 100);
    writeFileSync(file, Buffer.concat([readFileSync(file), long]));
    const scan = readJournal(file);
    assert.deepEqual(
      { seqs: scan.records.map((r) => r.seq), tornTailAt: scan.tornTailAt, validLength: scan.validLength },
      { seqs: [1, 2], tornTailAt: size, validLength: size },
      "the short record left out as torn",
    );
  });

  // kills journal.ts:86 EqualityOperator offset + HEADER_BYTES > buf.length -> >=
  it("a whole header with an empty payload at the end is a record, refused as not JSON", () => {
    const { file } = journalOf(1);
    const size = statSync(file).size;
    writeFileSync(file, Buffer.concat([readFileSync(file), encodeRecord(2, "")]));
    assert.throws(
      () => readJournal(file),
      (e: Error & { code?: string }) => {
        assert.equal(e.code, "CORRUPT_CASE_FILE", `the code (${e.message})`);
        assert.match(e.message, new RegExp(`is corrupt: record at byte ${size} \\(sequence 2\\) is not JSON: `), "the message");
        return true;
      },
      "an empty payload",
    );
  });
});

describe("journal read while a compaction truncates it", () => {
  // The truncate lands between the reader's fstat and its read: the read gets fewer bytes than
  // the size it was told. node:fs's readSync is wrapped to cut the file, for real, just before
  // the first read of the journal, then read as usual.
  function cutBeforeFirstRead(file: string, to: number, body: () => void): void {
    const real = fs.readSync;
    let cut = false;
    let reads = 0;
    fs.readSync = ((...args: Parameters<typeof fs.readSync>) => {
      // A read loop that does not stop at the end of the file would spin here for ever.
      if (++reads > 100) throw new Error("the journal was read 100 times past its end");
      if (!cut) {
        cut = true;
        truncateSync(file, to);
      }
      return real(...args);
    }) as typeof fs.readSync;
    try {
      body();
    } finally {
      fs.readSync = real;
    }
    assert.ok(cut, "the journal was read through readSync");
  }

  // kills journal.ts readFrom: 145 ArithmeticOperator buf.length - got -> +, from + got -> -,
  // 146 ConditionalExpression n === 0 -> false (reads forever), 149 got === buf.length -> true, !==.
  it("reads the records the shorter file holds, with its length, and no torn tail", () => {
    const { file, offsets } = journalOf(3);
    cutBeforeFirstRead(file, offsets[2]!, () => {
      const scan = readJournal(file);
      assert.deepEqual(
        { seqs: scan.records.map((r) => r.seq), validLength: scan.validLength, fileLength: scan.fileLength, tornTailAt: scan.tornTailAt },
        { seqs: [1, 2], validLength: offsets[2], fileLength: offsets[2], tornTailAt: undefined },
        "the scan of the journal cut after its second record",
      );
    });
  });
});

describe("journal writer: what opening it writes", () => {
  // kills journal.ts:195 ConditionalExpression fstatSync(fd).size > validLength -> true
  it("an intact journal is opened without a truncate or an fsync", () => {
    const { file } = journalOf(2);
    const pfs = new PowerLossFs();
    const { writer } = JournalWriter.open(file, readJournal(file).validLength, pfs);
    writer.close();
    assert.deepEqual(
      pfs.calls.map((c) => `${c.op} ${c.detail ?? ""}`.trim()),
      ["open a", "close"],
      "the calls opening and closing made",
    );
  });

  // kills journal.ts:197 CallExpression fs.fsync(fd) -> (removed) after the torn tail's cut
  it("a torn tail cut on open is gone after a power cut", () => {
    const { file } = journalOf(2);
    const size = statSync(file).size;
    writeFileSync(file, Buffer.concat([readFileSync(file), encodeRecord(3, '{"n":3}').subarray(0, 10)]));
    const pfs = new PowerLossFs();
    const { writer } = JournalWriter.open(file, readJournal(file).validLength, pfs);
    const into = path.join(dir, "reboot");
    pfs.materialize(dir, into, "durable");
    writer.close();
    const rebooted = path.join(into, path.basename(file));
    assert.equal(statSync(rebooted).size, size, "the journal a reboot finds ends at the last good record");
    assert.deepEqual(
      readJournal(rebooted).records.map((r) => r.seq),
      [1, 2],
      "its records",
    );
  });
});
