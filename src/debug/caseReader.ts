import { openCaseFile, type SqlJsStore } from "../casefile/index";
import type { Checkpoint, Json } from "../engine/records";

/**
 * The debug session's read-only view of the case file the runner writes: opened again when the
 * runner has written since (`stale`, called on every event and whenever a runner starts or ends),
 * each checkpoint's values read once per opening. The session (session.ts) reads the Variables,
 * the Call Stack and history through it; it never writes.
 */
export class CaseReader {
  private store?: SqlJsStore;
  private fresh = false;
  private readonly values = new Map<string, Record<string, Json>>();

  /** `file` is read at each opening: the launch names it after the session is made. */
  constructor(private readonly file: () => string) {}

  /** The runner has written (or may have): the next read opens the case file again. */
  stale(): void {
    this.fresh = false;
  }

  async snapshot(): Promise<SqlJsStore> {
    if (this.store && this.fresh) return this.store;
    this.close();
    this.store = await openCaseFile(this.file(), { readOnly: true });
    this.fresh = true;
    return this.store;
  }

  /** The state stored at a checkpoint (shared: copy it before changing it). */
  valuesAt(store: SqlJsStore, cp: Checkpoint): Record<string, Json> {
    let values = this.values.get(cp.id);
    if (!values) {
      values = store.readValues(cp.keys);
      this.values.set(cp.id, values);
    }
    return values;
  }

  /** The checkpoint before this one in its run, or for a branch's first, the one it was forked from. */
  previous(store: SqlJsStore, id: string): Checkpoint | undefined {
    const cp = store.getCheckpoint(id);
    return cp?.parentId ? store.getCheckpoint(cp.parentId) : undefined;
  }

  /** The verdict or rejection a proposal got in this superstep, said in a line; undefined when accepted. */
  async rejectedAt(runId: string, superstep: number): Promise<string | undefined> {
    const store = await this.snapshot();
    const verdict = store.listVerdicts(runId).find((v) => v.superstep === superstep && v.verdict !== "accepted");
    if (verdict) return `${verdict.executor}: proposal ${verdict.verdict}: ${verdict.reason}`;
    const call = store.listAgentCalls(runId).find((c) => c.superstep === superstep && c.rejection);
    return call ? `${call.executor}: proposal rejected: ${call.rejection!.code}: ${call.rejection!.message}` : undefined;
  }

  close(): void {
    this.store?.close();
    this.store = undefined;
    this.values.clear();
  }
}
