/** The State tab's view model: state at a checkpoint, marked against the one before, with each fact's provenance. */
import { extractProvenance, isExtractValue } from "../../engine/extracts";
import type { FactRecord, Json, Provenance } from "../../engine/records";
import type { CaseStore } from "../../engine/store";
import type { StateEntryView, StateView } from "../../protocol/webview";

/**
 * The state at the checkpoint after superstep `superstep` of a run, each key marked against the
 * checkpoint before it (for a branch's first checkpoint: the one it was forked from). Called by
 * the inspector panel as part of a superstep's details (`buildSuperstepDetail`).
 */
export function buildStateView(store: CaseStore, runId: string, superstep: number): StateView {
  const summary = store.listCheckpoints(runId, superstep)[0];
  const cp = summary ? store.getCheckpoint(summary.id) : undefined;
  if (!cp) return { absent: `No checkpoint was recorded after superstep ${superstep}.` };
  const earlier = store.latestCheckpoint(runId, superstep);
  const run = store.getRun(runId);
  const previous = earlier ? earlier : run?.parentCheckpointId !== undefined ? store.getCheckpoint(run.parentCheckpointId) : undefined;
  const values = store.readValues(cp.keys);
  const provenance = new ProvenanceIndex(store);
  const entries: StateEntryView[] = Object.keys(cp.keys)
    .sort()
    .map((key) => {
      const ref = cp.keys[key]!;
      const before = previous?.keys[key];
      const change = !previous ? null : !before ? "new" : before.version !== ref.version || before.run !== ref.run ? "changed" : null;
      return {
        key,
        change,
        value: values[key] ?? null,
        version: ref.version,
        writtenBy: ref.run,
        provenance: provenance.lookup(ref.run, key, ref.version) ?? extractedFrom(values[key]),
      };
    });
  return {
    checkpointId: cp.id,
    comparedWith: previous ? { runId: previous.runId, superstep: previous.superstep } : null,
    entries,
  };
}

/** Facts are recorded per writing run; a branch's inherited keys point into its parent's facts. */
class ProvenanceIndex {
  private readonly byRun = new Map<string, Map<string, Provenance>>();
  constructor(private readonly store: CaseStore) {}

  lookup(run: string, key: string, version: number): Provenance | null {
    let index = this.byRun.get(run);
    if (!index) {
      index = new Map();
      for (const f of this.store.listFacts(run)) index.set(`${f.key}\0${f.version}`, provenanceOf(f));
      this.byRun.set(run, index);
    }
    return index.get(`${key}\0${version}`) ?? null;
  }
}

/** An extract from a long document carries its own label: the document's source and the version it was taken from. */
function extractedFrom(value: Json | undefined): Provenance | null {
  return isExtractValue(value) ? extractProvenance(value) : null;
}

function provenanceOf(f: FactRecord): Provenance {
  return { source: f.source, sourceVersion: f.sourceVersion, readAt: f.readAt };
}
