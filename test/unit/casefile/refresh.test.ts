import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs, {
  appendFileSync,
  copyFileSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  truncateSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { SqlJsStore } from "../../../src/casefile";
import { encodeRecord, journalPath } from "../../../src/casefile/journal";
import { isCasefileError } from "../../../src/engine/errors";
import type { CommitBatch } from "../../../src/engine/store";
import { checkpoint, event, ref, run, step } from "./builders";

/**
 * A read-only store kept open (the inspector's) and refreshed is always what a fresh open of the
 * case file reads: while a writer appends supersteps, compacts (renaming a new database over the
 * file), is cut mid-append, and while another process commits and compacts as fast as it can.
 */

let dir: string;
const at = (name: string): string => path.join(dir, name);

beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), "casefile-refresh-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function superstep(runId: string, s: number): CommitBatch {
  return {
    checkpoints: [checkpoint(`${runId}:${s}`, runId, s, { keys: { n: ref(runId, s + 1) } })],
    values: [{ run: runId, key: "n", version: s + 1, value: { s, pad: "x".repeat(300) } }],
    steps: [step(`${runId}:${s}:tick`, runId, s)],
    events: [event(runId, "checkpoint", s, { checkpoint: `${runId}:${s}` })],
  };
}

/** What the inspector shows of a run: its status, its supersteps, the state at the last one, the events. */
function view(store: SqlJsStore, runId: string): unknown {
  const cps = store.listCheckpoints(runId);
  const last = store.latestCheckpoint(runId);
  return {
    status: store.getRun(runId)?.status,
    checkpoints: cps.map((c) => c.id),
    steps: store.listSteps(runId).map((s) => s.id),
    state: last ? store.readValues(last.keys) : null,
    events: store.listEvents({ runId }).map((e) => [e.seq, e.type]),
    uncompacted: store.uncompactedSupersteps(),
  };
}

/** The view a fresh read-only open gives now. */
async function fresh(file: string, runId: string): Promise<unknown> {
  const s = await SqlJsStore.open(file, { readOnly: true });
  try {
    return view(s, runId);
  } finally {
    s.close();
  }
}

describe("refresh: a read-only store kept open reads what a fresh open reads", () => {
  it("applies only the supersteps a writer appended, and nothing when nothing changed", async () => {
    const file = at("case.casefile");
    const w = await SqlJsStore.open(file, { create: true, compactAtBytes: Number.MAX_SAFE_INTEGER });
    w.commit({ runs: [run("r1", { status: "running" })], events: [event("r1", "run_started")] });
    w.commit(superstep("r1", 0));
    const r = await SqlJsStore.open(file, { readOnly: true });
    assert.deepEqual((view(r, "r1") as { checkpoints: string[] }).checkpoints, ["r1:0"]);
    assert.equal(await r.refresh(), "unchanged");

    for (let s = 1; s < 4; s++) w.commit(superstep("r1", s));
    assert.equal(await r.refresh(), "appended");
    assert.deepEqual((view(r, "r1") as { checkpoints: string[] }).checkpoints, ["r1:0", "r1:1", "r1:2", "r1:3"]);
    assert.deepEqual(view(r, "r1"), await fresh(file, "r1"));

    w.commit({ runs: [run("r1", { status: "completed" })], events: [event("r1", "run_completed", 4)] });
    assert.equal(await r.refresh(), "appended");
    assert.equal(r.getRun("r1")?.status, "completed", "an upserted run record shows its new status");
    assert.deepEqual(view(r, "r1"), await fresh(file, "r1"));
    assert.equal(await r.refresh(), "unchanged");
    assert.deepEqual(r.warnings, []);
    w.close();
    r.close();
  });

  it("opens again when a compaction replaced the database file, before and after new appends", async () => {
    const file = at("case.casefile");
    const w = await SqlJsStore.open(file, { create: true, compactAtBytes: Number.MAX_SAFE_INTEGER });
    w.commit({ runs: [run("r1")] });
    for (let s = 0; s < 3; s++) w.commit(superstep("r1", s));
    const r = await SqlJsStore.open(file, { readOnly: true });

    w.compact(); // new database renamed over the file, journal emptied
    assert.equal(await r.refresh(), "reopened");
    assert.deepEqual(view(r, "r1"), await fresh(file, "r1"));

    // Compacted and then appended to past where the reader had read: the journal's bytes at the
    // reader's old offset belong to other records now.
    for (let s = 3; s < 6; s++) w.commit(superstep("r1", s));
    assert.equal(await r.refresh(), "appended");
    const grown = statSync(journalPath(file)).size;
    w.compact();
    for (let s = 6; s < 12; s++) w.commit(superstep("r1", s));
    assert.ok(statSync(journalPath(file)).size > grown, "the new journal is longer than the one the reader read");
    assert.equal(await r.refresh(), "reopened");
    const seen = view(r, "r1") as { checkpoints: string[] };
    assert.equal(seen.checkpoints.length, 12);
    assert.deepEqual(seen, await fresh(file, "r1"));
    w.close();
    r.close();
  });

  it("stays in step with a writer that compacts on its own every few commits", async () => {
    const file = at("case.casefile");
    // The smallest threshold there is (half the database file): a compaction every few dozen commits.
    const w = await SqlJsStore.open(file, { create: true, compactAtBytes: 1 });
    w.commit({ runs: [run("r1")] });
    const r = await SqlJsStore.open(file, { readOnly: true });
    const outcomes = new Set<string>();
    for (let s = 0; s < 150; s++) {
      w.commit(superstep("r1", s));
      if (s % 3 === 0) continue; // some refreshes see one commit, some several
      outcomes.add(await r.refresh());
      assert.deepEqual(view(r, "r1"), await fresh(file, "r1"), `after superstep ${s}`);
    }
    assert.ok(outcomes.has("appended") && outcomes.has("reopened"), `both paths ran: ${[...outcomes].join(", ")}`);
    w.close();
    assert.equal(await r.refresh(), "reopened", "the writer's close compacts");
    assert.deepEqual(view(r, "r1"), await fresh(file, "r1"));
    r.close();
  });

  it("leaves out a record still being appended, and applies it once it is whole", async () => {
    const file = at("case.casefile");
    const w = await SqlJsStore.open(file, { create: true, compactAtBytes: Number.MAX_SAFE_INTEGER });
    w.commit({ runs: [run("r1")] });
    w.commit(superstep("r1", 0));
    const before = readFileSync(journalPath(file));
    w.commit(superstep("r1", 1));
    const after = readFileSync(journalPath(file));
    // A copy of the case file as a reader finds it mid-append: the database file (as created:
    // nothing compacted yet), the journal growing to half its last record, then to its end.
    const copy = at("copy.casefile");
    copyFileSync(file, copy);
    writeFileSync(journalPath(copy), before);
    w.close();
    const r = await SqlJsStore.open(copy, { readOnly: true });
    assert.deepEqual((view(r, "r1") as { checkpoints: string[] }).checkpoints, ["r1:0"]);

    const last = after.subarray(before.length);
    appendFileSync(journalPath(copy), last.subarray(0, Math.floor(last.length / 2)));
    assert.equal(await r.refresh(), "unchanged", "half a record is not applied");
    assert.deepEqual((view(r, "r1") as { checkpoints: string[] }).checkpoints, ["r1:0"]);
    assert.deepEqual(r.warnings, [], "a record being appended is no torn tail to warn about");
    appendFileSync(journalPath(copy), last.subarray(Math.floor(last.length / 2)));
    assert.equal(await r.refresh(), "appended");
    assert.deepEqual((view(r, "r1") as { checkpoints: string[] }).checkpoints, ["r1:0", "r1:1"]);
    assert.deepEqual(view(r, "r1"), await fresh(copy, "r1"));
    r.close();
  });

  it("opens again when the journal was cut, and refuses a journal damaged under it as open does", async () => {
    const file = at("case.casefile");
    const w = await SqlJsStore.open(file, { create: true, compactAtBytes: Number.MAX_SAFE_INTEGER });
    w.commit({ runs: [run("r1")] });
    for (let s = 0; s < 3; s++) w.commit(superstep("r1", s));
    const journal = readFileSync(journalPath(file));
    const r = await SqlJsStore.open(file, { readOnly: true });
    w.close(); // compacts: the file now holds everything

    // Restore the pre-compaction journal beside the compacted file, then damage its middle.
    writeFileSync(journalPath(file), journal);
    await r.refresh();
    assert.deepEqual(view(r, "r1"), await fresh(file, "r1"));
    truncateSync(journalPath(file), 10);
    assert.equal(await r.refresh(), "reopened", "a journal shorter than what was read means it was rewritten");
    assert.deepEqual(view(r, "r1"), await fresh(file, "r1"));

    const w2 = await SqlJsStore.open(file, { compactAtBytes: Number.MAX_SAFE_INTEGER });
    w2.commit(superstep("r1", 3));
    w2.commit(superstep("r1", 4));
    const bytes = readFileSync(journalPath(file));
    bytes[30] = bytes[30]! ^ 0xff; // inside the first record, with a good record after it
    writeFileSync(journalPath(file), bytes);
    w2.commit(superstep("r1", 5)); // the writer does not know; a reader must not show a guess
    await assert.rejects(
      r.refresh(),
      (e: Error & { code?: string }) => e.code === "CORRUPT_CASE_FILE" && /journal .* is corrupt/.test(e.message),
    );
    w2.close();
    r.close();
  });

  // Kills `read.offset > 0` made always true (or `>= 0`, `<= 0`): a reader that read no journal
  // (the database file was copied alone) applies the journal a writer then starts, as it applies
  // any appends, rather than opening the whole file again.
  it("reads on into a journal that appeared after it opened a database file that had none", async () => {
    const file = at("case.casefile");
    const w = await SqlJsStore.open(file, { create: true });
    w.commit({ runs: [run("r1")] });
    w.close();
    rmSync(journalPath(file)); // the database file alone, as a copy of it is
    const r = await SqlJsStore.open(file, { readOnly: true });
    const w2 = await SqlJsStore.open(file, { compactAtBytes: Number.MAX_SAFE_INTEGER });
    w2.commit(superstep("r1", 0));
    assert.equal(await r.refresh(), "appended", "the new journal's records applied");
    assert.deepEqual(view(r, "r1"), await fresh(file, "r1"));
    w2.close();
    r.close();
  });

  // Kills the inode check dropped: a journal renamed over the one the reader read (a sync tool
  // or a restore from a backup puts the pair back that way), as long or longer, holds other
  // records at the offsets already read. Reading on from the old offset would show the old
  // first superstep with the new second one, a case that is in neither file.
  it("opens again when another journal was renamed over the one it read, even a longer one", async () => {
    const file = at("case.casefile");
    const base = await SqlJsStore.open(file, { create: true });
    base.commit({ runs: [run("r1")] });
    base.close(); // the database holds record 1; the journal is empty
    const by = (who: string, s: number): CommitBatch => ({
      ...superstep("r1", s),
      values: [{ run: "r1", key: "n", version: s + 1, value: { s, who } }],
    });
    /** The journal a writer on a copy of the database leaves after these commits. */
    const journalOf = async (name: string, batches: CommitBatch[]): Promise<Buffer> => {
      const copy = at(name);
      copyFileSync(file, copy);
      const w = await SqlJsStore.open(copy, { compactAtBytes: Number.MAX_SAFE_INTEGER });
      batches.forEach((b) => w.commit(b));
      const bytes = readFileSync(journalPath(copy));
      w.close();
      return bytes;
    };
    const mine = await journalOf("mine.casefile", [by("ann", 0)]);
    const theirs = await journalOf("theirs.casefile", [by("bob", 0), by("bob", 1)]);
    assert.ok(theirs.length > mine.length, `their journal (${theirs.length} bytes) is longer than mine (${mine.length})`);
    writeFileSync(journalPath(file), mine);
    const r = await SqlJsStore.open(file, { readOnly: true });
    assert.deepEqual(r.readValues({ n: ref("r1", 1) }), { n: { s: 0, who: "ann" } }, "the reader read the first journal");
    writeFileSync(at("restored.journal"), theirs);
    renameSync(at("restored.journal"), journalPath(file));
    assert.equal(await r.refresh(), "reopened", "a journal of another inode is read from its start");
    assert.deepEqual(r.readValues({ n: ref("r1", 1) }), { n: { s: 0, who: "bob" } }, "the first superstep as the new journal has it");
    assert.deepEqual(view(r, "r1"), await fresh(file, "r1"));
    r.close();
  });

  // Kills refresh's catch around replay made empty: a record appended that cannot be applied
  // (a row the database already holds) is refused as open refuses it, not skipped while the
  // reader moves its offset past it and reports it applied.
  it("refuses a record appended that cannot be applied, as open does", async () => {
    const file = at("case.casefile");
    const cp = checkpoint("r1:0", "r1", 0);
    const w = await SqlJsStore.open(file, { create: true });
    w.commit({ runs: [run("r1")], checkpoints: [cp] });
    w.close();
    const r = await SqlJsStore.open(file, { readOnly: true });
    appendFileSync(journalPath(file), encodeRecord(2, JSON.stringify({ checkpoints: [cp] })));
    const refused = (e: unknown): boolean =>
      isCasefileError(e) && e.code === "CORRUPT_CASE_FILE" && /record at byte 0 \(sequence 2\) cannot be applied/.test(e.message);
    await assert.rejects(r.refresh(), refused, "refresh refuses the record");
    await assert.rejects(SqlJsStore.open(file, { readOnly: true }), refused, "as open does");
    r.close();
  });

  // Kills the check that the first journal record read follows on from the database: a journal
  // put back in place (same inode, longer than what was read) from before the last compaction
  // starts with records the database already holds: that is a rewritten journal, opened again.
  it("opens again when a journal from before the last compaction is written back in place", async () => {
    const file = at("case.casefile");
    const w = await SqlJsStore.open(file, { create: true, compactAtBytes: Number.MAX_SAFE_INTEGER });
    w.commit({ runs: [run("r1")] });
    w.commit(superstep("r1", 0));
    const old = readFileSync(journalPath(file));
    w.close(); // compacts: the database holds both records, the journal is empty
    const r = await SqlJsStore.open(file, { readOnly: true });
    writeFileSync(journalPath(file), old);
    assert.equal(await r.refresh(), "reopened", "a journal whose records the database holds was rewritten");
    assert.deepEqual(view(r, "r1"), await fresh(file, "r1"));
    r.close();
  });

  // Kills the second look at the database file, after the journal was read: a compaction that
  // lands between refresh's stat of the journal and its read (here made to, by running it when
  // refresh opens the journal) folds the new records into a new database file and empties the
  // journal, so the read finds nothing after the old offset. Without the second look the reader
  // answers "unchanged" and misses the commit the compaction folded in.
  it("opens again when a compaction lands between its look at the journal and its read", async () => {
    const file = at("case.casefile");
    const w = await SqlJsStore.open(file, { create: true, compactAtBytes: Number.MAX_SAFE_INTEGER });
    w.commit({ runs: [run("r1")] });
    w.commit(superstep("r1", 0));
    const r = await SqlJsStore.open(file, { readOnly: true });
    w.commit(superstep("r1", 1));
    const openSync = fs.openSync;
    let compacted = false;
    fs.openSync = ((p: fs.PathLike, flags: fs.OpenMode, mode?: fs.Mode | null) => {
      if (!compacted && p === journalPath(file)) {
        compacted = true;
        w.compact();
      }
      return openSync(p, flags, mode);
    }) as typeof fs.openSync;
    try {
      assert.equal(await r.refresh(), "reopened", "the database file was replaced while refresh read the journal");
    } finally {
      fs.openSync = openSync;
    }
    assert.ok(compacted, "the compaction ran inside refresh's read of the journal");
    assert.deepEqual(
      r.listCheckpoints("r1").map((c) => c.id),
      ["r1:0", "r1:1"],
      "the superstep the compaction folded in",
    );
    assert.deepEqual(view(r, "r1"), await fresh(file, "r1"));
    w.close();
    r.close();
  });

  // Kills the warnings of the store a refresh opened again not taking the old ones' place: the
  // torn tail the reader warned about is gone (a writer cut it and compacted), and a fresh open
  // warns of nothing.
  it("warns, after opening again, of what a fresh open warns of, and no longer of what is gone", async () => {
    const file = at("case.casefile");
    const w = await SqlJsStore.open(file, { create: true });
    w.commit({ runs: [run("r1")] });
    w.close();
    appendFileSync(journalPath(file), encodeRecord(2, JSON.stringify(superstep("r1", 0))).subarray(0, 40)); // a writer killed mid-append
    const r = await SqlJsStore.open(file, { readOnly: true });
    assert.deepEqual(
      r.warnings,
      [`journal ${journalPath(file)}: 40 bytes of an incomplete last record at byte 0 ignored`],
      "the reader warns of the torn tail",
    );
    const w2 = await SqlJsStore.open(file); // cuts the torn tail
    w2.commit(superstep("r1", 0));
    w2.close(); // compacts: a new database file
    assert.equal(await r.refresh(), "reopened");
    const again = await SqlJsStore.open(file, { readOnly: true });
    assert.deepEqual([r.warnings, again.warnings], [[], []], "the refreshed reader's warnings, and a fresh open's");
    again.close();
    r.close();
  });

  it("never shows a half-applied or stale case while another process commits and compacts", async function () {
    this.timeout(60_000);
    const file = at("live.casefile");
    const loop = path.join(__dirname, "helpers", "commitLoop.ts");
    const child = spawn(process.execPath, ["--import", "tsx", loop, file, "4000"], { stdio: ["ignore", "pipe", "pipe"] });
    let committed = 0;
    let out = "";
    child.stdout.on("data", (d: Buffer) => {
      out += d.toString();
      const lines = out.split("\n");
      out = lines.pop()!;
      for (const l of lines) if (/^\d+$/.test(l)) committed = Number(l);
    });
    try {
      while (committed < 5) await new Promise((r) => setTimeout(r, 20));
      const r = await SqlJsStore.open(file, { readOnly: true });
      const outcomes = new Set<string>();
      let seen = 0;
      while (committed < 400) {
        const floor = committed; // every commit reported before the refresh began is durable
        outcomes.add(await r.refresh());
        const events = r.listEvents();
        assert.ok(events.length >= floor, `refresh shows ${events.length} commits, ${floor} were durable before it`);
        assert.ok(events.length >= seen, "never goes back");
        events.forEach((e, i) => assert.equal((e.data as { i: number }).i, i + 1, "no commit missing, none twice"));
        const last = events.length;
        if (last > 0) assert.deepEqual(r.readValues({ counter: { run: "r", version: last } }).counter, { i: last, pad: "x".repeat(700) });
        seen = last;
        await new Promise((res) => setTimeout(res, 5));
      }
      assert.ok(outcomes.has("appended") && outcomes.has("reopened"), `both paths ran: ${[...outcomes].join(", ")}`);
      r.close();
    } finally {
      child.kill("SIGKILL");
      await new Promise((r) => child.once("exit", r));
    }
  });
});
