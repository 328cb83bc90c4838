import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import path from "node:path";
import { runKillTest, WINDOWS, type KillTestReport } from "./killHarness";

/**
 * The kill test: supplier-onboarding cases run by the real CLI in child processes, SIGKILLed at
 * random moments and inside the windows that matter (mid journal append, mid compaction, between
 * an action and its recorded reference), resumed until they finish; then checked against the ERP
 * stand-in's data and the case files. CI size by default; `npm run kill-test:large` sets
 * KILL_TEST_CASES / KILL_TEST_KILLS for at least 1,000 kills.
 */
describe("kill test: effects happen exactly once across SIGKILLs", function () {
  const cases = Number(process.env.KILL_TEST_CASES ?? 50);
  const kills = Number(process.env.KILL_TEST_KILLS ?? 200);
  // Each child costs about 1.5 s of CPU (CLI bundle, sql.js, esbuild, the tokenizer table when
  // the agent step runs); on a busy 2-core machine 200 kills took 12 minutes. Generous, so that
  // a slow runner fails on an invariant, never on the clock.
  this.timeout(Math.max(20 * 60_000, kills * 6_000));
  let report: KillTestReport;

  before(async function () {
    const cli = path.resolve(__dirname, "../../dist/cli.js");
    assert.ok(existsSync(cli), `${cli} is missing: run \`npm run build\` first (npm test does)`);
    report = await runKillTest({
      cases,
      kills,
      concurrency: Number(process.env.KILL_TEST_CONCURRENCY ?? 4),
      seed: process.env.KILL_TEST_SEED ? Number(process.env.KILL_TEST_SEED) : undefined,
      log: (l) => console.log(`      ${l}`),
    });
    console.log(
      `      ${report.cases} cases, ${report.attempts} child processes, ${report.kills} kills in ${(report.durationMs / 1000).toFixed(1)} s; ` +
        `by window ${JSON.stringify(report.killsByWindow)}; evidence ${JSON.stringify(report.evidence)}; ` +
        `${report.checkpointsReported} checkpoints reported; final ${JSON.stringify(report.finalStatuses)}`,
    );
  });

  it(`killed at least ${kills} times over at least ${cases} cases, in every kill window`, () => {
    assert.ok(report.cases >= cases, `${report.cases} cases`);
    assert.ok(report.kills >= kills, `${report.kills} kills`);
    for (const w of WINDOWS) assert.ok(report.killsByWindow[w] > 0, `no kill landed in window "${w}"`);
  });

  it("the kills left the traces of the windows they were aimed at", () => {
    assert.ok(report.evidence.tornTails > 0, "some kill tore a journal record");
    assert.ok(report.evidence.compactionTempLeft > 0, "some kill left a compaction's temp file");
    assert.ok(report.evidence.openIntentsAfterKill > 0, "some kill left an intent open");
    assert.ok(report.evidence.reconciledFound > 0, "some open intent was found by its key on resume");
    assert.ok(report.evidence.reconciledNotFound > 0, "some open intent was not found, and acted on, on resume");
  });

  it("every case reached a final status exactly once; no effect twice; no reported checkpoint lost; every file opens", () => {
    assert.deepEqual(report.violations, []);
    assert.deepEqual(report.finalStatuses, { completed: report.cases });
    assert.equal(report.onboarded + report.rejected, report.cases);
    assert.ok(report.rejected > 0 && report.onboarded > 0, "both the onboarding path and the rejection path ran");
  });
});
