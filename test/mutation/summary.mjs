/**
 * `node test/mutation/summary.mjs [--write] [report.json | mutants.jsonl]...`: the mutation score
 * per file and overall, with each survivor (line, mutator, replacement, the code it replaced) and
 * how many mutants did not count, and the files of src/engine and src/casefile no report holds.
 *
 * A survivor judged equivalent (no test can tell it from the code) is explained in
 * test/mutation/explained.json: an entry names the file, the mutator, the replacement, the code
 * replaced and the source line it is on (so it still matches when lines move) and says why. Each survivor is printed with
 * its explanation or as UNEXPLAINED; an explanation that matches no survivor is printed as stale.
 * An entry with `killedBy` instead of `why` is a survivor of a run older than the test that now
 * kills it (explain.mjs --killed-by): the score is printed with and without them.
 * `--write` also writes the same text to test/mutation/report.md. `--prune` drops the stale
 * explanations from explained.json (survivors a later run killed, or code since rewritten); only
 * over every committed report, never over a partial run's.
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
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";

const DIR = "test/mutation/incremental";
const write = process.argv.includes("--write");
const prune = process.argv.includes("--prune");
const args = process.argv.slice(2).filter((a) => a !== "--write" && a !== "--prune");
if (prune && args.length) {
  console.error("summary: --prune reads every committed report; give it no report of its own");
  process.exit(2);
}
/** When a report was committed (seconds; uncommitted: now): of two reports of one file, the later wins. */
function committedAt(file) {
  try {
    const out = execFileSync("git", ["log", "-1", "--format=%ct", "--", file], { encoding: "utf8" }).trim();
    const uncommitted = execFileSync("git", ["status", "--porcelain", "--", file], { encoding: "utf8" }).trim();
    return out && !uncommitted ? Number(out) : Date.now() / 1000;
  } catch {
    return 0;
  }
}
const sources = args.length
  ? args
  : readdirSync(DIR)
      .filter((f) => f.endsWith(".json"))
      .map((f) => path.join(DIR, f))
      .map((f) => ({ f, at: committedAt(f) }))
      .sort((a, b) => a.at - b.at)
      .map((x) => x.f);

/** The code a mutant replaced, from the report's copy of the source. */
function codeAt(source, loc) {
  if (!source) return undefined;
  const lines = source.split("\n");
  const { start, end } = loc;
  if (start.line === end.line) return lines[start.line - 1]?.slice(start.column - 1, end.column - 1);
  return [lines[start.line - 1]?.slice(start.column - 1), ...lines.slice(start.line, end.line - 1), lines[end.line - 1]?.slice(0, end.column - 1)].join("\n");
}

/** @type {Map<string, {line: number, mutator: string, replacement: string, status: string, code?: string}[]>} */
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
  for (const [file, { mutants, source: code }] of Object.entries(JSON.parse(text).files))
    byFile.set(
      file,
      mutants.map((m) => ({
        line: m.location.start.line,
        mutator: m.mutatorName,
        replacement: m.replacement,
        status: m.status,
        code: codeAt(code, m.location),
        source: code?.split("\n")[m.location.start.line - 1]?.trim(),
      })),
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

/** @type {{file: string, mutator: string, replacement: string, code: string, why: string}[]} */
const explained = JSON.parse(readFileSync("test/mutation/explained.json", "utf8"));
const used = new Set();
function explanation(file, m) {
  const i = explained.findIndex(
    (e) =>
      e.file === file &&
      e.mutator === m.mutator &&
      e.replacement === m.replacement &&
      (m.code === undefined || (e.code === m.code && e.source === m.source)),
  );
  if (i < 0) return undefined;
  used.add(i);
  return explained[i];
}

const out = [];
const all = score([...byFile.values()].flat());
let unexplained = 0;
let survivors = 0;
let sinceKilled = 0;
const body = [];
for (const [f, list] of [...byFile].sort(([a], [b]) => a.localeCompare(b))) {
  const s = score(list);
  body.push(`${f}: ${pct(s)} of ${s.detected + s.undetected} (${list.length} mutants; not counted: ${others(s.other)})`);
  for (const m of list.filter((x) => UNDETECTED.has(x.status)).sort((a, b) => a.line - b.line)) {
    survivors++;
    const e = explanation(f, m);
    if (!e) unexplained++;
    if (e?.killedBy) sinceKilled++;
    const code = m.code === undefined ? "" : ` (was ${JSON.stringify(m.code).slice(0, 80)})`;
    body.push(`  ${m.status} line ${m.line} ${m.mutator}: ${JSON.stringify(m.replacement).slice(0, 100)}${code}`);
    body.push(
      !e ? "    UNEXPLAINED" : e.killedBy ? `    since killed by: ${e.killedBy} (the recorded run predates it)` : `    equivalent: ${e.why}`,
    );
  }
}
const expected = ["src/engine", "src/casefile"].flatMap((d) =>
  readdirSync(d, { recursive: true })
    .filter((f) => f.endsWith(".ts"))
    .map((f) => path.join(d, f)),
);
const missing = expected.filter((f) => !byFile.has(f)).sort();
out.push(
  `${byFile.size} files; score ${pct(all)} (${all.detected} detected, ${all.undetected} undetected; not counted: ${others(all.other)})`,
  `survivors: ${survivors}: killed since by a newer test ${sinceKilled}, equivalent ${survivors - unexplained - sinceKilled}, unexplained ${unexplained}` +
    `; counting the ones killed since: ${((100 * (all.detected + sinceKilled)) / (all.detected + all.undetected)).toFixed(2)}%`,
  `files of src/engine and src/casefile in no report: ${missing.length ? missing.join(", ") : "none"}`,
  ...body,
);
for (const [i, e] of explained.entries())
  if (!used.has(i) && !prune) out.push(`stale explanation (no such survivor): ${e.file} ${e.mutator} ${JSON.stringify(e.replacement)} (was ${JSON.stringify(e.code)})`);
console.log(out.join("\n"));
if (write) writeFileSync("test/mutation/report.md", "# Mutation report (node test/mutation/summary.mjs --write)\n\n```\n" + out.join("\n") + "\n```\n");
if (prune) {
  const kept = explained.filter((_, i) => used.has(i));
  writeFileSync("test/mutation/explained.json", JSON.stringify(kept, null, 1) + "\n");
  console.log(`pruned ${explained.length - kept.length} stale explanation(s); ${kept.length} kept`);
}
