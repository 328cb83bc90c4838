import { readFileSync, writeFileSync } from "node:fs";
import { loadSqlJs } from "../../../../src/casefile/sqlite";

/** The case file's database opened with sql.js, `statements` run on it, and written back in place: damage done by hand. */
export async function tamperFile(file: string, ...statements: string[]): Promise<void> {
  const SQL = await loadSqlJs();
  const db = new SQL.Database(readFileSync(file));
  try {
    for (const s of statements) db.run(s);
    writeFileSync(file, db.export());
  } finally {
    db.close();
  }
}
