import { loadSqlJs } from "../../../../src/casefile/sqlite";

/**
 * Counts the sql.js databases made and not yet closed from now until `restore`. A database never
 * closed keeps its whole file in sql.js's memory for the life of the process (the extension host
 * keeps readers open for hours). SqlJsStore takes sql.js's Database from loadSqlJs, which hands
 * every caller the same module, so the counting subclass set on that module here is the one the
 * store constructs; `restore` puts sql.js's own back.
 */
export async function trackDatabases(): Promise<{ live(): number; restore(): void }> {
  const SQL = await loadSqlJs();
  const Original = SQL.Database;
  const open = new Set<object>();
  class Counted extends Original {
    constructor(...args: ConstructorParameters<typeof Original>) {
      super(...args);
      open.add(this);
    }
    override close(): void {
      super.close();
      open.delete(this);
    }
  }
  SQL.Database = Counted;
  return {
    live: () => open.size,
    restore: () => {
      SQL.Database = Original;
    },
  };
}
