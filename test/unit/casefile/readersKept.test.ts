import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { CaseFileReaders, SqlJsStore, openCaseFile } from "../../../src/casefile";
import { run } from "./builders";

/**
 * The host's kept stores through a panel's life (kept twice, a read that throws, the file
 * replaced by a broken one and restored, dropped, dropped again) and openCaseFile's defaults:
 * what the inspector shows is what is on disk, and no store is left open behind a dropped file.
 */

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), "casefile-readers-kept-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

async function caseFile(name: string, runs: string[]): Promise<string> {
  const file = path.join(dir, name);
  const w = await SqlJsStore.open(file, { create: true });
  w.commit({ runs: runs.map((id) => run(id)) });
  w.close();
  return file;
}

const ids = (s: SqlJsStore): string[] => s.listRuns().map((r) => r.id);

describe("CaseFileReaders through a panel's life", () => {
  it("keeps the one store when kept twice, and a read that throws does not stop the reads after it", async () => {
    const file = await caseFile("case.casefile", ["r1"]);
    const readers = new CaseFileReaders();
    readers.keep(file);
    const first = await readers.read(file, (s) => s);
    readers.keep(path.join(dir, ".", "case.casefile")); // the same file, named another way
    assert.equal(readers.isKept(file), true, "the file is kept");
    const failing = readers.read(file, () => {
      throw new Error("the panel's read failed");
    });
    const after = readers.read(file, (s) => [s, ids(s)] as const);
    await assert.rejects(failing, /the panel's read failed/, "the failing read rejects with its own error");
    const [second, runs] = await after;
    assert.equal(second, first, "keeping a kept file again keeps its store");
    assert.deepEqual(runs, ["r1"], "the read after a failed one answers");
    readers.dispose();
  });

  it("opens afresh after a refresh fails, and closes the kept store when the file is dropped", async () => {
    const file = await caseFile("case.casefile", ["r1"]);
    const readers = new CaseFileReaders();
    readers.keep(file);
    const broken = await readers.read(file, (s) => s);
    writeFileSync(file, "not a case file at all, and long enough to be read as a database header".repeat(20));
    await assert.rejects(
      readers.read(file, ids),
      (e: Error & { code?: string }) => e.code === "NOT_A_CASE_FILE" || e.code === "CORRUPT_CASE_FILE",
      "a read of the broken file is refused as an open would refuse it",
    );
    await assert.rejects(broken.refresh(), /is closed/, "the store that failed to refresh was closed");
    rmSync(file);
    await caseFile("case.casefile", ["r2"]);
    const [fresh, runs] = await readers.read(file, (s) => [s, ids(s)] as const);
    assert.notEqual(fresh, broken, "a new store answers");
    assert.deepEqual(runs, ["r2"], "it reads the file now on disk");

    readers.drop(file);
    assert.equal(readers.isKept(file), false, "a dropped file is no longer kept");
    readers.drop(file); // dropping again, or a file never kept, does nothing
    readers.drop(path.join(dir, "never.casefile"));
    await new Promise((resolve) => setImmediate(resolve));
    await assert.rejects(fresh.refresh(), /is closed/, "the dropped file's store is closed");
  });

  it("closes every kept store on dispose, once their reads have run", async () => {
    const a = await caseFile("a.casefile", ["a1"]);
    const b = await caseFile("b.casefile", ["b1"]);
    const readers = new CaseFileReaders();
    readers.keep(a);
    readers.keep(b);
    const reads = Promise.all([readers.read(a, (s) => [s, ids(s)] as const), readers.read(b, (s) => [s, ids(s)] as const)]);
    readers.dispose();
    const [[sa, ra], [sb, rb]] = await reads;
    assert.deepEqual([ra, rb], [["a1"], ["b1"]], "reads asked before dispose answer");
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(readers.isKept(a) || readers.isKept(b), false, "nothing is kept after dispose");
    await assert.rejects(sa.refresh(), /is closed/, "a's store is closed");
    await assert.rejects(sb.refresh(), /is closed/, "b's store is closed");
  });

  it("closes the store it opened for a read of a file no one keeps, even when the read throws", async () => {
    const file = await caseFile("case.casefile", ["r1"]);
    const readers = new CaseFileReaders();
    const store = await readers.read(file, (s) => s);
    await assert.rejects(store.refresh(), /is closed/, "the store of a one-off read is closed after it");
    let thrown: SqlJsStore | undefined;
    await assert.rejects(
      readers.read(file, (s) => {
        thrown = s;
        throw new Error("boom");
      }),
      /boom/,
      "the read's error",
    );
    await assert.rejects(thrown!.refresh(), /is closed/, "closed after a read that threw");
  });
});

describe("openCaseFile", () => {
  it("creates a missing file for a writer (readOnly: false included), and refuses a missing file to a reader or with create: false", async () => {
    const missing = (name: string) => path.join(dir, name);
    await assert.rejects(
      openCaseFile(missing("reader.casefile"), { readOnly: true }),
      (e: Error & { code?: string }) => e.code === "NOT_A_CASE_FILE" && e.message === `no case file at ${missing("reader.casefile")}`,
      "a reader never creates",
    );
    await assert.rejects(
      openCaseFile(missing("strict.casefile"), { create: false }),
      (e: Error & { code?: string }) =>
        e.code === "NOT_A_CASE_FILE" && e.message === `no case file at ${missing("strict.casefile")} (open with create to make one)`,
      "create: false requires the file",
    );
    assert.equal(existsSync(missing("reader.casefile")) || existsSync(missing("strict.casefile")), false, "neither was created");
    const w = await openCaseFile(missing("new.casefile"));
    assert.equal(w.readOnly, false, "a writer by default");
    w.commit({ runs: [run("r1")] });
    w.close();
    const r = await openCaseFile(missing("new.casefile"), { readOnly: true });
    try {
      assert.deepEqual(ids(r), ["r1"], "the created file holds what was committed");
      assert.equal(r.readOnly, true, "opened read-only");
    } finally {
      r.close();
    }
    // kills index.ts:25 BooleanLiteral readOnly !== true -> !== false (readOnly: false said outright is a writer too)
    const explicit = await openCaseFile(missing("explicit.casefile"), { readOnly: false });
    try {
      assert.equal(explicit.readOnly, false, "readOnly: false opens a writer");
    } finally {
      explicit.close();
    }
    assert.equal(existsSync(missing("explicit.casefile")), true, "a writer with readOnly: false creates the missing file");
  });
});
