import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import path from "node:path";
import { createDatabase, pgCluster } from "../helpers/pgCluster";
import { PG_WINDOWS, runPgKillTest, type PgKillTestReport } from "./pgKillHarness";

/**
 * The kill test on a Postgres store: `casefile worker` processes SIGKILLed at the kill windows
 * (and inside a Postgres commit) and the server crashed once with `pg_ctl restart -m immediate`,
 * over supplier-onboarding cases; then no effect twice in the ERP stand-in's data, every case
 * final exactly once, no reported checkpoint lost. CI size by default; `npm run
 * kill-test:postgres` runs 200 cases and at least 120 kills (PG_KILL_TEST_CASES, _KILLS, _WORKERS, _SEED).
 */
describe("kill test on Postgres: workers SIGKILLed and the server crashed, effects exactly once", function () {
  const cases = Number(process.env.PG_KILL_TEST_CASES ?? 40);
  const kills = Number(process.env.PG_KILL_TEST_KILLS ?? 30);
  const workers = Number(process.env.PG_KILL_TEST_WORKERS ?? 4);
  // Each worker process costs about a second of CPU to start (CLI bundle, esbuild of the workflow):
  // generous, so that a slow runner fails on an invariant, never on the clock.
  this.timeout(Math.max(15 * 60_000, kills * 10_000));
  let report: PgKillTestReport;

  before(async function () {
    const cli = path.resolve(__dirname, "../../dist/cli.js");
    assert.ok(existsSync(cli), `${cli} is missing: run \`npm run build\` first (npm test does)`);
    report = await runPgKillTest({
      cluster: pgCluster(),
      url: createDatabase("kill"),
      cases,
      kills,
      workers,
      seed: process.env.PG_KILL_TEST_SEED ? Number(process.env.PG_KILL_TEST_SEED) : undefined,
      log: (l) => console.log(`      ${l}`),
    });
    console.log(
      `      ${report.cases} cases, ${report.workerProcesses} worker processes, ${report.kills} kills in ${(report.durationMs / 1000).toFixed(1)} s; ` +
        `by window ${JSON.stringify(report.killsByWindow)}; restart ${JSON.stringify(report.restart)}; ` +
        `evidence ${JSON.stringify(report.evidence)}; ${report.checkpointsReported} checkpoints reported; final ${JSON.stringify(report.finalStatuses)}`,
    );
  });

  it(`${workers} workers killed at least ${kills} times over at least ${cases} cases, in every kill window, and Postgres crashed mid-run`, () => {
    assert.ok(workers >= 4, `${workers} workers, fewer than 4`);
    assert.ok(report.cases >= cases, `${report.cases} cases`);
    assert.ok(report.kills >= kills, `${report.kills} kills`);
    for (const w of PG_WINDOWS) assert.ok(report.killsByWindow[w] > 0, `no kill landed in window "${w}"`);
    assert.ok(report.restart.done, "the server was restarted with -m immediate");
    assert.ok(report.restart.casesEndedBefore < report.cases, "the crash came while cases were still running");
    assert.ok(report.restart.reportedCheckpointsChecked > 0, "checkpoints reported before the crash were checked after it");
  });

  it("the kills left the traces of the windows they were aimed at", () => {
    assert.ok(report.evidence.openIntentsAfterKill > 0, "some kill left an intent open");
    assert.ok(report.evidence.reconciledFound > 0, "some open intent was found by its key on resume");
    assert.ok(report.evidence.reconciledNotFound > 0, "some open intent was not found, and acted on, on resume");
    assert.ok(report.evidence.storeOutages > 0, "some worker saw the store go away in the crash and went on");
  });

  it("every case reached a final status exactly once; no supplier, bank request or payment term twice; no reported checkpoint lost", () => {
    assert.deepEqual(report.violations, []);
    assert.deepEqual(report.finalStatuses, { completed: report.cases });
    assert.equal(report.onboarded + report.rejected, report.cases);
    assert.ok(report.rejected > 0 && report.onboarded > 0, "both the onboarding path and the rejection path ran");
  });
});
