import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { SqlJsStore } from "../../../src/casefile";
import { tamperFile } from "./helpers/tamper";
import { agentCall, checkpoint, run, step } from "./builders";

/**
 * A case file edited on disk with sql.js after it was written (the columns beside `data`, the
 * column types of a table, an agent call's JSON), then reopened: every read that meets the
 * damage refuses it with CORRUPT_CASE_FILE naming the row, the column and what it holds, so no
 * listing shows a checkpoint, a run or an agent call that is not what its record says.
 * (damagedRecords.test.ts covers data that is not JSON, with the sqlite3 CLI.)
 */

let dir: string;
let file: string;

const tamper = (...statements: string[]): Promise<void> => tamperFile(file, ...statements);

/** Reopens the tampered file read-only and hands the store to `body`. */
async function reopened<T>(body: (store: SqlJsStore) => T): Promise<T> {
  const store = await SqlJsStore.open(file, { readOnly: true });
  try {
    return body(store);
  } finally {
    store.close();
  }
}

/** Asserts `read` throws CORRUPT_CASE_FILE whose message is exactly `<file> is corrupted: <message>`. */
function refused(read: () => unknown, message: string, what: string): void {
  assert.throws(
    read,
    (e: Error & { code?: string }) => {
      assert.equal(e.code, "CORRUPT_CASE_FILE", `${what}: the code (${e.message})`);
      assert.equal(e.message, `${file} is corrupted: ${message}`, `${what}: the message`);
      return true;
    },
    what,
  );
}

beforeEach(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), "casefile-tampered-"));
  file = path.join(dir, "case.casefile");
  const store = await SqlJsStore.open(file, { create: true });
  store.commit({ runs: [run("r1"), run("r2", { parentRunId: "r1" })] });
  store.commit({
    checkpoints: [
      checkpoint("c0", "r1", 0),
      checkpoint("c1", "r1", 1, {
        parentId: "c0",
        pending: [{ to: "decide", from: "load", payload: 1 }],
        waiting: [{ id: "q", executor: "ask", runId: "r1", superstep: 1, createdAt: "t", prompt: { title: "Approve?" }, message: null }],
      }),
    ],
    steps: [step("s1", "r1", 1)],
    agentCalls: [agentCall("a1", "r1"), agentCall("a2", "r1", { superstep: 2, tokens: { count: 7, tokenizer: "t" } })],
  });
  store.close(); // compacted: what follows edits the database itself, with an empty journal
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe("a checkpoint column of the wrong type, listed from the columns alone", () => {
  const cases: [string, string, string][] = [
    ["pending = 'x'", 'pending holds "x", not an integer', "a pending count that is text"],
    ["waiting = 1.5", "waiting holds 1.5, not an integer", "a waiting count that is not whole"],
    ["created_at = X'00'", 'created_at holds {"0":0}, not a time', "a creation time that is a blob"],
    ["parent_id = X'01'", 'parent_id holds {"0":1}, not a checkpoint id', "a parent that is a blob"],
  ];
  for (const [set, problem, what] of cases) {
    it(`refuses ${what}, naming the checkpoint and the column, and still lists the undamaged superstep`, async () => {
      await tamper(`UPDATE checkpoints SET ${set} WHERE id = 'c1'`);
      await reopened((store) => {
        refused(() => store.listCheckpoints("r1"), `checkpoints row run_id="r1" superstep=1 id="c1": column ${problem}`, what);
        refused(
          () => store.listCheckpoints("r1", 1),
          `checkpoints row run_id="r1" superstep=1 id="c1": column ${problem}`,
          `${what}, one superstep`,
        );
        assert.deepEqual(
          store.listCheckpoints("r1", 0).map((c) => c.id),
          ["c0"],
          "the undamaged superstep still lists",
        );
      });
    });
  }

  it("names a superstep that is not a number as the text it holds", async () => {
    await tamper("UPDATE checkpoints SET superstep = 'one' WHERE id = 'c1'");
    await reopened((store) =>
      refused(
        () => store.listCheckpoints("r1"),
        `checkpoints row run_id="r1" superstep="one" id="c1": column superstep holds "one", not an integer`,
        "superstep",
      ),
    );
  });
});

describe("a column that disagrees with its record, read back", () => {
  it("names a NULL where the record has a value, a value where it has none, a number as a number (infinity too) and a blob as its bytes", async () => {
    await tamper(
      "UPDATE runs SET parent_run_id = NULL WHERE id = 'r2'",
      "UPDATE runs SET parent_run_id = 'zz' WHERE id = 'r1'",
      "UPDATE steps SET superstep = 7 WHERE id = 's1'",
      "UPDATE agent_calls SET hash = X'0102' WHERE id = 'a1'",
      "UPDATE agent_calls SET superstep = 9e999 WHERE id = 'a2'",
    );
    await reopened((store) => {
      refused(() => store.getRun("r2"), 'runs row id="r2": column parent_run_id holds NULL, but its record says "r1"', "a parent erased");
      refused(() => store.getRun("r1"), 'runs row id="r1": column parent_run_id holds "zz", but its record says NULL', "a parent added");
      // kills tables.ts:448 ConditionalExpression typeof v === "string" -> true (a blob would show as {"0":1,"1":2})
      refused(
        () => store.getAgentCall("a1"),
        'agent_calls row run_id="r1" superstep=1 id="a1": column hash holds 1,2, but its record says "sha256:a1"',
        "a hash that is a blob, shown as its bytes",
      );
      // kills tables.ts:456 ConditionalExpression typeof v === "string" -> true (JSON.stringify(Infinity) is "null")
      refused(
        () => store.getAgentCall("a2"),
        'agent_calls row run_id="r1" superstep=Infinity id="a2": column superstep holds Infinity, but its record says 2',
        "a superstep overflowed to infinity, named as such",
      );
      refused(
        () => store.listSteps("r1", 7),
        'steps row run_id="r1" superstep=7 id="s1": column superstep holds 7, but its record says 1',
        "a superstep moved",
      );
      assert.deepEqual(store.listSteps("r1", 1), [], "the step is no longer found where its record says it ran");
    });
  });
});

describe("a table rebuilt without its column types (a case file put together from parts)", () => {
  it("refuses data that is NULL or a number, and names a row whose id is NULL", async () => {
    await tamper(
      "CREATE TABLE rules_typeless (id TEXT PRIMARY KEY, deleted INTEGER NOT NULL, data)",
      "DROP TABLE rules",
      "ALTER TABLE rules_typeless RENAME TO rules",
      "INSERT INTO rules (id, deleted, data) VALUES ('nothing', 0, NULL), ('number', 0, 42), (NULL, 0, '{}')",
    );
    await reopened((store) => {
      refused(() => store.listRules(), 'rules row id="nothing": data is NULL, not JSON text', "the first damaged rule");
      assert.deepEqual(
        store.damagedRecords(),
        [
          { table: "rules", row: { id: "nothing" }, problem: "data is NULL, not JSON text" },
          { table: "rules", row: { id: "number" }, problem: "data is a number, not JSON text" },
          {
            table: "rules",
            row: { id: "NULL" },
            problem: "data is not a rules record: record.id must be a non-empty string, got undefined",
          },
        ],
        "every damaged rule is listed, in the order stored",
      );
    });
  });
});

describe("the run ids of a case file whose run record is damaged", () => {
  it("are read from the id column, in commit order, while reading the runs is refused", async () => {
    await tamper("UPDATE runs SET data = 'not json' WHERE id = 'r1'");
    await reopened((store) => {
      assert.deepEqual(store.runIds(), ["r1", "r2"], "every run id, the damaged one included");
      assert.throws(() => store.listRuns(), /runs row id="r1": data is not JSON/, "the records themselves are refused");
    });
  });
});

describe("agent call summaries of a tampered call", () => {
  const cases: [string, string, string][] = [
    [
      "json_set(data, '$.executor', '')",
      'data is not a agent_calls record: record.executor must be a non-empty string, got ""',
      "an empty executor",
    ],
    [
      "json_set(data, '$.executor', 5)",
      "data is not a agent_calls record: record.executor must be a non-empty string, got number 5",
      "an executor that is a number",
    ],
    ["json_set(data, '$.tokens', json('{\"count\":\"7\"}'))", 'its token count holds "7", not a number', "a token count that is text"],
  ];
  for (const [data, problem, what] of cases) {
    it(`refuse ${what}, naming the call, as CORRUPT_CASE_FILE`, async () => {
      await tamper(`UPDATE agent_calls SET data = ${data} WHERE id = 'a2'`);
      await reopened((store) =>
        refused(() => store.agentCallSummaries(), `agent_calls row run_id="r1" superstep=2 id="a2": ${problem}`, what),
      );
    });
  }

  it("summarise a whole file from its columns and the call's executor and token count", async () => {
    await reopened((store) => {
      const summaries = store.agentCallSummaries();
      assert.deepEqual(
        summaries.map((s) => ({ ...s })),
        [
          { id: "a1", runId: "r1", superstep: 1, executor: "decide", hash: "sha256:a1", tokens: null },
          { id: "a2", runId: "r1", superstep: 2, executor: "decide", hash: "sha256:a2", tokens: 7 },
        ],
        "each call's summary",
      );
      assert.ok(Object.isFrozen(summaries) && summaries.every((s) => Object.isFrozen(s)), "the summaries cannot be changed by a reader");
      assert.equal(store.agentCallSummaries(), summaries, "asked again with nothing added: the same list");
    });
  });
});

describe("the details of a refused damaged row", () => {
  it("name the file, the table, the row and the problem, for a host that shows them beside the message", async () => {
    await tamper("UPDATE steps SET superstep = 7 WHERE id = 's1'");
    await reopened((store) =>
      assert.throws(
        () => store.listSteps("r1"),
        (e: Error & { details?: unknown }) => {
          assert.deepEqual(
            e.details,
            {
              file,
              table: "steps",
              row: { run_id: "r1", superstep: 7, id: "s1" },
              problem: "column superstep holds 7, but its record says 1",
            },
            "the error's details",
          );
          return true;
        },
        "the damaged step is refused",
      ),
    );
  });
});

describe("a first column or a missing field that disagrees with its record", () => {
  it("names a renamed run by the id it holds, and a record without the seq its column holds as NULL", async () => {
    await tamper(
      "UPDATE runs SET id = 'rX' WHERE id = 'r2'",
      `INSERT INTO events (seq, run_id, superstep, type, data) VALUES (5, 'r1', 0, 'output', '{"runId":"r1","superstep":0,"type":"output","at":"t","data":null}')`,
    );
    await reopened((store) => {
      refused(() => store.getRun("rX"), 'runs row id="rX": column id holds "rX", but its record says "r2"', "a run renamed in its column");
      refused(
        () => store.listEvents(),
        'events row run_id="r1" superstep=0 seq=5: column seq holds 5, but its record says NULL',
        "an event without seq",
      );
    });
  });
});

describe("a constraint added to a table by hand", () => {
  // kills tables.ts:77 ConditionalExpression (e).code === "SQLITE_CONSTRAINT_PRIMARYKEY" -> true
  it("refuses a commit with SQLite's reason, not as a row already stored, and stores none of it", async () => {
    await tamper("CREATE UNIQUE INDEX one_step_per_superstep ON steps (run_id, superstep)");
    const writer = await SqlJsStore.open(file);
    try {
      assert.throws(
        () => writer.commit({ steps: [step("s2", "r1", 1)] }),
        (e: Error & { code?: string }) => {
          assert.equal(e.code, "SQLITE_CONSTRAINT_UNIQUE", `the code (${e.message})`);
          assert.equal(e.message, "UNIQUE constraint failed: steps.run_id, steps.superstep", "the message names the constraint");
          return true;
        },
        "a second step in superstep 1",
      );
    } finally {
      writer.close();
    }
    await reopened((store) =>
      assert.deepEqual(
        store.listSteps("r1").map((s) => s.id),
        ["s1"],
        "only the step stored before",
      ),
    );
  });
});
