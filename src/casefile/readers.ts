import path from "node:path";
import { SqlJsStore } from "./sqlJsStore";

/**
 * Read-only stores kept open for the case files a person is looking at, so that a click in the
 * Run Inspector reads memory instead of opening the file again (reading it into sql.js,
 * `quick_check`, replaying the journal: most of a second at 100 MB). Before every read the store
 * is refreshed (`SqlJsStore.refresh`: two stats when nothing changed, the new journal records
 * when a writer appended, a fresh open when a compaction replaced the file), so a read never
 * sees less than a fresh open would.
 *
 * The extension host holds one of these (src/extension/caseFiles.ts): the inspector keeps its
 * case file while its panel is open; other readers (the tree views) borrow a kept store or open
 * and close one for the read. Reads of one case file run one at a time, in the order asked.
 */
export class CaseFileReaders {
  private readonly kept = new Map<string, Entry>();

  /** Keeps `file`'s store open between reads until `drop`. Idempotent. */
  keep(file: string): void {
    const key = path.resolve(file);
    if (!this.kept.has(key)) this.kept.set(key, { store: undefined, queue: Promise.resolve() });
  }

  /** Closes `file`'s kept store once the reads already asked for have run. */
  drop(file: string): void {
    const key = path.resolve(file);
    const entry = this.kept.get(key);
    if (!entry) return;
    this.kept.delete(key);
    void entry.queue.then(() => entry.store?.close());
  }

  isKept(file: string): boolean {
    return this.kept.has(path.resolve(file));
  }

  /**
   * Runs `read` on the case file as it is on disk now: on its kept store, refreshed first, or on
   * a store opened for this read and closed after it. A refresh or open that fails (the file is
   * damaged, or gone) throws as open does, and a kept store is opened afresh on the next read.
   */
  read<T>(file: string, read: (store: SqlJsStore) => T): Promise<T> {
    const key = path.resolve(file);
    const entry = this.kept.get(key);
    if (!entry) return readOnce(key, read);
    const result = entry.queue.then(async () => {
      try {
        if (entry.store) await entry.store.refresh();
        else entry.store = await SqlJsStore.open(key, { readOnly: true });
      } catch (e) {
        entry.store?.close();
        entry.store = undefined;
        throw e;
      }
      return read(entry.store);
    });
    entry.queue = result.then(
      () => undefined,
      () => undefined,
    );
    return result;
  }

  /** Closes every kept store: called when the extension deactivates. */
  dispose(): void {
    for (const file of [...this.kept.keys()]) this.drop(file);
  }
}

interface Entry {
  store: SqlJsStore | undefined;
  /** The last read asked for: the next one starts after it. */
  queue: Promise<void>;
}

async function readOnce<T>(file: string, read: (store: SqlJsStore) => T): Promise<T> {
  const store = await SqlJsStore.open(file, { readOnly: true });
  try {
    return read(store);
  } finally {
    store.close();
  }
}
