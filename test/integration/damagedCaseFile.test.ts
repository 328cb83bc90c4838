import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { root, runCli, tempDir } from "./helpers";

/**
 * The CLI as a user runs it (bin/casefile.js) on a case file whose JSON columns were edited after
 * the run: resume is refused in one line (exit 3) with nothing created or changed beside the
 * file, and inspect lists the damaged records, shows the runs it can and names the one it cannot.
 */

const counter = path.join(root, "test/fixtures/workflows/counter.ts");
const SQLITE3 = "/usr/bin/sqlite3";

function listing(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const n of readdirSync(dir).sort())
    out[n] = createHash("sha256")
      .update(readFileSync(path.join(dir, n)))
      .digest("hex");
  return out;
}

describe("CLI on a case file with damaged records", function () {
  this.timeout(120_000);
  let dir: string;
  let pristine: string;
  let runs: string[];

  before(async () => {
    execFileSync("npm", ["run", "build", "--silent"], { cwd: root, stdio: "pipe" });
    dir = tempDir("casefile-damaged-cli-");
    pristine = path.join(dir, "counter.casefile");
    for (let i = 0; i < 2; i++) {
      const r = await runCli(["run", counter, "--case-file", pristine, "--input", '{"limit":3,"delayMs":0}']);
      assert.equal(r.code, 0, r.stderr);
    }
    runs = execFileSync(SQLITE3, [pristine, "SELECT id FROM runs ORDER BY rowid"], { encoding: "utf8" }).trim().split("\n");
    assert.equal(runs.length, 2);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  /** A copy of the case file alone in a new folder, with `statement` applied by the sqlite3 CLI. */
  function damagedCopy(name: string, statement: string): string {
    const sub = path.join(dir, name);
    mkdirSync(sub);
    const file = path.join(sub, "case.casefile");
    copyFileSync(pristine, file);
    execFileSync(SQLITE3, [file, statement]);
    return file;
  }

  it("resume of a state value that is not JSON: CORRUPT_CASE_FILE in one line naming table and row, exit 3, nothing created or changed", async () => {
    const file = damagedCopy("resume", `UPDATE state_values SET data = 'not json' WHERE run = '${runs[0]}' AND key = 'n' AND version = 2`);
    const before = listing(path.dirname(file));
    const r = await runCli(["resume", file, "--checkpoint", `${runs[0]}:2`]);
    assert.equal(r.code, 3, r.stderr);
    const lines = r.stderr.trimEnd().split("\n");
    assert.equal(lines.length, 1, r.stderr);
    assert.equal(
      lines[0]!.replace(/Unexpected token.*$/, "…"),
      `casefile: CORRUPT_CASE_FILE: ${file} is corrupted: state_values row run="${runs[0]}" key="n" version=2: data is not JSON: …`,
    );
    assert.ok(!r.stderr.includes("    at "), "no stack");
    assert.deepEqual(listing(path.dirname(file)), before, "no .journal, no .lock, the file's bytes unchanged");
  });

  it("inspect lists the damaged records first, shows the whole run and names the run it cannot show", async () => {
    const file = damagedCopy(
      "inspect",
      `UPDATE steps SET data = '{"id": 3}' WHERE run_id = '${runs[1]}' AND superstep = 2; ` +
        `UPDATE state_values SET data = '[' WHERE run = '${runs[1]}' AND key = 'trail'`,
    );
    const before = listing(path.dirname(file));
    const text = await runCli(["inspect", file]);
    assert.equal(text.code, 0, text.stderr);
    const lines = text.stdout.split("\n");
    assert.equal(lines[0], "damaged records (2): these rows cannot be read, or name rows that are not stored");
    assert.match(lines[1]!, new RegExp(`^  state_values run="${runs[1]}" key="trail" version=1: data is not JSON: `));
    assert.equal(
      lines[2],
      `  steps run_id="${runs[1]}" superstep=2 id="${runs[1]}:2:tick": data is not a steps record: record.id must be a non-empty string, got number 3`,
    );
    assert.ok(lines.includes(`run ${runs[0]}  slow-counter v1  COMPLETED`), text.stdout);
    assert.ok(
      lines.some((l) => l.startsWith(`run ${runs[1]}: cannot be shown whole: ${file} is corrupted: steps row run_id="${runs[1]}"`)),
      text.stdout,
    );

    const json = await runCli(["inspect", file, "--json"]);
    assert.equal(json.code, 0, json.stderr);
    const parsed = JSON.parse(json.stdout) as {
      damaged: { table: string; row: Record<string, string | number>; problem: string }[];
      runs: { id: string }[];
      unreadable: { run: string; message: string }[];
    };
    assert.deepEqual(
      parsed.damaged.map((d) => [d.table, d.row]),
      [
        ["state_values", { run: runs[1], key: "trail", version: 1 }],
        ["steps", { run_id: runs[1], superstep: 2, id: `${runs[1]}:2:tick` }],
      ],
    );
    assert.deepEqual(
      parsed.runs.map((r) => r.id),
      [runs[0]],
    );
    assert.deepEqual(
      parsed.unreadable.map((u) => u.run),
      [runs[1]],
    );
    assert.deepEqual(listing(path.dirname(file)), before, "inspect reads only");
  });
});
