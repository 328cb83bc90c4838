import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
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
