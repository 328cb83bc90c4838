/**
 * `node test/mutation/summary.mjs [reports/mutation/mutants.jsonl]`: the mutation score so far and
 * per file, with each survivor (line, mutator, replacement), from the mutant-log reporter's lines;
 * for a run stopped before its end. The score is Stryker's: killed and timed-out mutants over all
 * that compiled and ran (survived and uncovered ones count against it).
 */
import { readFileSync } from "node:fs";

const file = process.argv[2] ?? "reports/mutation/mutants.jsonl";
const mutants = readFileSync(file, "utf8")
  .split("\n")
  .filter((l) => l.trim() !== "")
  .map((l) => JSON.parse(l));
const DETECTED = new Set(["Killed", "Timeout"]);
const UNDETECTED = new Set(["Survived", "NoCoverage"]);

function score(list) {
  const detected = list.filter((m) => DETECTED.has(m.status)).length;
  const undetected = list.filter((m) => UNDETECTED.has(m.status)).length;
  return { detected, undetected, score: detected + undetected ? (100 * detected) / (detected + undetected) : NaN };
}

const byFile = new Map();
for (const m of mutants) byFile.set(m.file, [...(byFile.get(m.file) ?? []), m]);
const all = score(mutants);
console.log(`${mutants.length} mutants tested; score ${all.score.toFixed(2)}% (${all.detected} detected, ${all.undetected} undetected)`);
for (const [f, list] of [...byFile].sort(([a], [b]) => a.localeCompare(b))) {
  const s = score(list);
  console.log(`${f}: ${Number.isNaN(s.score) ? "-" : s.score.toFixed(1) + "%"} of ${s.detected + s.undetected} (${list.length} tested)`);
  for (const m of list.filter((x) => UNDETECTED.has(x.status)).sort((a, b) => a.line - b.line))
    console.log(`  ${m.status} line ${m.line} ${m.mutator}: ${JSON.stringify(m.replacement).slice(0, 100)}`);
}
