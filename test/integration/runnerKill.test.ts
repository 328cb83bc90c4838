import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import path from "node:path";
import { openCaseFile } from "../../src/casefile/index";
import { lockPath } from "../../src/casefile/index";
import { startRunner, type RunnerHandle } from "../../src/runner/client";
import type { RunnerToHost } from "../../src/protocol/runner";
import { root, runnerPath, tempDir } from "./helpers";

const counter = path.join(root, "test/fixtures/workflows/counter.ts");

/** Starts a runner on the counter workflow and collects the checkpoints it reports as durable. */
function start(command: Parameters<typeof startRunner>[0]["command"], stepMode = false) {
  const checkpoints: string[] = [];
  const messages: RunnerToHost[] = [];
  const handle: RunnerHandle = startRunner({
    runnerPath,
    command,
    stepMode,
    onMessage: (m) => {
      messages.push(m);
      if (m.type === "event" && m.event.type === "checkpoint") checkpoints.push((m.event.data as { checkpoint: string }).checkpoint);
    },
  });
  return { handle, checkpoints, messages };
}

async function until(cond: () => boolean, what: string, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe("runner process: durability and control", function () {
  this.timeout(120_000);

  it("a runner SIGKILLed mid-run loses no committed superstep, and resume completes the run", async () => {
    const dir = tempDir();
    const file = path.join(dir, "counter.casefile");
    const first = start({ kind: "run", workflowPath: counter, caseFile: file, input: { limit: 40, delayMs: 15 } });
    await until(() => first.checkpoints.length >= 12, "12 checkpoints");
    first.handle.kill("SIGKILL");
    const killed = await first.handle.finished;
    assert.equal(killed.signal, "SIGKILL");
    assert.ok(existsSync(lockPath(file)), "the killed runner left its lock behind");

    const store = await openCaseFile(file, { readOnly: true });
    const run = store.listRuns()[0]!;
    const onDisk = new Set(store.listCheckpoints(run.id).map((c) => c.id));
    for (const id of first.checkpoints) assert.ok(onDisk.has(id), `checkpoint ${id} was reported durable but is missing after the kill`);
    const latest = store.latestCheckpoint(run.id)!;
    assert.ok(latest.superstep >= first.checkpoints.length, "the file holds at least what was reported");
    assert.deepEqual(store.readValues(latest.keys), { n: latest.superstep });
    store.close();

    // resume takes over the stale lock, continues the same run from its latest checkpoint
    const second = start({ kind: "resume", caseFile: file, checkpointId: latest.id });
    const outcome = await second.handle.finished;
    assert.equal(outcome.error, undefined, JSON.stringify(outcome.error));
    assert.equal(outcome.done?.status, "completed");
    assert.equal(outcome.done?.runId, run.id);
    assert.ok(
      second.messages.some((m) => m.type === "log" && /stale lock/i.test(m.message)),
      "the stale lock was reported",
    );

    const after = await openCaseFile(file, { readOnly: true });
    const cps = after.listCheckpoints(run.id);
    assert.deepEqual(
      cps.map((c) => c.superstep),
      Array.from({ length: cps.length }, (_, i) => i),
      "supersteps are contiguous: none lost, none repeated",
    );
    assert.deepEqual(after.readValues(after.latestCheckpoint(run.id)!.keys), { n: 40, trail: [40] });
    after.close();
  });

  it("obeys pause, step, continue and stop at superstep boundaries", async () => {
    const dir = tempDir();
    const file = path.join(dir, "step.casefile");
    const r = start({ kind: "run", workflowPath: counter, caseFile: file, input: { limit: 20, delayMs: 0 } }, true);
    const paused = () => r.messages.filter((m) => m.type === "paused").length;
    await until(() => paused() === 1, "first pause");
    assert.equal(r.checkpoints.length, 0, "step mode runs nothing before the first step");
    r.handle.control("step");
    await until(() => paused() === 2, "second pause");
    assert.equal(r.checkpoints.length, 1);
    r.handle.control("step");
    await until(() => paused() === 3, "third pause");
    assert.equal(r.checkpoints.length, 2);
    r.handle.control("continue");
    await until(() => r.checkpoints.length >= 5, "running on");
    r.handle.control("stop");
    const outcome = await r.handle.finished;
    assert.equal(outcome.done?.status, "stopped");
    assert.ok(r.checkpoints.length < 21, "stopped before the end");
  });

  it("drops a malformed message from the host and keeps running", async () => {
    const dir = tempDir();
    const file = path.join(dir, "hostile.casefile");
    const r = start({ kind: "run", workflowPath: counter, caseFile: file, input: { limit: 5, delayMs: 20 } });
    await until(() => r.checkpoints.length >= 1, "first checkpoint");
    r.handle.send({ type: "control", action: "explode" } as never);
    r.handle.send({ type: "start", command: { kind: "run", workflowPath: "/etc/passwd", caseFile: file }, stepMode: false });
    const outcome = await r.handle.finished;
    assert.equal(outcome.done?.status, "completed");
    const logs = r.messages.filter((m): m is Extract<RunnerToHost, { type: "log" }> => m.type === "log").map((m) => m.message);
    assert.ok(
      logs.some((l) => /dropped a malformed message from the host/.test(l)),
      logs.join("\n"),
    );
    assert.ok(
      logs.some((l) => /dropped a second start/.test(l)),
      logs.join("\n"),
    );
  });
});
