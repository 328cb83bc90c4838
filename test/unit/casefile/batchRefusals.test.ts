import assert from "node:assert/strict";
import { appendFileSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { MemoryStore, SqlJsStore } from "../../../src/casefile";
import { encodeRecord, journalPath } from "../../../src/casefile/journal";
import type { Json } from "../../../src/engine/records";
import type { CaseStore, CommitBatch } from "../../../src/engine/store";
import { agentCall, checkpoint, event, fact, intent, ref, rule, run, step, verdict } from "./builders";

/**
 * The whole sentence a refused commit says, for every kind of bad row (storeBatch.ts's checks,
 * which every store shares): a person reading `casefile: INVALID_BATCH: …` learns the table, the
 * row, the field or JSON path, and what was there instead. A refused batch stores nothing: the
 * case file reopened from disk holds none of it.
 */

const circular: Record<string, Json> = { name: "loop" };
circular.self = circular as Json;
const shared = { amount: 100 };
const tableList = "runs, checkpoints, values, steps, facts, agentCalls, verdicts, intents, rules, events";
const x40 = "x".repeat(40);

/** What is committed, and the message after "commit refused: ". */
const REFUSED: [string, () => unknown, string][] = [
  ["null", () => null, "a commit batch must be an object of tables"],
  ["an array", () => [], "a commit batch must be an object of tables"],
  ["a string", () => "runs", "a commit batch must be an object of tables"],
  ["an unknown table", () => ({ runs: [], value: [] }), `unknown table "value" in commit batch (expected one of ${tableList})`],
  ["a table that is no array", () => ({ runs: { r1: run("r1") } }), "runs must be an array, got an object"],
  ["a null row", () => ({ steps: [null] }), "steps[0] must be an object, got null"],
  ["an array row", () => ({ steps: [step("s0", "r1", 0), [1]] }), "steps[1] must be an object, got an array"],
  ["a number row", () => ({ steps: [7] }), "steps[0] must be an object, got number 7"],
  ["an empty id", () => ({ steps: [step("", "r1", 0)] }), 'steps[0].id must be a non-empty string, got ""'],
  ["a numeric id", () => ({ runs: [run(5 as never)] }), "runs[0].id must be a non-empty string, got number 5"],
  [
    "a missing updatedAt",
    () => ({ runs: [run("r1", { updatedAt: undefined })] }),
    "runs[0].updatedAt must be a non-empty string, got undefined",
  ],
  ["a fractional superstep", () => ({ steps: [step("s1", "r1", 1.5)] }), "steps[0].superstep must be an integer, got number 1.5"],
  [
    "an unsafe superstep",
    () => ({ steps: [step("s1", "r1", 2 ** 53)] }),
    "steps[0].superstep must be an integer, got number 9007199254740992",
  ],
  ["a boolean version", () => ({ facts: [fact("r1", "k", true as never)] }), "facts[0].version must be an integer, got boolean true"],
  ["a 40-character string", () => ({ steps: [step("s1", "r1", x40 as never)] }), `steps[0].superstep must be an integer, got "${x40}"`],
  [
    "a 41-character string",
    () => ({ steps: [step("s1", "r1", `${x40}yz` as never)] }),
    `steps[0].superstep must be an integer, got "${x40}…"`,
  ],
  [
    "an old checkpoint format",
    () => ({ checkpoints: [checkpoint("c1", "r1", 0, { v: 0 as never })] }),
    "checkpoints row c1: checkpoint format v=number 0, this store writes v=1",
  ],
  [
    "a checkpoint without format",
    () => ({ checkpoints: [checkpoint("c1", "r1", 0, { v: undefined as never })] }),
    "checkpoints row c1: checkpoint format v=undefined, this store writes v=1",
  ],
  [
    "null keys",
    () => ({ checkpoints: [checkpoint("c1", "r1", 0, { keys: null as never })] }),
    "checkpoints row c1.keys must be an object of key refs",
  ],
  [
    "keys as an array",
    () => ({ checkpoints: [checkpoint("c1", "r1", 0, { keys: [] as never })] }),
    "checkpoints row c1.keys must be an object of key refs",
  ],
  [
    "keys as text",
    () => ({ checkpoints: [checkpoint("c1", "r1", 0, { keys: "doc" as never })] }),
    "checkpoints row c1.keys must be an object of key refs",
  ],
  ...(
    [
      ["a null key ref", null, "null"],
      ["a numeric key ref", 3, "number 3"],
      ["a fractional version", { run: "r1", version: 1.5 }, "an object"],
      ["a missing version", { run: "r1" }, "an object"],
      ["a numeric run", { run: 1, version: 1 }, "an object"],
    ] as [string, unknown, string][]
  ).map(([what, keyRef, got]): [string, () => unknown, string] => [
    what,
    () => ({ checkpoints: [checkpoint("c1", "r1", 0, { keys: { ok: ref("r1", 1), doc: keyRef as never } })] }),
    `checkpoints row c1.keys.doc must be { version: integer, run: string }, got ${got}`,
  ]),
  [
    "pending that is no list",
    () => ({ checkpoints: [checkpoint("c1", "r1", 0, { pending: {} as never })] }),
    "checkpoints row c1.pending must be an array, got an object",
  ],
  [
    "waiting that is missing",
    () => ({ checkpoints: [checkpoint("c1", "r1", 0, { waiting: undefined })] }),
    "checkpoints row c1.waiting must be an array, got undefined",
  ],
  [
    "a missing value",
    () => ({ values: [{ run: "r1", key: "k", version: 1 }] }),
    'values row ["r1","k",1]: value is missing (undefined is not JSON)',
  ],
  [
    "Infinity",
    () => ({ values: [{ run: "r1", key: "k", version: 1, value: { n: [1, Infinity] } }] }),
    'values row ["r1","k",1].value.n[1]: Infinity is not a JSON number',
  ],
  [
    "-Infinity",
    () => ({ values: [{ run: "r1", key: "k", version: 1, value: -Infinity }] }),
    'values row ["r1","k",1].value: -Infinity is not a JSON number',
  ],
  [
    "a circular value",
    () => ({ values: [{ run: "r1", key: "k", version: 1, value: { doc: circular } }] }),
    'values row ["r1","k",1].value.doc.self: circular reference',
  ],
  [
    "a hole in an array",
    () => ({ runs: [run("r1", { outputs: [1, , 3] as never })] }),
    "runs row r1.outputs[1]: undefined in an array is not JSON",
  ],
  [
    "a Map",
    () => ({ runs: [run("r1", { input: { seen: new Map() } as never })] }),
    "runs row r1.input.seen: a Map object is not JSON (store plain data only)",
  ],
  [
    "an object of a prototype without constructor",
    () => ({ runs: [run("r1", { input: Object.create(Object.create(null)) as never })] }),
    "runs row r1.input: a non-plain object is not JSON (store plain data only)",
  ],
  ["a function", () => ({ events: [event("r1", "output", 0, { f: (() => 1) as never })] }), "events[0].data.f: a function is not JSON"],
  [
    "a symbol",
    () => ({ facts: [fact("r1", "k", 1, { readAt: Symbol("t") as never, source: "erp" })] }),
    "facts[0].readAt: a symbol is not JSON",
  ],
  [
    "a row twice in a batch",
    () => ({ verdicts: [verdict("v1", "r1"), verdict("v1", "r1")] }),
    "verdicts row v1 appears twice in the batch; verdicts are append-only",
  ],
];

/**
 * Every table with a good row and the fields a store indexes or keys on (strings, then integers):
 * without any one of them the row is refused before anything is written.
 */
const KEYED_FIELDS: [string, object, string[], string[]][] = [
  ["runs", run("r1"), ["id", "status", "createdAt", "updatedAt"], []],
  ["checkpoints", checkpoint("c1", "r1", 0), ["id", "runId", "createdAt"], ["superstep"]],
  ["values", { run: "r1", key: "k", version: 1, value: 1 }, ["run", "key"], ["version"]],
  ["steps", step("s1", "r1", 0), ["id", "runId", "executor"], ["superstep"]],
  ["facts", fact("r1", "k", 1), ["runId", "key", "executor"], ["superstep", "version"]],
  ["agentCalls", agentCall("a1", "r1"), ["id", "runId", "executor", "hash"], ["superstep"]],
  ["verdicts", verdict("v1", "r1"), ["id", "runId", "executor"], ["superstep"]],
  ["intents", intent("pay:7", "r1"), ["id", "runId", "status"], ["superstep"]],
  ["rules", rule("eur"), ["id"], []],
  ["events", event("r1", "output"), ["runId", "type", "at"], ["superstep"]],
];

function stores(): { name: string; open(): Promise<{ store: CaseStore; reopen(): Promise<CaseStore>; dispose(): void }> }[] {
  return [
    {
      name: "MemoryStore",
      open: async () => {
        const store = new MemoryStore();
        return { store, reopen: async () => store, dispose: () => store.close() };
      },
    },
    {
      name: "SqlJsStore",
      open: async () => {
        const dir = mkdtempSync(path.join(os.tmpdir(), "casefile-refusals-"));
        const file = path.join(dir, "case.casefile");
        const store = await SqlJsStore.open(file, { create: true });
        let again: SqlJsStore | undefined;
        return {
          store,
          reopen: async () => {
            store.close();
            return (again = await SqlJsStore.open(file, { readOnly: true }));
          },
          dispose: () => {
            store.close();
            again?.close();
            rmSync(dir, { recursive: true, force: true });
          },
        };
      },
    },
  ];
}

function refusedWith(message: string, what: string): (e: unknown) => boolean {
  return (e) => {
    const err = e as { code?: string; message?: string };
    assert.equal(err.code, "INVALID_BATCH", `${what}: the code (${err.message})`);
    assert.equal(err.message, `commit refused: ${message}`, `${what}: the message`);
    return true;
  };
}

for (const { name, open } of stores()) {
  describe(`a refused commit says the whole of what is wrong: ${name}`, () => {
    let opened: Awaited<ReturnType<typeof open>>;
    beforeEach(async () => {
      opened = await open();
    });
    afterEach(() => opened.dispose());

    it("names the table, row, field or path and what it holds, and stores none of it", async () => {
      const { store } = opened;
      for (const [what, batch, message] of REFUSED)
        assert.throws(() => store.commit(batch() as CommitBatch), refusedWith(message, what), what);
      const after = await opened.reopen();
      assert.deepEqual(after.listRuns(), [], "no run stored");
      assert.deepEqual(after.listSteps("r1"), [], "no step stored");
      assert.deepEqual(after.listCheckpoints("r1"), [], "no checkpoint stored");
      assert.deepEqual(after.listEvents(), [], "no event stored");
      assert.deepEqual(after.listVerdicts(), [], "no verdict stored");
    });

    it("refuses a row of any table that lacks a field the store keys on, naming the table, the row and the field", async () => {
      const { store } = opened;
      for (const [table, row, strings, integers] of KEYED_FIELDS) {
        for (const [field, kind] of [
          ...strings.map((f) => [f, "a non-empty string"] as const),
          ...integers.map((f) => [f, "an integer"] as const),
        ]) {
          const lacking = { ...row } as Record<string, unknown>;
          delete lacking[field];
          assert.throws(
            () => store.commit({ [table]: [lacking] } as CommitBatch),
            refusedWith(`${table}[0].${field} must be ${kind}, got undefined`, `${table} without ${field}`),
            `${table} without ${field}`,
          );
        }
      }
      const after = await opened.reopen();
      assert.deepEqual(after.listRuns(), [], "no run stored");
      assert.deepEqual(after.listCheckpoints("r1"), [], "no checkpoint stored");
      assert.throws(() => after.readValues({ k: ref("r1", 1) }), /is referenced but not stored/, "no value stored");
      assert.deepEqual(after.listSteps("r1"), [], "no step stored");
      assert.deepEqual(after.listFacts("r1"), [], "no fact stored");
      assert.deepEqual(after.listAgentCalls(), [], "no agent call stored");
      assert.deepEqual(after.listVerdicts(), [], "no verdict stored");
      assert.deepEqual(after.listIntents(), [], "no intent stored");
      assert.deepEqual(after.listRules(true), [], "no rule stored");
      assert.deepEqual(after.listEvents(), [], "no event stored");
    });

    it("refuses a second row of every append-only table with an identity, in a later batch, naming it", async () => {
      const { store } = opened;
      store.commit({
        runs: [run("r1")],
        checkpoints: [checkpoint("c1", "r1", 0)],
        values: [{ run: "r1", key: "k", version: 1, value: 1 }],
        steps: [step("s1", "r1", 0)],
        agentCalls: [agentCall("a1", "r1")],
        verdicts: [verdict("v1", "r1")],
      });
      const again: [string, CommitBatch, string][] = [
        ["checkpoints", { checkpoints: [checkpoint("c1", "r1", 4)] }, "checkpoints row c1"],
        ["values", { values: [{ run: "r1", key: "k", version: 1, value: 2 }] }, 'values row ["r1","k",1]'],
        ["steps", { steps: [step("s1", "r1", 4)] }, "steps row s1"],
        ["agentCalls", { agentCalls: [agentCall("a1", "r1", { superstep: 4 })] }, "agentCalls row a1"],
        ["verdicts", { verdicts: [verdict("v1", "r1", { superstep: 4 })] }, "verdicts row v1"],
      ];
      for (const [table, batch, row] of again)
        assert.throws(
          () => store.commit(batch),
          refusedWith(`${row} already exists; ${table} are append-only and cannot be replaced`, table),
          table,
        );
      const after = await opened.reopen();
      assert.equal(after.getCheckpoint("c1")!.superstep, 0, "the first checkpoint c1 is kept");
      assert.deepEqual(after.readValues({ k: ref("r1", 1) }), { k: 1 }, "the first value is kept");
      assert.equal(after.listSteps("r1")[0]!.superstep, 0, "the first step is kept");
      assert.equal(after.getAgentCall("a1")!.superstep, 1, "the first agent call is kept");
      assert.equal(after.listVerdicts("r1")[0]!.superstep, 2, "the first verdict is kept");
    });

    it("takes a run, intent or rule twice in one batch as its last state, facts sharing a key, and data JSON can carry", async () => {
      const { store } = opened;
      const bare = Object.create(null) as Record<string, Json>;
      bare.currency = "EUR";
      store.commit({
        runs: [run("r1"), run("r1", { status: "completed" })],
        intents: [intent("pay:7", "r1"), intent("pay:7", "r1", { status: "done" })],
        rules: [rule("eur"), rule("eur", { deleted: true })],
        facts: [fact("r1", "invoice", 1), fact("r1", "invoice", 1, { source: "crm" })],
        // One object at two places is not a cycle; an object without prototype is plain data.
        values: [{ run: "r1", key: "k", version: 1, value: { a: shared, b: shared, list: [shared, shared], bare } as Json }],
      });
      const after = await opened.reopen();
      assert.deepEqual(
        after.listRuns().map((r) => [r.id, r.status]),
        [["r1", "completed"]],
        "one run, in its last state",
      );
      assert.deepEqual(
        after.listIntents().map((i) => [i.id, i.status]),
        [["pay:7", "done"]],
        "one intent, in its last state",
      );
      assert.deepEqual(after.listRules(), [], "the rule's last state is deleted");
      assert.equal(after.listRules(true).length, 1, "one rule, deleted");
      assert.deepEqual(
        after.listFacts("r1").map((f) => f.source),
        ["erp", "crm"],
        "both facts of the key",
      );
      assert.deepEqual(
        after.readValues({ k: ref("r1", 1) }),
        { k: { a: { amount: 100 }, b: { amount: 100 }, list: [{ amount: 100 }, { amount: 100 }], bare: { currency: "EUR" } } },
        "the value as committed",
      );
    });
  });
}

describe("a journal record whose events do not follow on", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "casefile-refusals-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("is refused on open as corruption, naming the sequence the events should come after", async () => {
    const file = path.join(dir, "case.casefile");
    const w = await SqlJsStore.open(file, { create: true });
    w.commit({ runs: [run("r1")], events: [event("r1", "run_started"), event("r1", "superstep_started")] });
    w.close(); // compacted, journal_seq 1, events 1 and 2
    const records: [string, unknown][] = [
      ["an event numbered before the last", [{ ...event("r1", "checkpoint"), seq: 2 }]],
      ["an event without a number", [event("r1", "checkpoint")]],
      [
        "events out of order",
        [
          { ...event("r1", "checkpoint"), seq: 4 },
          { ...event("r1", "checkpoint"), seq: 3 },
        ],
      ],
    ];
    const expected = ["event seq number 2 is not after 2", "event seq undefined is not after 2", "event seq number 3 is not after 4"];
    for (const [i, [what, events]] of records.entries()) {
      rmSync(journalPath(file), { force: true });
      appendFileSync(journalPath(file), encodeRecord(2, JSON.stringify({ events })));
      await assert.rejects(
        SqlJsStore.open(file, { readOnly: true }),
        (e: Error & { code?: string }) => {
          assert.equal(e.code, "CORRUPT_CASE_FILE", `${what}: the code (${e.message})`);
          assert.ok(e.message.endsWith(`(sequence 2) cannot be applied: commit refused: ${expected[i]}`), `${what}: ${e.message}`);
          return true;
        },
        what,
      );
    }
    // Events that follow on, with a gap, are taken as numbered at commit.
    rmSync(journalPath(file), { force: true });
    appendFileSync(
      journalPath(file),
      encodeRecord(
        2,
        JSON.stringify({
          events: [
            { ...event("r1", "checkpoint"), seq: 3 },
            { ...event("r1", "output"), seq: 9 },
          ],
        }),
      ),
    );
    const r = await SqlJsStore.open(file, { readOnly: true });
    try {
      assert.deepEqual(
        r.listEvents().map((e) => [e.seq, e.type]),
        [
          [1, "run_started"],
          [2, "superstep_started"],
          [3, "checkpoint"],
          [9, "output"],
        ],
        "every event with the number it was committed with",
      );
    } finally {
      r.close();
    }
  });
});
