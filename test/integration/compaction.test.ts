import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import path from "node:path";
import { journalPath, lockPath, openCaseFile } from "../../src/casefile/index";
import type { RunnerToHost } from "../../src/protocol/runner";
import { startRunner } from "../../src/runner/client";
import { cliPath, root, runCli, runnerPath, tempDir } from "./helpers";

/**
 * The case file a real SQLite client (/usr/bin/sqlite3) opens is the whole case once the CLI or
 * the editor's runner exited, however the run ended; a killed run's tail is in the journal,
 * reported by `inspect` and folded in by `casefile compact`.
 */

const endings = path.join(root, "test/fixtures/workflows/endings.ts");
const hooks = path.join(__dirname, "killHooks.cjs");

function sqlite(file: string, sql: string): string {
  return execFileSync("sqlite3", [file, sql], { encoding: "utf8" }).trim();
}

function dump(file: string): string {
  return execFileSync("sqlite3", [file, ".dump"], { encoding: "utf8" });
}

function journalBytes(file: string): number {
  return existsSync(journalPath(file)) ? statSync(journalPath(file)).size : 0;
}

/** The process exited cleanly: nothing is left beside the file but an empty journal. */
function assertWhole(file: string): void {
  assert.equal(journalBytes(file), 0, "the journal is folded in");
  assert.ok(!existsSync(lockPath(file)), "no lock left");
  assert.ok(!existsSync(file + ".tmp"), "no temp file left");
}

interface InspectJson {
  runs: { id: string; status: string; supersteps: unknown[] }[];
  journal: { uncompactedSupersteps: number; uncompactedRecords: number };
}

async function inspectJson(file: string): Promise<InspectJson> {
  const r = await runCli(["inspect", file, "--json"]);
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout) as InspectJson;
}

describe("case file after the process exits: what sqlite3 sees", function () {
  this.timeout(120_000);
  let dir: string;
  before(() => {
    dir = tempDir("casefile-compaction-");
  });

  const cases = [
    { end: "completed", code: 0, status: "completed", events: ["run_started", "checkpoint", "checkpoint", "run_completed"] },
    { end: "waiting", code: 0, status: "waiting", events: ["run_started", "checkpoint", "request_waiting", "checkpoint", "run_waiting"] },
    { end: "failed", code: 1, status: "failed", events: ["run_started", "checkpoint", "step_failed", "run_failed"] },
  ] as const;
  for (const c of cases) {
    it(`casefile run to ${c.end}: sqlite3 .dump shows the run, its checkpoints, state values and events`, async () => {
      const file = path.join(dir, `${c.end}.casefile`);
      const r = await runCli(["run", endings, "--case-file", file, "--input", JSON.stringify({ end: c.end })]);
      assert.equal(r.code, c.code, r.stderr);
      const runId = /run (run-\w+) /.exec(r.stdout)![1]!;
      assertWhole(file);
      const d = dump(file);
      assert.match(d, new RegExp(`INSERT INTO runs VALUES\\('${runId}',NULL,'${c.status}'`));
      assert.match(d, new RegExp(`INSERT INTO checkpoints VALUES\\('${runId}:1','${runId}',1,`));
      assert.match(d, new RegExp(`INSERT INTO state_values VALUES\\('${runId}','n',1,'\\{[^']*"value":1\\}'\\)`));
      const types = sqlite(file, "SELECT type FROM events ORDER BY seq").split("\n");
      for (const t of c.events) assert.ok(types.includes(t), `event ${t} in ${types.join(",")}`);
      assert.equal(types.at(-1), c.events.at(-1));
      // inspect (which replays the journal) and sqlite3 (which cannot) see the same case
      const j = await inspectJson(file);
      assert.deepEqual(j.journal, { uncompactedSupersteps: 0, uncompactedRecords: 0 });
      const store = await openCaseFile(file, { readOnly: true });
      try {
        assert.equal(Number(sqlite(file, "SELECT count(*) FROM checkpoints")), store.listCheckpoints(runId).length);
        assert.equal(Number(sqlite(file, "SELECT count(*) FROM events")), store.listEvents().length);
        assert.equal(Number(sqlite(file, "SELECT count(*) FROM steps")), store.listSteps(runId).length);
      } finally {
        store.close();
      }
    });
  }

  it("a run whose engine threw (an edge condition): the CLI's one-line error, and sqlite3 still sees what was committed", async () => {
    const file = path.join(dir, "threw.casefile");
    const r = await runCli(["run", endings, "--case-file", file, "--input", '{"end":"threw"}']);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /condition of edge "count->finish" threw: the route out of count failed on purpose/);
    assertWhole(file);
    const types = sqlite(file, "SELECT type FROM events ORDER BY seq").split("\n");
    assert.equal(types[0], "run_started");
    assert.equal(sqlite(file, "SELECT count(*) FROM runs"), "1");
    const j = await inspectJson(file);
    assert.equal(j.journal.uncompactedRecords, 0);
    assert.equal(Number(sqlite(file, "SELECT count(*) FROM events")), types.length);
  });

  it("Ctrl-C on casefile run: the run ends stopped at the end of its superstep, on the record, and the file is whole", async () => {
    const file = path.join(dir, "interrupted.casefile");
    const child = spawn(
      process.execPath,
      [cliPath, "run", endings, "--case-file", file, "--input", JSON.stringify({ end: "slow", steps: 200, delayMs: 20 })],
      { env: { ...process.env, CASEFILE_EVENTS: "jsonl" }, stdio: ["ignore", "pipe", "pipe"] },
    );
    let stdout = "";
    let stderr = "";
    let interrupted = false;
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.stdout.on("data", (d: Buffer) => {
      stdout += d.toString();
      // Once a few supersteps are durable, as a person would press Ctrl-C mid-run.
      if (!interrupted && (stdout.match(/"type":"checkpoint"/g) ?? []).length >= 3) interrupted = child.kill("SIGINT");
    });
    const code = await new Promise<number | null>((resolve) => child.on("exit", (c) => resolve(c)));
    assert.equal(code, 1, `a stopped run exits 1: ${stderr}`);
    assert.match(stderr, /casefile: SIGINT: stopping the run at the end of this superstep/);
    assert.match(stdout, /run run-\w+ stopped at superstep \d+/);
    assertWhole(file);
    assert.equal(sqlite(file, "SELECT status FROM runs"), "stopped", "sqlite3 sees the run stopped, not running");
    assert.equal(sqlite(file, "SELECT type FROM events ORDER BY seq DESC LIMIT 1"), "run_stopped");
    const n = Number(sqlite(file, "SELECT max(superstep) FROM checkpoints"));
    assert.ok(n >= 3 && n < 200, `stopped part way, at superstep ${n}`);
  });

  it("casefile respond and resume compact too", async () => {
    const file = path.join(dir, "waiting.casefile");
    const requestId = sqlite(file, "SELECT json_extract(data, '$.waiting[0].id') FROM checkpoints ORDER BY superstep DESC LIMIT 1");
    const r = await runCli(["respond", file, "--request", requestId, "--answer", '{"decision":"approve"}']);
    assert.equal(r.code, 0, r.stderr);
    assertWhole(file);
    assert.equal(sqlite(file, "SELECT status FROM runs"), "completed");
    assert.equal(sqlite(file, "SELECT type FROM events ORDER BY seq DESC LIMIT 1"), "run_completed");

    const failed = path.join(dir, "failed.casefile");
    const again = await runCli(["resume", failed, "--checkpoint", sqlite(failed, "SELECT id FROM checkpoints WHERE superstep = 1")]);
    assert.equal(again.code, 1, "the step fails again");
    assertWhole(failed);
    assert.equal(sqlite(failed, "SELECT count(*) FROM events WHERE type = 'run_failed'"), "2");
  });

  it("the editor's runner process: a completed run and a stopped one are whole in the file when it exits", async () => {
    for (const [name, stop] of [
      ["runner-done.casefile", false],
      ["runner-stopped.casefile", true],
    ] as const) {
      const file = path.join(dir, name);
      const messages: RunnerToHost[] = [];
      const handle = startRunner({
        runnerPath,
        command: {
          kind: "run",
          workflowPath: endings,
          caseFile: file,
          input: stop ? { end: "slow", steps: 200, delayMs: 20 } : { end: "completed" },
        },
        onMessage: (m) => {
          messages.push(m);
          if (stop && m.type === "event" && m.event.type === "checkpoint" && m.event.superstep === 3) handle.control("stop");
        },
      });
      const outcome = await handle.finished;
      assert.equal(outcome.exitCode, 0);
      const done = messages.find((m) => m.type === "done") as Extract<RunnerToHost, { type: "done" }>;
      assert.equal(done.status, stop ? "stopped" : "completed");
      assertWhole(file);
      assert.equal(sqlite(file, "SELECT status FROM runs"), done.status);
      assert.equal(sqlite(file, "SELECT type FROM events ORDER BY seq DESC LIMIT 1"), stop ? "run_stopped" : "run_completed");
      const checkpoints = Number(sqlite(file, "SELECT count(*) FROM checkpoints"));
      if (stop) assert.ok(checkpoints >= 4 && checkpoints < 201, `${checkpoints} checkpoints: stopped after superstep 3`);
      else assert.equal(checkpoints, 3);
    }
  });
});

describe("a run killed before it could compact", function () {
  this.timeout(120_000);

  /** Starts `casefile run` on the slow ending; resolves once it reported `n` durable checkpoints. */
  function slowRun(file: string, n: number, env: NodeJS.ProcessEnv = {}) {
    const child = spawn(
      process.execPath,
      ["--require", hooks, cliPath, "run", endings, "--case-file", file, "--input", '{"end":"slow","steps":400,"delayMs":25}'],
      { env: { ...process.env, CASEFILE_EVENTS: "jsonl", ...env }, stdio: ["ignore", "pipe", "pipe"] },
    );
    let checkpoints = 0;
    let stderr = "";
    const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()));
    const reached = new Promise<void>((resolve, reject) => {
      let buf = "";
      child.stdout.on("data", (d: Buffer) => {
        buf += d.toString("utf8");
        const lines = buf.split("\n");
        buf = lines.pop()!;
        for (const l of lines)
          if (l.startsWith("{") && (JSON.parse(l) as { type: string }).type === "checkpoint" && ++checkpoints === n) resolve();
      });
      child.stderr.on("data", (d: Buffer) => {
        stderr += d.toString("utf8");
        if (stderr.includes("KILLTEST-PAUSE")) resolve();
      });
      void exited.then(() => reject(new Error(`the run exited before ${n} checkpoints: ${stderr}`)));
    });
    return { child, reached, exited, checkpoints: () => checkpoints };
  }

  it("inspect reports the journalled supersteps; compact is refused while the run lives, then folds them; sqlite3 sees them", async () => {
    const file = path.join(tempDir("casefile-killed-"), "slow.casefile");
    const run = slowRun(file, 6);
    await run.reached;
    const refused = await runCli(["compact", file]);
    assert.equal(refused.code, 3);
    assert.match(refused.stderr, /^casefile: CASE_FILE_LOCKED: .*slow\.casefile is locked by pid \d+/m);
    run.child.kill("SIGKILL");
    await run.exited;
    const reported = run.checkpoints();

    assert.ok(existsSync(lockPath(file)) && journalBytes(file) > 0, "the kill left its lock and its journal");
    assert.equal(sqlite(file, "SELECT count(*) FROM checkpoints"), "0", "sqlite3 sees only the database file, which lacks them");
    const j = await inspectJson(file);
    const n = j.journal.uncompactedSupersteps;
    assert.ok(n >= reported, `${n} journalled supersteps, at least the ${reported} the run reported`);
    assert.equal(j.runs[0]!.supersteps.length, n, "inspect shows the journalled history itself");
    const text = await runCli(["inspect", file]);
    assert.match(text.stdout, new RegExp(`^${n} supersteps are in the journal, not yet compacted`, "m"));

    const c = await runCli(["compact", file]);
    assert.equal(c.code, 0, c.stderr);
    assert.match(
      c.stdout,
      new RegExp(
        `^compacted .*slow\\.casefile: folded ${j.journal.uncompactedRecords} journal records \\(${n} supersteps\\) into the database$`,
        "m",
      ),
    );
    assert.match(c.stdout, /^database \d+ -> \d+ bytes; journal [1-9]\d* -> 0 bytes$/m);
    assert.match(c.stderr, /^warning: took over a stale lock on .*slow\.casefile left by pid \d+/m);
    assertWhole(file);
    assert.equal(Number(sqlite(file, "SELECT count(*) FROM checkpoints")), n);
    assert.equal(sqlite(file, "SELECT status FROM runs"), "running", "the killed run stays unfinished, for resume");

    const after = await inspectJson(file);
    assert.deepEqual(after.journal, { uncompactedSupersteps: 0, uncompactedRecords: 0 });
    assert.doesNotMatch((await runCli(["inspect", file])).stdout, /in the journal, not yet compacted/);
    const nothing = await runCli(["compact", file]);
    assert.equal(nothing.code, 0);
    assert.match(nothing.stdout, /^nothing to compact: /);
  });

  it("a compaction killed before its rename leaves a .tmp that the next writer removes and reports, never using it", async () => {
    const file = path.join(tempDir("casefile-killed-"), "slow.casefile");
    // A tiny compaction threshold makes the run compact as it goes; the hook holds the first after the one that created the file (the 2nd) before its rename.
    const run = slowRun(file, 1_000_000, { CASEFILE_COMPACT_AT_BYTES: "1", KILLTEST_HOOK: "rename", KILLTEST_HOOK_AT: "2" });
    await run.reached;
    run.child.kill("SIGKILL");
    await run.exited;
    assert.ok(existsSync(file + ".tmp"), "the kill left the compaction's temp file");
    const before = await inspectJson(file);

    const c = await runCli(["compact", file]);
    assert.equal(c.code, 0, c.stderr);
    assert.match(
      c.stderr,
      /^warning: removed .*slow\.casefile\.tmp \(\d+ bytes\) left by a compaction that was stopped before its rename/m,
    );
    assert.match(c.stderr, /^warning: took over a stale lock/m);
    assertWhole(file);
    assert.equal(Number(sqlite(file, "SELECT count(*) FROM checkpoints")), before.runs[0]!.supersteps.length, "every superstep is there");
  });
});
