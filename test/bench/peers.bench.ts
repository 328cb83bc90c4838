/**
 * Casefile against LangGraph.js 1.x, side by side in one process on one machine: engine overhead,
 * checkpoint growth, resume and open (issue 6). Each scenario runs the same graph on both
 * runtimes (test/bench/peers/graphs.ts) and the table gives medians over repetitions with the
 * ratio ours/theirs. Absolute times are this machine's at this moment; the ratios, measured side
 * by side in the same run, are what to read. No test asserts any of these times.
 *
 * Run: npm run bench            (npx tsx test/bench/peers.bench.ts)
 *      npx tsx test/bench/peers.bench.ts overhead resume    (only some scenarios)
 * Writes test/bench/results/peers.json and compares with the one it replaces.
 */
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { changeLines, machine, peerVersions, sourceState, table, writeResults } from "./peers/report";
import type { Results } from "./peers/report";
import { FULL, SCENARIOS, runScenarios } from "./peers/run";
import type { Scenario } from "./peers/run";

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const unknown = args.filter((a) => !(SCENARIOS as readonly string[]).includes(a));
  if (unknown.length) throw new Error(`unknown scenario(s) ${unknown.join(", ")}; scenarios: ${SCENARIOS.join(", ")}`);
  const only = args.length ? (args as Scenario[]) : SCENARIOS;
  const started = Date.now();
  const loadAvgAtStart = os.loadavg();
  const dir = mkdtempSync(path.join(os.tmpdir(), "casefile-peers-"));
  const log = (m: string): void => console.error(m);
  let rows;
  try {
    rows = await runScenarios(FULL, dir, log, only);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const results: Results = {
    at: new Date().toISOString(),
    machine: machine(loadAvgAtStart),
    versions: peerVersions(),
    source: sourceState(),
    sizes: { ...FULL },
    durationS: (Date.now() - started) / 1000,
    rows,
  };
  console.log(
    `\nCasefile vs LangGraph.js, medians (${results.machine.cpus} CPUs, load average ${loadAvgAtStart.map((x) => x.toFixed(1)).join(" ")} at start)`,
  );
  for (const l of table(rows)) console.log(l);
  if (results.source)
    console.log(
      `source: ${results.source.commit.slice(0, 10)}${results.source.uncommittedInSrc.length ? `, with uncommitted changes in ${results.source.uncommittedInSrc.join(", ")}` : ""}`,
    );
  // A partial run (some scenarios only) is printed but does not replace the full results.
  if (only.length === SCENARIOS.length) {
    const written = writeResults(path.join(__dirname, "results"), results);
    if (written.previous && written.changes) for (const l of changeLines(written.previous, written.changes, rows)) console.log(l);
    console.log(`\nwrote ${path.relative(process.cwd(), written.file)} (${results.durationS.toFixed(0)} s)`);
  } else {
    console.log(`\n(${only.join(", ")} only: results file not written; ${results.durationS.toFixed(0)} s)`);
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
