import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { MemoryStore, SqlJsStore } from "../../../src/casefile";
import type { KeyRef } from "../../../src/engine/records";
import { INVOICE_RUN, commitInvoiceRun } from "../../fixtures/casefile/fixture";
import { event, rule } from "./builders";

/**
 * A case file damaged on disk after it was written (a JSON column edited with the sqlite3 CLI):
 * opening it still works, reading the damaged row is refused with CORRUPT_CASE_FILE naming the
 * file, the table, the row and what is wrong, damagedRecords() lists it, and nothing is left
 * beside the file.
 */

const SQLITE3 = "/usr/bin/sqlite3";
let dir: string;
let file: string;

const sql = (statement: string): string => execFileSync(SQLITE3, [file, statement], { encoding: "utf8" }).trim();

/** Names and hashes of everything in the folder. */
function listing(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const n of readdirSync(dir).sort())
    out[n] = createHash("sha256")
      .update(readFileSync(path.join(dir, n)))
      .digest("hex");
  return out;
}

function corrupt(pattern: RegExp): (e: unknown) => boolean {
  return (e: unknown) => {
    const err = e as { code?: string; message?: string };
    assert.equal(err.code, "CORRUPT_CASE_FILE", err.message);
    assert.match(err.message!, pattern);
    assert.ok(err.message!.includes(file), `names the file: ${err.message}`);
    return true;
  };
}

beforeEach(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), "casefile-damaged-"));
  file = path.join(dir, "case.casefile");
  const store = await SqlJsStore.open(file, { create: true });
  commitInvoiceRun(store);
  store.commit({ rules: [rule("eur")], events: [event(INVOICE_RUN, "run_started")] });
  store.close();
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/**
 * Each table: the row damaged (its first), how that row is named in the message, and the read
 * that must refuse it.
 */
const TABLES: { table: string; identity: string; read: (s: SqlJsStore) => unknown }[] = [
  { table: "runs", identity: "id", read: (s) => s.listRuns() },
  { table: "checkpoints", identity: "run_id, superstep, id", read: (s) => s.getCheckpoint(sqlFirst("checkpoints", "id")) },
  {
    table: "state_values",
    identity: "run, key, version",
    read: (s) => {
      const [run, key, version] = sqlFirst("state_values", "run, key, version").split("|");
      return s.readValues({ [key!]: { run: run!, version: Number(version) } as KeyRef });
    },
  },
  { table: "steps", identity: "run_id, superstep, id", read: (s) => s.listSteps(sqlFirst("steps", "run_id")) },
  { table: "facts", identity: "run_id, key, version, superstep, id", read: (s) => s.listFacts(sqlFirst("facts", "run_id")) },
  { table: "agent_calls", identity: "run_id, superstep, id", read: (s) => s.listAgentCalls() },
  { table: "verdicts", identity: "run_id, superstep, id", read: (s) => s.listVerdicts(sqlFirst("verdicts", "run_id")) },
  { table: "intents", identity: "run_id, id", read: (s) => s.listIntents() },
  { table: "rules", identity: "id", read: (s) => s.listRules() },
  { table: "events", identity: "run_id, superstep, seq", read: (s) => s.listEvents({}) },
];

function sqlFirst(table: string, columns: string): string {
  return sql(`SELECT ${columns} FROM ${table} ORDER BY rowid LIMIT 1`);
}

describe("a case file with a damaged record", () => {
  for (const { table, identity, read } of TABLES) {
    it(`${table}: data that is not JSON is refused where it is read, naming the table and the row, and listed by damagedRecords`, async () => {
      const ids = sqlFirst(table, identity).split("|");
      sql(`UPDATE ${table} SET data = 'not json' WHERE rowid = (SELECT min(rowid) FROM ${table})`);
      const before = listing();

      const store = await SqlJsStore.open(file, { readOnly: true });
      try {
        const rowText = identity
          .split(", ")
          .map((c, i) => `${c}=${isInteger(table, c) ? ids[i] : JSON.stringify(ids[i])}`)
          .join(" ");
        assert.throws(
          () => read(store),
          corrupt(new RegExp(`is corrupted: ${table} row ${escape(rowText)}: data is not JSON: Unexpected token`)),
        );
        const damaged = store.damagedRecords();
        assert.equal(damaged.length, 1, JSON.stringify(damaged));
        assert.equal(damaged[0]!.table, table);
        assert.deepEqual(Object.keys(damaged[0]!.row), identity.split(", "));
        assert.deepEqual(Object.values(damaged[0]!.row).map(String), ids);
        assert.match(damaged[0]!.problem, /^data is not JSON: /);
      } finally {
        store.close();
      }
      assert.deepEqual(listing(), before, "a reader leaves the folder as it was");
    });
  }

  it("a writer that is refused on reading a damaged row leaves no journal, no lock, and the file's bytes as they were", async () => {
    sql(`UPDATE state_values SET data = '{"run": 1' WHERE key = 'invoice'`);
    const before = listing();
    const store = await SqlJsStore.open(file);
    try {
      const cp = store.latestCheckpoint(INVOICE_RUN)!;
      assert.throws(() => store.readValues(cp.keys), corrupt(/state_values row run="[^"]+" key="invoice" version=\d+: data is not JSON/));
    } finally {
      store.close();
    }
    assert.deepEqual(listing(), before);
  });

  it("JSON of the wrong shape is refused naming the field, as a commit would refuse it", async () => {
    sql(`UPDATE state_values SET data = '{"run": "x", "key": "invoice", "version": 1}' WHERE key = 'invoice'`);
    sql(`UPDATE checkpoints SET data = '{"v": 1, "id": "c", "runId": "r", "superstep": 0, "createdAt": "t", "keys": []}'`);
    sql(`UPDATE steps SET data = '[1, 2]'`);
    sql(`UPDATE agent_calls SET data = X'00ff'`);
    const store = await SqlJsStore.open(file, { readOnly: true });
    try {
      const problems = store.damagedRecords().map((d) => `${d.table}: ${d.problem}`);
      assert.ok(
        problems.includes("state_values: data is not a state_values record: record: value is missing (undefined is not JSON)"),
        problems.join("\n"),
      );
      assert.ok(
        problems.includes("checkpoints: data is not a checkpoints record: record.keys must be an object of key refs"),
        problems.join("\n"),
      );
      assert.ok(
        problems.includes("steps: data is not a steps record: the record must be a JSON object, got an array"),
        problems.join("\n"),
      );
      assert.ok(problems.includes("agent_calls: data is a blob, not JSON text"), problems.join("\n"));
      assert.throws(
        () => store.listSteps(INVOICE_RUN),
        corrupt(/steps row run_id="[^"]+" superstep=\d+ id="[^"]+": data is not a steps record/),
      );
      assert.throws(() => store.listAgentCalls(), corrupt(/agent_calls row .*: data is a blob, not JSON text/));
      // What is not damaged still reads.
      assert.equal(store.listRuns().length, 2);
      assert.ok(store.listVerdicts().length > 0, "expected: store.listVerdicts().length > 0");
    } finally {
      store.close();
    }
  });

  it("agent call summaries refuse a damaged call as listing the calls does, naming its row", async () => {
    const damage: [string, RegExp][] = [
      ["'not json'", /agent_calls row run_id="[^"]+" superstep=\d+ id="[^"]+": data is not JSON/],
      ["X'00ff'", /agent_calls row .*: data is a blob, not JSON text/],
      [`'{"id": "x"}'`, /agent_calls row .*: data is not a agent_calls record: record.runId must be a non-empty string/],
    ];
    for (const [data, pattern] of damage) {
      sql(`UPDATE agent_calls SET data = ${data} WHERE rowid = (SELECT max(rowid) FROM agent_calls)`);
      const store = await SqlJsStore.open(file, { readOnly: true });
      try {
        assert.throws(() => store.agentCallSummaries(), corrupt(pattern), data);
      } finally {
        store.close();
      }
    }
  });

  it("a column that disagrees with its row's record is damage: refused where read, listed, and a listing from columns checks their types", async () => {
    sql(`UPDATE runs SET status = 'bogus' WHERE id = '${INVOICE_RUN}'`);
    sql(`UPDATE checkpoints SET superstep = 'abc' WHERE rowid = (SELECT max(rowid) FROM checkpoints WHERE run_id = '${INVOICE_RUN}')`);
    const store = await SqlJsStore.open(file, { readOnly: true });
    try {
      assert.throws(
        () => store.getRun(INVOICE_RUN),
        corrupt(new RegExp(`runs row id="${INVOICE_RUN}": column status holds "bogus", but its record says "\\w+"`)),
      );
      assert.throws(
        () => store.listCheckpoints(INVOICE_RUN),
        corrupt(/checkpoints row run_id="[^"]+" superstep="abc" id="[^"]+": column superstep holds "abc", not an integer/),
      );
      const problems = store.damagedRecords().map((d) => `${d.table}: ${d.problem}`);
      assert.ok(
        problems.some((p) => /^runs: column status holds "bogus"/.test(p)),
        problems.join("\n"),
      );
      assert.ok(
        problems.some((p) => /^checkpoints: column superstep holds "abc", but its record says \d+/.test(p)),
        problems.join("\n"),
      );
    } finally {
      store.close();
    }
  });

  it("a deleted row that others name is listed by damagedRecords on each row that names it", async () => {
    const decision = sql(`SELECT run, version FROM state_values WHERE key = 'decision' AND run = '${INVOICE_RUN}'`).split("|");
    const callOfVerdict = sql(`SELECT agent_call_id FROM verdicts WHERE run_id = '${INVOICE_RUN}' LIMIT 1`);
    sql(`DELETE FROM state_values WHERE key = 'decision' AND run = '${INVOICE_RUN}'`);
    sql(`DELETE FROM agent_calls WHERE id = '${callOfVerdict}'`);
    sql(`DELETE FROM runs WHERE id = '${INVOICE_RUN}'`);
    const store = await SqlJsStore.open(file, { readOnly: true });
    try {
      const problems = store.damagedRecords().map((d) => `${d.table}: ${d.problem}`);
      const has = (p: string) => assert.ok(problems.includes(p), `expected "${p}" among:\n${problems.join("\n")}`);
      has(`checkpoints: its run ${INVOICE_RUN} is not stored`);
      has(`steps: its run ${INVOICE_RUN} is not stored`);
      has(`checkpoints: state key "decision" version ${decision[1]} of run ${decision[0]} is referenced but not stored`);
      has(`verdicts: its agent call ${callOfVerdict} is not stored`);
      assert.ok(
        problems.some((p) => /^runs: its parent run .* is not stored$/.test(p)),
        `the branch of the deleted run names it: ${problems.join("\n")}`,
      );
    } finally {
      store.close();
    }
  });

  it("a whole case file has no damaged records, on disk and in memory", async () => {
    const store = await SqlJsStore.open(file, { readOnly: true });
    try {
      assert.deepEqual(store.damagedRecords(), []);
    } finally {
      store.close();
    }
    const mem = new MemoryStore();
    commitInvoiceRun(mem);
    assert.deepEqual(mem.damagedRecords(), []);
  });

  it("a writer that opens and closes without committing leaves no journal behind", async () => {
    const before = listing();
    (await SqlJsStore.open(file)).close();
    assert.deepEqual(listing(), before);
  });
});

/** The integer identity columns (shown bare in messages); the rest are text (shown quoted). */
function isInteger(table: string, column: string): boolean {
  return ["superstep", "version", "seq"].includes(column) || (table === "facts" && column === "id");
}

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
