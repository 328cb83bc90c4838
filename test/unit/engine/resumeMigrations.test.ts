import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { z } from "zod";
import { type SqlJsStore } from "../../../src/casefile/index";
import { RunControl } from "../../../src/engine/control";
import { type EngineOptions, type RunResult } from "../../../src/engine/engine";
import { code, edge } from "../../../src/engine/executors";
import type { Json } from "../../../src/engine/records";
import { defineWorkflow, type Workflow, type WorkflowSpec } from "../../../src/engine/workflow";
import { engineOn, refusal, withCaseFile } from "./helpers/caseFileOnDisk";

/**
 * Migrating a checkpoint to a newer workflow version on resume, on a case file on disk reopened
 * for every step (mutation testing of resumePlan.ts, issue 18): the branch versions only the keys
 * a migration changed, and a migration that is missing, throws or leaves state that does not
 * parse is refused naming every key at fault; a message for a removed executor is quoted.
 */

let dir: string;
let file: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), "casefile-resumemigrations-"));
  file = path.join(dir, "case.casefile");
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const onDisk = <T>(go: (store: SqlJsStore) => Promise<T> | T): Promise<T> => withCaseFile(file, go);
const engine = (wf: Workflow, options: EngineOptions = {}) => engineOn(file, wf, options);

/** v1: `start` writes a = 1 and b = "x", then sends `payload` to `next`, which stops the run before it runs. */
function v1(payload: Json = "to next"): Workflow {
  return defineWorkflow({
    name: "shop",
    version: 1,
    state: { a: z.number(), b: z.string() },
    start: "start",
    executors: {
      start: code({ owns: ["a", "b"], run: (ctx) => (ctx.write("a", 1), ctx.write("b", "x"), payload) }),
      next: code({ run: () => undefined }),
    },
    edges: [edge("start", "next")],
  });
}
async function stoppedV1(payload?: Json): Promise<RunResult> {
  const control = new RunControl();
  const wf = v1(payload);
  const r = await engine(wf, { control, onEvent: (e) => e.type === "checkpoint" && control.stopAfterSuperstep() })((e) => e.run());
  assert.equal(r.status, "stopped", "the run stopped after its first superstep, with a message pending for next");
  return r;
}
const v2 = (state: WorkflowSpec["state"], migrations: WorkflowSpec["migrations"], version = 2) =>
  defineWorkflow({ ...v1(), version, state, migrations, edges: [{ from: "start", to: "next" }] });

describe("resume migrations: what a branch keeps", () => {
  it("versions in the branch only the keys the migration changed; the others still point at the parent's values", async () => {
    const r = await stoppedV1();
    const branch = await engine(v2({ a: z.number(), b: z.string() }, { 2: (s) => ({ ...s, b: "migrated" }) }))((e) =>
      e.resume(r.checkpointId),
    );
    const { keys, values } = await onDisk((s) => {
      const cp = s.getCheckpoint(`${branch.runId}:1`)!;
      return { keys: cp.keys, values: s.readValues(cp.keys) };
    });
    assert.deepEqual(keys, { a: { version: 1, run: r.runId }, b: { version: 2, run: branch.runId } }, "a is the parent's, b the branch's");
    assert.deepEqual(values, { a: 1, b: "migrated" }, "the branch reads the migrated value of b, reopened from disk");
  });

  it("a migrated value that its schema turns into something not JSON is refused as the migration's doing", async () => {
    const r = await stoppedV1();
    const dated = v2({ a: z.number(), b: z.string().transform((s) => new Date(s)) }, { 2: (s) => s });
    const err = await refusal(
      engine(dated)((e) => e.resume(r.checkpointId)),
      "a migration to a Date",
    );
    assert.equal(err.code, "INVALID_STATE_VALUE");
    assert.equal(err.message, 'executor "migration" wrote a Date object at "b": state holds JSON data only');
  });
});

describe("resume migrations: what is refused", () => {
  it("a missing migration whose state would parse as it is says to declare an identity migration", async () => {
    const r = await stoppedV1();
    const err = await refusal(
      engine(v2({ a: z.number(), b: z.string() }, {}))((e) => e.resume(r.checkpointId)),
      "no migration",
    );
    assert.equal(err.code, "MIGRATION_FAILED");
    assert.equal(
      err.message,
      `checkpoint "${r.checkpointId}" was made by version 1 of "shop", and no migration to version 2 is declared; its state parses as it is: declare migrations: { 2: (state) => state }`,
    );
    assert.deepEqual(err.details, { problems: [] }, "nothing fails to parse");
  });

  it("a missing migration whose state would not parse names every key that would not, each with its path", async () => {
    const r = await stoppedV1();
    const err = await refusal(
      engine(v2({ a: z.string(), b: z.number() }, {}))((e) => e.resume(r.checkpointId)),
      "no migration",
    );
    assert.equal(err.code, "MIGRATION_FAILED");
    assert.match(err.message, /as it is, its state no longer parses at: "a" \(no longer parses: .+\); "b" \(no longer parses: .+\)$/);
    const problems = (err.details as { problems: { key: string; path: string[]; at: string }[] }).problems;
    assert.deepEqual(
      problems.map((p) => [p.key, p.path, p.at]),
      [
        ["a", [], "a"],
        ["b", [], "b"],
      ],
      "the details list each key that no longer parses",
    );
  });

  it("a migration that throws is refused naming the version it migrates to and what it threw", async () => {
    const r = await stoppedV1();
    const boom = v2(
      { a: z.number(), b: z.string() },
      {
        2: () => {
          throw new Error("no column b");
        },
      },
    );
    const err = await refusal(
      engine(boom)((e) => e.resume(r.checkpointId)),
      "a throwing migration",
    );
    assert.equal(err.code, "MIGRATION_FAILED");
    assert.equal(err.message, 'migration to version 2 of "shop" threw: no column b');
  });

  it("a migration that leaves state not parsing names every key at fault, the first in the details", async () => {
    const r = await stoppedV1();
    const err = await refusal(
      engine(v2({ a: z.string(), b: z.number() }, { 2: (s) => s }))((e) => e.resume(r.checkpointId)),
      "a bad migration",
    );
    assert.equal(err.code, "MIGRATION_FAILED");
    assert.match(
      err.message,
      new RegExp(`^after migrating checkpoint "${r.checkpointId}" to version 2, "a" no longer parses: .+; "b" no longer parses: `),
    );
    const d = err.details as { key: string; path: string[]; problems: unknown[] };
    assert.deepEqual([d.key, d.path, d.problems.length], ["a", [], 2], "the details point at the first key and list both");
  });
});

describe("resume migrations: a message for an executor a version removed", () => {
  const without = (version: number) =>
    defineWorkflow({ ...v1(), version, executors: { start: v1().executors.start! }, edges: [], migrations: { 2: (s) => s } });

  it("quotes a short payload whole, and says to route it with the next version when the version is unchanged", async () => {
    const payload = "x".repeat(118); // 120 characters as JSON: the longest quoted whole
    const r = await stoppedV1(payload);
    const err = await refusal(
      engine(without(1))((e) => e.resume(r.checkpointId)),
      "same version without next",
    );
    assert.equal(err.code, "UNDELIVERABLE_MESSAGE");
    assert.ok(
      err.message.includes(`(from "start": ${JSON.stringify(payload)}), which version 1`),
      `the payload is quoted whole: ${err.message}`,
    );
    assert.ok(
      err.message.endsWith(
        'migrations: { 2: { state: (s) => s, messages: { "next": "<executor>" or null to drop it } } } (with version: 2)',
      ),
      `the fix names version 2 and says to declare it: ${err.message}`,
    );
    assert.deepEqual(err.details, { executor: "next", checkpoint: r.checkpointId }, "the details name the executor and checkpoint");
  });

  it("cuts a long payload to 117 characters and three dots, and names the version a newer workflow already has", async () => {
    const payload = "y".repeat(119);
    const r = await stoppedV1(payload);
    const err = await refusal(
      engine(without(2))((e) => e.resume(r.checkpointId)),
      "v2 without next",
    );
    assert.ok(err.message.includes(`(from "start": ${JSON.stringify(payload).slice(0, 117)}...), which version 2`), `cut: ${err.message}`);
    assert.ok(
      err.message.endsWith('messages: { "next": "<executor>" or null to drop it } } }'),
      `no "with version" for v2: ${err.message}`,
    );
    assert.ok(err.message.includes("migrations: { 2: {"), `the migration to write is version 2's: ${err.message}`);
  });
});
