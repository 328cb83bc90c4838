/**
 * `node test/mutation/summary.mjs [report.json | mutants.jsonl]...`: the mutation score per file
 * and overall, with each survivor (line, mutator, replacement) and how many mutants did not count.
 *
 * Without arguments it reads every committed incremental report (test/mutation/incremental/*.json,
 * one per target list of `npm run test:mutation`); where two hold the same source file, the one
 * written last wins. Give it reports/mutation/mutants.jsonl (the mutant-log reporter's lines) for
 * a run stopped before its end.
 *
 * The score is Stryker's: killed and timed-out mutants over all that compiled and ran (survived
 * and uncovered ones count against it). CompileError (refused by the TypeScript checker: a mutant
 * that could not be written in this code), RuntimeError and Ignored do not count.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";

const DIR = "test/mutation/incremental";
const args = process.argv.slice(2);
const sources = args.length
  ? args
  : readdirSync(DIR)
      .filter((f) => f.endsWith(".json"))
      .map((f) => path.join(DIR, f))
      .sort((a, b) => statSync(a).mtimeMs - statSync(b).mtimeMs);

/** @type {Map<string, {line: number, mutator: string, replacement: string, status: string}[]>} */
const byFile = new Map();
for (const source of sources) {
  const text = readFileSync(source, "utf8");
  if (source.endsWith(".jsonl")) {
    for (const m of text
      .split("\n")
      .filter((l) => l.trim() !== "")
      .map((l) => JSON.parse(l)))
      byFile.set(m.file, [...(byFile.get(m.file) ?? []), m]);
    continue;
  }
  for (const [file, { mutants }] of Object.entries(JSON.parse(text).files))
    byFile.set(
      file,
      mutants.map((m) => ({ line: m.location.start.line, mutator: m.mutatorName, replacement: m.replacement, status: m.status })),
    );
}

const DETECTED = new Set(["Killed", "Timeout"]);
const UNDETECTED = new Set(["Survived", "NoCoverage"]);
function score(list) {
  const detected = list.filter((m) => DETECTED.has(m.status)).length;
  const undetected = list.filter((m) => UNDETECTED.has(m.status)).length;
  const other = {};
  for (const m of list) if (!DETECTED.has(m.status) && !UNDETECTED.has(m.status)) other[m.status] = (other[m.status] ?? 0) + 1;
  return { detected, undetected, other, score: detected + undetected ? (100 * detected) / (detected + undetected) : NaN };
}
const pct = (s) => (Number.isNaN(s.score) ? "-" : `${s.score.toFixed(2)}%`);
const others = (o) =>
  Object.entries(o)
    .map(([k, v]) => `${v} ${k}`)
    .join(", ") || "none";

const all = score([...byFile.values()].flat());
console.log(
  `${byFile.size} files; score ${pct(all)} (${all.detected} detected, ${all.undetected} undetected; not counted: ${others(all.other)})`,
);
for (const [f, list] of [...byFile].sort(([a], [b]) => a.localeCompare(b))) {
  const s = score(list);
  console.log(`${f}: ${pct(s)} of ${s.detected + s.undetected} (${list.length} mutants; not counted: ${others(s.other)})`);
  for (const m of list.filter((x) => UNDETECTED.has(x.status)).sort((a, b) => a.line - b.line))
    console.log(`  ${m.status} line ${m.line} ${m.mutator}: ${JSON.stringify(m.replacement).slice(0, 100)}`);
}
