import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { MIGRATIONS, SCHEMA_VERSION, SqlJsStore } from "../../../src/casefile";
import { columnValues, createSchema, migrate, readMeta } from "../../../src/casefile/schema";
import type { TableName } from "../../../src/casefile/batch";
import { loadSqlJs } from "../../../src/casefile/sqlite";
import { isCasefileError } from "../../../src/engine/errors";
import { tamperFile } from "./helpers/tamper";
import { run } from "./builders";

/**
 * What any SQLite client sees in a case file: its indexes (on a new file, and on an older one
 * once a writer has written it out), a meta row that makes a database a case file or not, and a
 * failed migration's whole message.
 */

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), "casefile-schema-layout-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const LATER_INDEXES = ["agent_calls_by_superstep", "events_by_superstep", "verdicts_by_agent_call", "verdicts_by_superstep"];

async function indexesOnDisk(file: string): Promise<string[]> {
  const SQL = await loadSqlJs();
  const db = new SQL.Database(readFileSync(file));
  try {
    return db
      .exec("SELECT name FROM sqlite_master WHERE type = 'index' AND name NOT LIKE 'sqlite_%' ORDER BY name")[0]!
      .values.map((r) => String(r[0]));
  } finally {
    db.close();
  }
}

const edit = tamperFile;

describe("a case file's layout on disk", () => {
  it("has every index when new, and an older file without the later ones gets them once a writer writes it out", async () => {
    const file = path.join(dir, "case.casefile");
    const w = await SqlJsStore.open(file, { create: true });
    w.close();
    const all = await indexesOnDisk(file);
    for (const name of LATER_INDEXES) assert.ok(all.includes(name), `a new file has ${name}: ${all.join(", ")}`);

    await edit(file, ...LATER_INDEXES.map((n) => `DROP INDEX ${n}`));
    const r = await SqlJsStore.open(file, { readOnly: true });
    r.close();
    assert.deepEqual(
      (await indexesOnDisk(file)).filter((n) => LATER_INDEXES.includes(n)),
      [],
      "a reader writes nothing to the file",
    );
    const again = await SqlJsStore.open(file);
    again.commit({ runs: [run("r1")] });
    again.close(); // compacts: the database is written out
    assert.deepEqual(await indexesOnDisk(file), all, "the writer's file has every index again");
  });

  // Kills schema.ts's V1 CREATE INDEX statements blanked: the store's reads by run, superstep,
  // key, hash and status rely on them, and every SQLite client sees them in sqlite_master.
  it("a new file has each of its indexes, on the columns the store looks rows up by", async () => {
    const file = path.join(dir, "case.casefile");
    (await SqlJsStore.open(file, { create: true })).close();
    const SQL = await loadSqlJs();
    const db = new SQL.Database(readFileSync(file));
    const indexes = db
      .exec("SELECT name, tbl_name FROM sqlite_master WHERE type = 'index' AND name NOT LIKE 'sqlite_%' ORDER BY name")[0]!
      .values.map(([name, table]) => {
        const columns = db.exec(`PRAGMA index_info(${String(name)})`)[0]!.values.map((c) => String(c[2]));
        return `${String(name)} ON ${String(table)} (${columns.join(", ")})`;
      });
    db.close();
    assert.deepEqual(
      indexes,
      [
        "agent_calls_by_hash ON agent_calls (hash)",
        "agent_calls_by_run ON agent_calls (run_id)",
        "agent_calls_by_superstep ON agent_calls (run_id, superstep)",
        "checkpoints_by_run ON checkpoints (run_id, superstep)",
        "events_by_run ON events (run_id, seq)",
        "events_by_superstep ON events (run_id, superstep)",
        "facts_by_run ON facts (run_id, key, version)",
        "intents_by_run ON intents (run_id)",
        "intents_by_status ON intents (status)",
        "steps_by_run ON steps (run_id, superstep)",
        "verdicts_by_agent_call ON verdicts (agent_call_id)",
        "verdicts_by_run ON verdicts (run_id)",
        "verdicts_by_superstep ON verdicts (run_id, superstep)",
      ],
      "the indexes of a new case file",
    );
  });

  it("keeps the tenant it was made for, and a file made for no one has none", async () => {
    const acme = path.join(dir, "acme.casefile");
    (await SqlJsStore.open(acme, { create: true, tenant: "acme" })).close();
    const plain = path.join(dir, "plain.casefile");
    (await SqlJsStore.open(plain, { create: true })).close();
    const SQL = await loadSqlJs();
    for (const [file, tenant] of [
      [acme, "acme"],
      [plain, undefined],
    ] as const) {
      const db = new SQL.Database(readFileSync(file));
      const meta = readMeta(db)!;
      db.close();
      assert.equal(meta.tenant, tenant, `${path.basename(file)}'s tenant`);
      assert.equal("tenant" in meta, tenant !== undefined, `${path.basename(file)} names a tenant only when it has one`);
      assert.equal(meta.schemaVersion, SCHEMA_VERSION, "at the newest schema");
      assert.equal(meta.journalSeq, 0, "its journal folded in");
      assert.ok(!Number.isNaN(Date.parse(meta.createdAt)), `a creation time: ${meta.createdAt}`);
    }
  });
});

describe("a database whose meta row is not a case file's", () => {
  const cases: [string, string[]][] = [
    ["an empty meta table", ["DELETE FROM meta"]],
    ["another application's meta row", ["UPDATE meta SET app = 'other'"]],
    ["a schema version that is text", ["UPDATE meta SET schema_version = 'one'"]],
    // Kills readMeta's `hasMeta.length === 0` made false: reading a missing table would throw,
    // and the file be called corrupted rather than another application's database.
    ["no meta table at all", ["DROP TABLE meta"]],
    // Kills readMeta's `values.length !== 1` made false: which of two rows would be the file's?
    [
      "two meta rows, each a case file's",
      [
        "DROP TABLE meta",
        "CREATE TABLE meta (id INTEGER, app TEXT, schema_version INTEGER, created_at TEXT, tenant TEXT, journal_seq INTEGER)",
        "INSERT INTO meta VALUES (1, 'casefile', 1, '2026-01-01T00:00:00.000Z', NULL, 0), (2, 'casefile', 1, '2026-01-02T00:00:00.000Z', NULL, 0)",
      ],
    ],
  ];
  for (const [what, statements] of cases) {
    it(`is refused as no case file: ${what}`, async () => {
      const file = path.join(dir, "case.casefile");
      (await SqlJsStore.open(file, { create: true })).close();
      await edit(file, ...statements);
      await assert.rejects(
        SqlJsStore.open(file, { readOnly: true }),
        (e: Error & { code?: string }) => {
          assert.equal(e.code, "NOT_A_CASE_FILE", `${what}: ${e.message}`);
          assert.equal(e.message, `${file} is a SQLite database but not a case file (no casefile meta row)`, what);
          return true;
        },
        what,
      );
    });
  }

  it("reads a meta row without a creation time or journal number as empty and 0", async () => {
    const SQL = await loadSqlJs();
    const db = new SQL.Database();
    db.run("CREATE TABLE meta (id INTEGER PRIMARY KEY, app TEXT, schema_version INTEGER, created_at, tenant, journal_seq)");
    db.run("INSERT INTO meta VALUES (1, 'casefile', 1, NULL, 7, 'x')");
    assert.deepEqual(readMeta(db), { app: "casefile", schemaVersion: 1, createdAt: "", journalSeq: 0 }, "the frozen columns alone");
    db.close();
  });
});

describe("a migration that fails", () => {
  it("says which version, which step and what failed, and leaves the file at the last good version", async () => {
    const SQL = await loadSqlJs();
    const db = new SQL.Database();
    createSchema(db, { createdAt: "2026-01-01T00:00:00.000Z" });
    const applied: number[] = [];
    const steps = [
      ...MIGRATIONS,
      { to: SCHEMA_VERSION + 1, description: "notes table", up: () => void applied.push(SCHEMA_VERSION + 1) },
      {
        to: SCHEMA_VERSION + 2,
        description: "broken step",
        up: (d: typeof db) => {
          applied.push(SCHEMA_VERSION + 2);
          d.run("SELECT no_such_function()");
        },
      },
    ];
    assert.deepEqual(
      migrate(db, SCHEMA_VERSION, "mem.casefile", steps.slice(0, 2)),
      [SCHEMA_VERSION + 1],
      "only the step above the file's version",
    );
    assert.deepEqual(applied, [SCHEMA_VERSION + 1], "the steps at or below the version are not run again");
    assert.throws(
      () => migrate(db, SCHEMA_VERSION + 1, "mem.casefile", steps),
      (e: Error & { code?: string; details?: unknown }) => {
        assert.equal(e.code, "MIGRATION_FAILED", e.message);
        assert.equal(
          e.message,
          `mem.casefile: migrating the case file to schema v${SCHEMA_VERSION + 2} (broken step) failed: no such function: no_such_function`,
          "the whole message",
        );
        assert.deepEqual(e.details, { file: "mem.casefile", to: SCHEMA_VERSION + 2 }, "the details name the file and version");
        return true;
      },
    );
    assert.equal(readMeta(db)!.schemaVersion, SCHEMA_VERSION + 1, "left at the last version that succeeded");
    // Kills the RELEASE after the ROLLBACK TO blanked: the failed step's savepoint would stay
    // open, a transaction the caller never began, and its own BEGIN would be refused.
    assert.doesNotThrow(() => db.run("BEGIN"), "no savepoint of the failed step is left open");
    db.run("ROLLBACK");
    db.close();
  });

  // An older file whose tables are not what v1 lays out (made here by hand at schema v0: no run_id
  // in checkpoints, so v1's index on it cannot be made).
  const V0_BROKEN = [
    "CREATE TABLE meta (id INTEGER PRIMARY KEY CHECK (id = 1), app TEXT NOT NULL, schema_version INTEGER NOT NULL, created_at TEXT NOT NULL, tenant TEXT, journal_seq INTEGER NOT NULL DEFAULT 0)",
    "INSERT INTO meta VALUES (1, 'casefile', 0, '2026-01-01T00:00:00.000Z', NULL, 0)",
    "CREATE TABLE checkpoints (id TEXT PRIMARY KEY, data TEXT NOT NULL)",
  ];

  // Kills MIGRATIONS[0]'s description ("initial schema") blanked: it is what the user reads.
  it("of the initial schema, on opening an older file, names the file, v1 and the initial schema", async () => {
    const SQL = await loadSqlJs();
    const db = new SQL.Database();
    for (const sql of V0_BROKEN) db.run(sql);
    const file = path.join(dir, "old.casefile");
    writeFileSync(file, db.export());
    db.close();
    await assert.rejects(SqlJsStore.open(file, { readOnly: true }), (e: unknown) => {
      assert.ok(isCasefileError(e) && e.code === "MIGRATION_FAILED", String(e));
      assert.equal(
        e.message,
        `${file}: migrating the case file to schema v1 (initial schema) failed: no such column: run_id`,
        "the whole message",
      );
      return true;
    });
  });

  // Kills createSchema's catch emptied (the failure swallowed, a half laid-out database taken
  // for a case file), its ROLLBACK blanked (the transaction left open, the meta row in it), and
  // the "new case file" that names the database in the message.
  it("while laying out a new case file, fails whole: the error says so and the database is left as it was", async () => {
    const SQL = await loadSqlJs();
    const db = new SQL.Database();
    db.run(V0_BROKEN[2]!);
    assert.throws(
      () => createSchema(db, { createdAt: "2026-01-01T00:00:00.000Z" }),
      (e: unknown) => {
        assert.ok(isCasefileError(e) && e.code === "MIGRATION_FAILED", String(e));
        assert.equal(
          e.message,
          "new case file: migrating the case file to schema v1 (initial schema) failed: no such column: run_id",
          "the whole message",
        );
        return true;
      },
    );
    const tables = db.exec("SELECT name FROM sqlite_master ORDER BY name")[0]!.values.map((r) => String(r[0]));
    assert.deepEqual(tables, ["checkpoints", "sqlite_autoindex_checkpoints_1"], "nothing of the layout is left, not even the meta table");
    assert.doesNotThrow(() => db.run("BEGIN"), "no transaction is left open");
    db.run("ROLLBACK");
    db.close();
  });
});

describe("the columns stored beside a row's JSON", () => {
  // Kills the exhaustive switch's message blanked: a caller from JavaScript (no type check) that
  // names a table the case file has not is told which.
  it("are refused for a table the case file has not, naming it", () => {
    assert.throws(() => columnValues("notes" as TableName, {}), /^Error: no statement for table notes$/);
  });
});
