/**
 * `node test/mutation/explain.mjs <file> <line> <mutator> "<why>"`: records that the survivor(s)
 * of <file> at <line> made by <mutator> are equivalent, in test/mutation/explained.json, with the
 * replacement, the code replaced and the whole source line it is on, read from the committed
 * reports (so the entry still matches when lines move, and only that line's mutant). Several survivors on the line with that mutator are all explained.
 */
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";

const argv = process.argv.slice(2);
const k = argv.indexOf("--killed-by");
const killedBy = k >= 0 ? argv.splice(k, 2)[1] : undefined;
const [file, line, mutator, reason] = argv;
const why = killedBy ? undefined : reason;
if (!file || !line || !mutator || (!why && !killedBy)) {
  console.error('usage: node test/mutation/explain.mjs <file> <line> <mutator> ("<why>" | --killed-by "<test>")');
  process.exit(2);
}
const DIR = "test/mutation/incremental";
const EXPLAINED = "test/mutation/explained.json";
const explained = JSON.parse(readFileSync(EXPLAINED, "utf8"));
let added = 0;
for (const name of readdirSync(DIR).filter((f) => f.endsWith(".json"))) {
  const report = JSON.parse(readFileSync(path.join(DIR, name), "utf8")).files[file];
  if (!report) continue;
  const lines = report.source.split("\n");
  for (const m of report.mutants) {
    if (m.location.start.line !== Number(line) || m.mutatorName !== mutator) continue;
    if (m.status !== "Survived" && m.status !== "NoCoverage") continue;
    const { start, end } = m.location;
    const code =
      start.line === end.line
        ? lines[start.line - 1].slice(start.column - 1, end.column - 1)
        : [lines[start.line - 1].slice(start.column - 1), ...lines.slice(start.line, end.line - 1), lines[end.line - 1].slice(0, end.column - 1)].join("\n");
    const source = lines[start.line - 1].trim();
    const entry = { file, mutator, replacement: m.replacement, code, source, ...(killedBy ? { killedBy } : { why }) };
    if (explained.some((e) => e.file === file && e.mutator === mutator && e.replacement === m.replacement && e.code === code && e.source === source))
      continue;
    explained.push(entry);
    added++;
  }
}
if (!added) {
  console.error(`no unexplained survivor of ${file} at line ${line} by ${mutator} in ${DIR}`);
  process.exit(1);
}
writeFileSync(EXPLAINED, JSON.stringify(explained, null, 1) + "\n");
console.log(`explained ${added} survivor(s) of ${file}:${line} ${mutator}`);
