import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { nodeFs } from "../../../src/casefile/caseFileFs";
import { findSqlWasm, loadSqlJs } from "../../../src/casefile/sqlite";

/**
 * sql.js loading (sqlite.ts) and the directory fsync of nodeFs (caseFileFs.ts): survivors of the
 * mutation runs over them (issue 18), each test naming the bug it catches.
 */
describe("sql.js loading and nodeFs.fsyncDir", () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(path.join(os.tmpdir(), "casefile-s18b-sqlite-"))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  // Kills `if (!loading)` made true: every open would compile SQLite's wasm again.
  it("every open shares one load of sql.js", async () => {
    const first = loadSqlJs();
    assert.equal(loadSqlJs(), first, "a second caller gets the same load");
    const SQL = await first;
    const db = new SQL.Database();
    assert.deepEqual(db.exec("SELECT 1 + 1")[0]?.values, [[2]], "the loaded SQLite runs SQL");
    db.close();
  });

  // Kills the candidates' names and the lookup through the package: from the sources (no copy
  // beside them) the wasm is found in node_modules' sql.js.
  it("finds sql-wasm.wasm through the sql.js package when no copy lies beside the code", () => {
    const found = findSqlWasm();
    assert.equal(path.basename(found), "sql-wasm.wasm", `found ${found}`);
    assert.ok(existsSync(found), `${found} exists`);
    assert.equal(path.basename(path.dirname(path.dirname(found))), "sql.js", `${found} is in the sql.js package`);
  });

  // Kills fsyncDir's body emptied (or its platform check made true): on Linux it really opens
  // the folder, so a folder that is not there is an error, not a durability silently skipped.
  it("nodeFs.fsyncDir opens the folder: a missing folder is ENOENT", () => {
    assert.throws(() => nodeFs.fsyncDir(path.join(dir, "gone")), /ENOENT/);
    assert.doesNotThrow(() => nodeFs.fsyncDir(dir), "an existing folder");
  });
});
