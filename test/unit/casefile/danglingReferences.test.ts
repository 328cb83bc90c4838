import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { SqlJsStore } from "../../../src/casefile";
import { tamperFile } from "./helpers/tamper";
import { agentCall, checkpoint, event, fact, intent, ref, run, step, verdict } from "./builders";

/**
 * Rows deleted from a case file by hand (with sql.js, then reopened): damagedRecords names every
 * row that still refers to one of them, each by its identity and the reference that is missing,
 * and nothing else, so `casefile inspect` lists exactly what a deleted run, checkpoint, agent
 * call or intent left dangling.
 */

let dir: string;
let file: string;

const tamper = (...statements: string[]): Promise<void> => tamperFile(file, ...statements);

async function damaged(): Promise<{ table: string; row: Record<string, string | number>; problem: string }[]> {
  const store = await SqlJsStore.open(file, { readOnly: true });
  try {
    return store.damagedRecords();
  } finally {
    store.close();
  }
}

beforeEach(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), "casefile-dangling-"));
  file = path.join(dir, "case.casefile");
  const store = await SqlJsStore.open(file, { create: true });
  // Run "gone" has one row of every table that names a run; run "kept" refers to what is deleted.
  store.commit({ runs: [run("gone"), run("kept", { parentRunId: "gone" })] });
  store.commit({
    checkpoints: [
      checkpoint("g0", "gone", 0, { keys: { doc: ref("gone", 1) } }),
      checkpoint("k1", "kept", 1, { parentId: "g0", keys: { doc: ref("gone", 1), own: ref("kept", 2) } }),
    ],
    values: [
      { run: "gone", key: "doc", version: 1, value: "d" },
      { run: "kept", key: "own", version: 2, value: "o" },
    ],
    steps: [step("gs", "gone", 0)],
    facts: [fact("gone", "doc", 1)],
    agentCalls: [agentCall("ga", "gone"), agentCall("ka", "kept")],
    verdicts: [verdict("gv", "gone", { agentCallId: "ga" }), verdict("kv", "kept", { agentCallId: "ka" })],
    intents: [intent("pay:1", "gone"), intent("pay:2", "kept")],
    events: [event("gone", "run_started"), event("kept", "intent", 3, { id: "pay:2" })],
  });
  store.close();
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe("rows that name a row deleted by hand", () => {
  it("are each listed once, by their identity and the reference that is missing", async () => {
    await tamper(
      "DELETE FROM runs WHERE id = 'gone'",
      "DELETE FROM checkpoints WHERE id = 'g0'",
      "DELETE FROM state_values WHERE run = 'kept'",
      "DELETE FROM agent_calls WHERE id = 'ka'",
      "DELETE FROM intents WHERE id = 'pay:2'",
    );
    assert.deepEqual(
      await damaged(),
      [
        { table: "state_values", row: { run: "gone", key: "doc", version: 1 }, problem: "its run gone is not stored" },
        { table: "steps", row: { run_id: "gone", superstep: 0, id: "gs" }, problem: "its run gone is not stored" },
        { table: "facts", row: { run_id: "gone", key: "doc", version: 1, superstep: 0, id: 1 }, problem: "its run gone is not stored" },
        { table: "agent_calls", row: { run_id: "gone", superstep: 1, id: "ga" }, problem: "its run gone is not stored" },
        { table: "verdicts", row: { run_id: "gone", superstep: 2, id: "gv" }, problem: "its run gone is not stored" },
        { table: "intents", row: { run_id: "gone", id: "pay:1" }, problem: "its run gone is not stored" },
        { table: "events", row: { run_id: "gone", superstep: 0, seq: 1 }, problem: "its run gone is not stored" },
        { table: "runs", row: { id: "kept" }, problem: "its parent run gone is not stored" },
        { table: "checkpoints", row: { run_id: "kept", superstep: 1, id: "k1" }, problem: "its parent checkpoint g0 is not stored" },
        {
          table: "checkpoints",
          row: { run_id: "kept", superstep: 1, id: "k1" },
          problem: 'state key "own" version 2 of run kept is referenced but not stored',
        },
        { table: "verdicts", row: { run_id: "kept", superstep: 2, id: "kv" }, problem: "its agent call ka is not stored" },
        { table: "events", row: { run_id: "kept", superstep: 3, seq: 2 }, problem: "it records intent pay:2, which is not stored" },
      ],
      "every dangling reference, table by table in the order of the checks, rows in the order stored",
    );
  });

  it("are still listed beside rows whose id is NULL, which are named as NULL", async () => {
    // A NULL among the stored ids made every `NOT IN` unknown: the deleted run's rows were not listed.
    await tamper(
      "DELETE FROM runs WHERE id = 'gone'",
      "INSERT INTO runs (id, parent_run_id, status, created_at, data) VALUES (NULL, 'nowhere', 'running', 't', '{}')",
      "INSERT INTO checkpoints (id, run_id, superstep, parent_id, created_at, pending, waiting, data) VALUES (NULL, 'kept', 5, NULL, 't', 0, 0, '{}')",
      "INSERT INTO agent_calls (id, run_id, superstep, hash, data) VALUES (NULL, 'kept', 5, 'h', '{}')",
      "INSERT INTO intents (id, run_id, status, data) VALUES (NULL, 'kept', 'open', '{}')",
      "DELETE FROM checkpoints WHERE id = 'g0'",
      "DELETE FROM agent_calls WHERE id = 'ka'",
      "DELETE FROM intents WHERE id = 'pay:2'",
    );
    const problems = (await damaged()).map((d) => `${d.table} ${JSON.stringify(d.row)}: ${d.problem}`);
    for (const expected of [
      'steps {"run_id":"gone","superstep":0,"id":"gs"}: its run gone is not stored',
      'runs {"id":"NULL"}: its parent run nowhere is not stored',
      'runs {"id":"kept"}: its parent run gone is not stored',
      'checkpoints {"run_id":"kept","superstep":1,"id":"k1"}: its parent checkpoint g0 is not stored',
      'verdicts {"run_id":"kept","superstep":2,"id":"kv"}: its agent call ka is not stored',
      'events {"run_id":"kept","superstep":3,"seq":2}: it records intent pay:2, which is not stored',
      'runs {"id":"NULL"}: data is not a runs record: record.id must be a non-empty string, got undefined',
    ])
      assert.ok(problems.includes(expected), `expected "${expected}" among:\n${problems.join("\n")}`);
  });

  it("are not invented from a checkpoint whose keys are a list, nor from events that are not intents", async () => {
    await tamper(
      `UPDATE checkpoints SET data = json_set(data, '$.keys', json('[{"run":"kept","version":9}]')) WHERE id = 'k1'`,
      `UPDATE events SET data = json_set(data, '$.data', json('{"id":"nothing"}')) WHERE seq = 1`,
    );
    assert.deepEqual(
      await damaged(),
      [
        {
          table: "checkpoints",
          row: { run_id: "kept", superstep: 1, id: "k1" },
          problem: "data is not a checkpoints record: record.keys must be an object of key refs",
        },
      ],
      "only the checkpoint's own shape is wrong: a list of keys names no state key, a run_started event no intent",
    );
  });

  it("are not listed while every referenced row is stored", async () => {
    assert.deepEqual(await damaged(), [], "a whole case file has nothing dangling");
  });
});
