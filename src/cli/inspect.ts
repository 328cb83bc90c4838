import type { Json, RunRecord } from "../engine/records";
import type { CaseStore } from "../engine/store";

/** What `casefile inspect` shows of a run, as plain JSON (the --json output). */
export interface RunInspection {
  id: string;
  workflow: string;
  version: number;
  status: string;
  parent?: { run: string; checkpoint: string };
  patched?: Json;
  error?: RunRecord["error"];
  outputs: Json[];
  supersteps: {
    superstep: number;
    checkpoint?: string;
    /** True for the superstep in which a person's answer was delivered. */
    answered?: boolean;
    changed: string[];
    steps: { executor: string; kind: string; status: string; durationMs: number; writes: string[]; error?: string }[];
  }[];
  verdicts: {
    superstep: number;
    executor: string;
    action?: Json;
    verdict: string;
    reason: string;
    rules: { name: string; ok: boolean; message: string }[];
  }[];
  waiting: { id: string; executor: string; title: string; options?: string[] }[];
  branches: string[];
  /** Extracts made in the run: first reads, and stale ones made again (with why). */
  extracts: { superstep: number; key: string; sourceVersion: string; stale: boolean; reason: string }[];
}

export function inspectRuns(store: CaseStore, runId?: string): RunInspection[] {
  const runs = store.listRuns();
  const chosen = runId ? runs.filter((r) => r.id === runId) : runs;
  return chosen.map((run) => {
    const checkpoints = store.listCheckpoints(run.id);
    const steps = store.listSteps(run.id);
    const bySuperstep = new Map<number, RunInspection["supersteps"][number]>();
    const at = (n: number) => {
      let s = bySuperstep.get(n);
      if (!s) bySuperstep.set(n, (s = { superstep: n, changed: [], steps: [] }));
      return s;
    };
    let prevKeys: Record<string, { version: number; run: string }> = {};
    for (const c of checkpoints) {
      const cp = store.getCheckpoint(c.id)!;
      const s = at(c.superstep);
      s.checkpoint = c.id;
      s.answered = cp.pending.some((m) => m.kind === "answer");
      s.changed = Object.keys(cp.keys).filter((k) => JSON.stringify(cp.keys[k]) !== JSON.stringify(prevKeys[k]));
      prevKeys = cp.keys;
    }
    for (const st of steps) {
      at(st.superstep).steps.push({
        executor: st.executor,
        kind: st.kind,
        status: st.status,
        durationMs: st.durationMs,
        writes: st.writes,
        error: st.error?.message,
      });
    }
    const latest = store.latestCheckpoint(run.id);
    return {
      id: run.id,
      workflow: run.workflow.name,
      version: run.workflow.version,
      status: run.status,
      parent: run.parentRunId ? { run: run.parentRunId, checkpoint: run.parentCheckpointId! } : undefined,
      patched: run.patch,
      error: run.error,
      outputs: run.outputs ?? [],
      supersteps: [...bySuperstep.values()].sort((a, b) => a.superstep - b.superstep),
      verdicts: store.listVerdicts(run.id).map((v) => ({
        superstep: v.superstep,
        executor: v.executor,
        action: (v.proposal as { action?: Json } | undefined)?.action,
        verdict: v.verdict,
        reason: v.reason,
        rules: v.rules,
      })),
      waiting: (latest?.waiting ?? []).map((w) => ({ id: w.id, executor: w.executor, title: w.prompt.title, options: w.prompt.options })),
      branches: runs.filter((r) => r.parentRunId === run.id).map((r) => r.id),
      extracts: store
        .listEvents({ runId: run.id })
        .filter((e) => e.type === "extract")
        .map((e) => {
          const d = e.data as { key: string; sourceVersion: string; stale: boolean; reason: string };
          return { superstep: e.superstep, key: d.key, sourceVersion: d.sourceVersion, stale: d.stale, reason: d.reason };
        }),
    };
  });
}

/** The human-readable form, one run after another, branches indented under their parents. */
export function formatInspection(file: string, runs: RunInspection[]): string {
  const lines: string[] = [`case file ${file}: ${runs.length} run(s)`];
  for (const r of runs) {
    lines.push("");
    const branch = r.parent ? `  branch of ${r.parent.run} at ${r.parent.checkpoint}` : "";
    lines.push(`run ${r.id}  ${r.workflow} v${r.version}  ${r.status.toUpperCase()}${branch}`);
    if (r.patched) lines.push(`  state edited before the fork: ${JSON.stringify(r.patched)}`);
    for (const s of r.supersteps) {
      const steps = s.steps.map((st) => `${st.executor} (${st.kind}, ${st.status}${st.error ? `: ${st.error}` : ""})`).join(", ");
      const changed = s.changed.length ? `  changed: ${s.changed.join(", ")}` : "";
      lines.push(
        `  superstep ${String(s.superstep).padStart(3)}  ${steps || (s.superstep === 0 ? "(start)" : s.answered ? "(a person answered the waiting request)" : "(no steps)")}${changed}`,
      );
    }
    // A first extract is routine (its key shows under "changed"); a stale one is worth a line.
    for (const x of r.extracts.filter((e) => e.stale)) {
      lines.push(`  stale extract at superstep ${x.superstep}: "${x.key}" made again: ${x.reason}`);
    }
    for (const v of r.verdicts) {
      lines.push(
        `  verdict at superstep ${v.superstep} (${v.executor}): proposed ${JSON.stringify(v.action ?? null)} -> ${v.verdict.toUpperCase()}: ${v.reason}`,
      );
    }
    for (const w of r.waiting) lines.push(`  waiting for a person: ${w.id}  "${w.title}"${w.options ? ` [${w.options.join(" | ")}]` : ""}`);
    for (const o of r.outputs) lines.push(`  output: ${JSON.stringify(o)}`);
    if (r.error) lines.push(`  error: ${r.error.code}: ${r.error.message}`);
    if (r.branches.length) lines.push(`  branches: ${r.branches.join(", ")}`);
  }
  return lines.join("\n");
}
