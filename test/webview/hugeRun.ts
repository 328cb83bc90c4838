import type { CommitBatch } from "../../src/engine/store";

/** A run of `n` supersteps, one code step each, a checkpoint after each: written as the engine would. */
export function hugeRun(runId: string, n: number): CommitBatch[] {
  const at = "2026-11-30T10:00:00.000Z";
  const workflow = { name: "bulk", version: 1, graphHash: "g-bulk" };
  const batches: CommitBatch[] = [{ runs: [{ id: runId, workflow, status: "completed", createdAt: at, updatedAt: at }] }];
  for (let i = 0; i < n; i++) {
    batches.push({
      values: [{ run: runId, key: "counter", version: i + 1, value: i }],
      steps: [
        {
          id: `${runId}-s${i}`,
          runId,
          superstep: i,
          executor: "work",
          kind: "code",
          status: "ok",
          startedAt: at,
          endedAt: at,
          durationMs: 1,
          writes: ["counter"],
          sent: 1,
        },
      ],
      checkpoints: [
        {
          v: 1,
          id: `${runId}-cp${i}`,
          runId,
          superstep: i,
          createdAt: at,
          workflow: { ...workflow, executors: ["work"] },
          keys: { counter: { version: i + 1, run: runId } },
          pending: [],
          fanIn: {},
          local: {},
          waiting: [],
        },
      ],
    });
  }
  return batches;
}
