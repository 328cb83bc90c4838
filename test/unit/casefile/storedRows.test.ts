import assert from "node:assert/strict";
import { appendFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { SqlJsStore } from "../../../src/casefile";
import { encodeRecord, journalPath, readJournal } from "../../../src/casefile/journal";
import { loadSqlJs } from "../../../src/casefile/sqlite";
import type { CommitBatch } from "../../../src/engine/store";
import { checkpoint, ref, run, step } from "./builders";

/**
 * What the cheaper commit and open (one serialisation per row, JSON bound as UTF-8 bytes, the
 * journal replayed in one transaction, a database read into a buffer with room to grow) must
 * keep: rows any SQLite client reads as JSON text, a case file that grows well past the room it
 * was opened with, and a journal record that repeats a stored row refused as corruption.
 */

let dir: string;
const at = (name: string): string => path.join(dir, name);

beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), "casefile-stored-rows-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** Superstep `i` of run r1: its checkpoint, one step, and a state value of `size` characters. */
function superstep(i: number, size: number): CommitBatch {
  return {
    checkpoints: [checkpoint(`c${i}`, "r1", i, { keys: { doc: ref("r1", i + 1) } })],
    values: [{ run: "r1", key: "doc", version: i + 1, value: { text: `é${i}😀`.padEnd(size, "x") } }],
    steps: [step(`s${i}`, "r1", i)],
  };
}

describe("rows a case file stores", () => {
  it("are JSON text that a plain SQLite client reads back, accents and emoji included", async () => {
    const file = at("text.casefile");
    const store = await SqlJsStore.open(file, { create: true });
    store.commit({ runs: [run("r1")] });
    store.commit(superstep(0, 50));
    store.close();

    const SQL = await loadSqlJs();
    const db = new SQL.Database(readFileSync(file));
    try {
      const rows = db.exec("SELECT typeof(data), data, json_extract(data, '$.value.text') FROM state_values")[0]!.values;
      assert.equal(rows.length, 1, "one state value row");
      const [type, data, text] = rows[0]!;
      assert.equal(type, "text", "the data column holds TEXT, not a blob");
      assert.deepEqual(JSON.parse(data as string).value, superstep(0, 50).values![0]!.value, "the row's JSON is the value committed");
      assert.ok((text as string).startsWith("é0😀"), `json_extract reads the text as committed, got ${String(text)}`);
    } finally {
      db.close();
    }
  });

  it("survive a case file growing far past the room it was opened with, through replay, commits and compaction", async () => {
    const file = at("grow.casefile");
    const first = await SqlJsStore.open(file, { create: true, compactAtBytes: 2 ** 40 });
    first.commit({ runs: [run("r1")] });
    for (let i = 0; i < 40; i++) first.commit(superstep(i, 64 * 1024)); // ~2.6 MB in the journal, nothing compacted
    // A reader now replays the journal into a database of a few pages (its room: twice the journal).
    const reader = await SqlJsStore.open(file, { readOnly: true });
    assert.equal(reader.listCheckpoints("r1").length, 40, "the reader sees every journalled checkpoint");
    reader.close();
    first.close(); // compacts

    const writer = await SqlJsStore.open(file, { compactAtBytes: 2 ** 40 });
    // ~20 MB more: a writer's room (16 MB at least, databaseFile.ts) is used up and the file grows on.
    for (let i = 40; i < 360; i++) writer.commit(superstep(i, 64 * 1024));
    const latest = writer.latestCheckpoint("r1")!;
    assert.equal(latest.superstep, 359, "the last commit is the latest checkpoint");
    writer.close();

    const again = await SqlJsStore.open(file, { readOnly: true });
    try {
      assert.equal(again.listCheckpoints("r1").length, 360, "every checkpoint is in the compacted file");
      for (const i of [0, 39, 40, 100, 359]) {
        const value = again.readValues(again.getCheckpoint(`c${i}`)!.keys).doc as { text: string };
        assert.equal(
          value.text,
          (superstep(i, 64 * 1024).values![0]!.value as { text: string }).text,
          `superstep ${i}'s value reads back whole`,
        );
      }
    } finally {
      again.close();
    }
  });

  it("are refused as corruption when a journal record repeats a row the database holds", async () => {
    const file = at("repeat.casefile");
    const store = await SqlJsStore.open(file, { create: true });
    store.commit({ runs: [run("r1")] });
    store.commit(superstep(0, 10));
    store.close(); // compacted: journal empty, the database holds up to its last sequence number
    const SQL = await loadSqlJs();
    const db = new SQL.Database(readFileSync(file));
    const seq = db.exec("SELECT journal_seq FROM meta")[0]!.values[0]![0] as number;
    db.close();
    // A well-formed, checksummed record that follows on but writes step s0 a second time.
    appendFileSync(journalPath(file), encodeRecord(seq + 1, JSON.stringify({ steps: [step("s0", "r1", 3)] })));
    assert.equal(readJournal(journalPath(file)).records.length, 1, "the record itself is whole");
    await assert.rejects(
      SqlJsStore.open(file, { readOnly: true }),
      (e: Error & { code?: string }) =>
        e.code === "CORRUPT_CASE_FILE" && /sequence \d+\) cannot be applied: .*steps row s0 already exists/.test(e.message),
      "open refuses the journal, naming the record and the repeated row",
    );
  });
});
