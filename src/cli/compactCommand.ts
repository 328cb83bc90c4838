import { statSync } from "node:fs";
import path from "node:path";
import { journalPath, openCaseFile } from "../casefile/index";
import { CasefileError } from "../engine/errors";
import { parseOptions, type Command } from "./args";

/**
 * `casefile compact <case file>`: folds the journal into the database file, as a writer's clean
 * close does. For a case whose process was killed before it could (its history is safe in the
 * journal, and `inspect` says how many supersteps are there): afterwards any SQLite client sees
 * the whole case. Takes the lock like a writer, so it is refused (CASE_FILE_LOCKED, exit 3) while
 * a live run holds the file; a stale lock or compaction temp file is cleaned up and reported.
 */
export const compact: Command = async (args, io) => {
  const { positionals } = parseOptions(args, {});
  const caseFile = positionals[0];
  if (!caseFile || positionals.length > 1) throw new CasefileError("USAGE", "compact needs one case file");
  const file = path.resolve(caseFile);
  const dbBefore = sizeOf(file);
  const journalBefore = sizeOf(journalPath(file));
  // No compaction at open (whatever the journal's size): the counts below are then the journal's.
  const store = await openCaseFile(file, { create: false, compactAtBytes: Number.MAX_SAFE_INTEGER });
  try {
    for (const w of store.warnings) io.err(`warning: ${w}`);
    const records = store.uncompactedRecords();
    const supersteps = store.uncompactedSupersteps();
    if (records === 0) {
      io.out(`nothing to compact: the journal of ${file} holds no commit the database lacks (database ${dbBefore} bytes)`);
      return 0;
    }
    store.compact();
    io.out(
      `compacted ${file}: folded ${records} journal record${records === 1 ? "" : "s"} (${supersteps} superstep${supersteps === 1 ? "" : "s"}) into the database`,
    );
    io.out(`database ${dbBefore} -> ${sizeOf(file)} bytes; journal ${journalBefore} -> ${sizeOf(journalPath(file))} bytes`);
    return 0;
  } finally {
    store.close();
  }
};

function sizeOf(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}
