import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import type { Stats } from "node:fs";
import os from "node:os";
import path from "node:path";
import { SCHEMA_VERSION, SqlJsStore } from "../../../src/casefile";
import { nodeFs, type CaseFileFs } from "../../../src/casefile/caseFileFs";
import { changed, statIfExists } from "../../../src/casefile/databaseFile";
import { journalPath } from "../../../src/casefile/journal";
import { loadSqlJs } from "../../../src/casefile/sqlite";
import { isCasefileError } from "../../../src/engine/errors";
import { event, run } from "./builders";

/**
 * The database file as the store loads and replaces it (databaseFile.ts): survivors of the
 * mutation run over it (issue 18). Each test names the bug it catches. Real case files in a temp
 * folder, reopened from disk; a failing or short-writing disk is a CaseFileFs wrapping node:fs.
 */

let dir: string;
const at = (name: string): string => path.join(dir, name);
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), "casefile-s18b-dbfile-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const SQLITE_HEADER = Buffer.from("SQLite format 3\0", "latin1");

async function refusal(p: Promise<unknown>): Promise<{ code: string; message: string; details: unknown }> {
  try {
    await p;
  } catch (e) {
    assert.ok(isCasefileError(e), `a typed error, not ${String(e)}`);
    return { code: e.code, message: e.message, details: e.details };
  }
  assert.fail("the open was not refused");
}

async function caseFile(name: string, tenant?: string): Promise<string> {
  const file = at(name);
  const s = await SqlJsStore.open(file, tenant === undefined ? { create: true } : { create: true, tenant });
  s.commit({ runs: [run("r1")], events: [event("r1", "run_started")] });
  s.close();
  return file;
}

describe("database file: what open says about a file that is not a case file", () => {
  // Kills the isDirectory check and its message.
  it("a folder is not a case file, and says it is a folder", async () => {
    const file = at("folder.casefile");
    mkdirSync(file);
    assert.deepEqual(
      await refusal(SqlJsStore.open(file)),
      { code: "NOT_A_CASE_FILE", message: `${file} is not a case file: it is a directory`, details: { file } },
      "a writer's open of a folder",
    );
  });

  // Kills the empty/not-SQLite choice of words and the 100-byte bound: a file too short for a
  // SQLite header is not SQLite; one with the header and no pages is a damaged SQLite file.
  it("an empty file says it is empty; 99 bytes are not SQLite; a bare 100-byte header is a corrupted database", async () => {
    writeFileSync(at("empty.casefile"), "");
    writeFileSync(at("short.casefile"), Buffer.concat([SQLITE_HEADER, Buffer.alloc(99 - 16)]));
    writeFileSync(at("bare.casefile"), Buffer.concat([SQLITE_HEADER, Buffer.alloc(100 - 16)]));
    const got = [];
    for (const name of ["empty.casefile", "short.casefile", "bare.casefile"]) {
      const { code, message } = await refusal(SqlJsStore.open(at(name), { readOnly: true }));
      got.push(`${code}: ${message.replace(dir + path.sep, "")}`);
    }
    assert.deepEqual(
      got,
      [
        "NOT_A_CASE_FILE: empty.casefile is not a case file: it is empty",
        "NOT_A_CASE_FILE: short.casefile is not a case file: it is not a SQLite database",
        "CORRUPT_CASE_FILE: bare.casefile is corrupted: file is not a database",
      ],
      "what each file is called",
    );
  });

  // Kills the NEWER_SCHEMA message's advice and its details.
  it("a newer schema tells the user to update Casefile, with both versions in the details", async () => {
    const file = await caseFile("future.casefile");
    const SQL = await loadSqlJs();
    const db = new SQL.Database(readFileSync(file));
    db.run("UPDATE meta SET schema_version = ?", [SCHEMA_VERSION + 3]);
    writeFileSync(file, db.export());
    db.close();
    assert.deepEqual(
      await refusal(SqlJsStore.open(file, { readOnly: true })),
      {
        code: "NEWER_SCHEMA",
        message: `${file} has case-file schema v${SCHEMA_VERSION + 3}, newer than v${SCHEMA_VERSION} which this Casefile reads; update Casefile to open it`,
        details: { file, schemaVersion: SCHEMA_VERSION + 3, supported: SCHEMA_VERSION },
      },
      "the refusal of a newer schema",
    );
  });

  // Kills the "no tenant" branch of FOREIGN_TENANT and the tenant check's conditions.
  it("a case file of no tenant is refused to a tenant, saying it has none; its own tenant and no tenant open it", async () => {
    const plain = await caseFile("plain.casefile");
    assert.deepEqual(
      await refusal(SqlJsStore.open(plain, { tenant: "acme", readOnly: true })),
      {
        code: "FOREIGN_TENANT",
        message: `${plain} belongs to no tenant, not to tenant "acme"`,
        details: { file: plain, tenant: null, expected: "acme" },
      },
      "the refusal of a tenant-less file to a tenant",
    );
    const acme = await caseFile("acme.casefile", "acme");
    assert.deepEqual(
      (await refusal(SqlJsStore.open(acme, { tenant: "globex", readOnly: true }))).details,
      { file: acme, tenant: "acme", expected: "globex" },
      "the refusal of acme's file to globex names both",
    );
    for (const tenant of ["acme", undefined]) {
      const s = await SqlJsStore.open(acme, tenant === undefined ? { readOnly: true } : { readOnly: true, tenant });
      assert.equal(s.listRuns().length, 1, `opened by ${tenant ?? "no tenant"}`);
      s.close();
    }
  });
});

describe("database file: replaced whole by a compaction", () => {
  // Kills the write loop's bound and step: the compacted file must be whole whatever the disk's
  // writes return.
  it("a compaction through a disk that writes 1000 bytes per call leaves a whole database that opens alone", async () => {
    const short: CaseFileFs = { ...nodeFs, write: (fd, buf, offset, length) => nodeFs.write(fd, buf, offset, Math.min(length, 1000)) };
    const file = at("short.casefile");
    const w = await SqlJsStore.open(file, { create: true, fs: short });
    w.commit({ runs: [run("r1")], events: [event("r1", "run_started")] });
    w.close();
    assert.equal(statIfExists(journalPath(file))?.size ?? 0, 0, "the close compacted the journal away");
    const r = await SqlJsStore.open(file, { readOnly: true });
    assert.deepEqual(
      r.listRuns().map((x) => x.id),
      ["r1"],
      "the database file alone holds the run",
    );
    r.close();
  });

  // Kills the removal of a half-written temp file (and its try/catch): a compaction that runs
  // out of disk leaves the file and the journal as they were and nothing beside them.
  it("a compaction that runs out of disk leaves no temp file, the file as it was, and every commit in the journal", async () => {
    let armed = false;
    let full = false;
    const disk: CaseFileFs = {
      ...nodeFs,
      write: (fd, buf, offset, length) => {
        if (full) throw Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" });
        return nodeFs.write(fd, buf, offset, length);
      },
      open: (p, flags) => {
        const fd = nodeFs.open(p, flags);
        full = armed && p.endsWith(".tmp");
        return fd;
      },
    };
    const file = at("full.casefile");
    const w = await SqlJsStore.open(file, { create: true, fs: disk });
    const before = readFileSync(file);
    armed = true;
    w.commit({ runs: [run("r1")], events: [event("r1", "run_started")] });
    assert.throws(() => w.compact(), /^Error: ENOSPC: no space left on device, write$/);
    assert.deepEqual(readdirSync(dir).sort(), ["full.casefile", "full.casefile.journal", "full.casefile.lock"], "the files beside it");
    assert.ok(readFileSync(file).equals(before), "the database file is as it was");
    const r = await SqlJsStore.open(file, { readOnly: true });
    assert.deepEqual(
      r.listRuns().map((x) => x.id),
      ["r1"],
      "the commit is still there, from the journal",
    );
    r.close();
    armed = false;
    w.close();
  });
});

describe("database file: the stat helpers a reader decides with", () => {
  const stats = (ino: number, size: number, mtimeMs: number): Stats => ({ ino, size, mtimeMs }) as Stats;

  // Kills each condition of `changed` (a reader that misses a compaction shows a stale case).
  it("a file is changed when its inode, its size or its mtime differs, and not otherwise", () => {
    const before = stats(7, 4096, 1000);
    assert.deepEqual(
      [stats(7, 4096, 1000), stats(8, 4096, 1000), stats(7, 8192, 1000), stats(7, 4096, 1001)].map((now) => changed(now, before)),
      [false, true, true, true],
      "same, another inode, another size, another mtime",
    );
  });

  // Kills statIfExists's ENOENT check made to swallow every error or none.
  it("statIfExists: a missing file is undefined, a path through a file is an error", () => {
    const file = at("a.casefile");
    writeFileSync(file, "x");
    assert.equal(statIfExists(at("missing.casefile")), undefined, "missing");
    assert.equal(statIfExists(file)?.size, statSync(file).size, "present");
    assert.throws(() => statIfExists(path.join(file, "inside")), /ENOTDIR/);
    assert.ok(existsSync(file), "the file is still there");
  });
});
