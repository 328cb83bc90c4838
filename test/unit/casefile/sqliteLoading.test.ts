import assert from "node:assert/strict";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
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

  // Kills sqlite.ts's `initSqlJs({ wasmBinary })` as `initSqlJs({})` (sql.js would then look for
  // its wasm in its own folder, which a bundle does not have) and the not-found message blanked.
  // The bundle's situation, made for real: sqlite.ts (as the build or Stryker left it) copied into
  // a folder with the wasm beside it and a sql.js package holding its JavaScript only.
  it("loads the copy of sql-wasm.wasm beside the code when sql.js's package has none; with neither, names both places and tries again later", async () => {
    const pkg = path.dirname(require.resolve("sql.js"));
    const fakePkg = path.join(dir, "node_modules", "sql.js");
    mkdirSync(path.join(fakePkg, "dist"), { recursive: true });
    writeFileSync(path.join(fakePkg, "package.json"), JSON.stringify({ name: "sql.js", main: "./dist/sql-wasm.js" }));
    copyFileSync(path.join(pkg, "sql-wasm.js"), path.join(fakePkg, "dist", "sql-wasm.js"));
    const code = path.join(dir, "sqlite.ts");
    copyFileSync(path.join(__dirname, "../../../src/casefile/sqlite.ts"), code);
    const beside = path.join(dir, "sql-wasm.wasm");
    const inPackage = path.join(fakePkg, "dist", "sql-wasm.wasm");
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- a fresh module: its own `loading`, its own __dirname
    const bundled = require(code) as typeof import("../../../src/casefile/sqlite");
    try {
      assert.throws(
        () => bundled.findSqlWasm(),
        (e: Error) => e.message === `sql-wasm.wasm not found; looked in: ${beside}, ${inPackage}`,
        "with no copy anywhere, the message names both places",
      );
      await assert.rejects(bundled.loadSqlJs(), /sql-wasm\.wasm not found/, "a load with no wasm fails");
      copyFileSync(path.join(pkg, "sql-wasm.wasm"), beside);
      assert.equal(bundled.findSqlWasm(), beside, "the copy beside the code comes first");
      const SQL = await bundled.loadSqlJs();
      const db = new SQL.Database();
      assert.deepEqual(db.exec("SELECT 6 * 7")[0]?.values, [[42]], "the SQLite loaded from the copy beside the code runs SQL");
      db.close();
    } finally {
      for (const loaded of Object.keys(require.cache)) if (loaded.startsWith(dir + path.sep)) delete require.cache[loaded];
    }
  });

  // Kills fsyncDir's body emptied (or its platform check made true): on Linux it really opens
  // the folder, so a folder that is not there is an error, not a durability silently skipped.
  it("nodeFs.fsyncDir opens the folder: a missing folder is ENOENT", () => {
    assert.throws(() => nodeFs.fsyncDir(path.join(dir, "gone")), /ENOENT/);
    assert.doesNotThrow(() => nodeFs.fsyncDir(dir), "an existing folder");
  });
});
