import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { rmSync } from "node:fs";
import path from "node:path";
import { startErp, type ErpServer } from "../../examples/erp/server";
import { SqlJsStore } from "../../src/casefile/sqlJsStore";
import type { IntentRecord, RunRecord } from "../../src/engine/records";
import { cliPath, root, runCli, tempDir } from "./helpers";

/**
 * Branches and effects through the real CLI, with the runner process SIGKILLed in the kill
 * test's effect windows (killHarness.ts): after the intent is recorded and before the act, and
 * after the act before its reference is recorded. After each kill the case is resumed; the ERP
 * stand-in on loopback must have seen exactly one refund per distinct amount, and a fork with a
 * different amount must still be refused, not adopted.
 */
describe("a fork never silently takes over a different effect (CLI, killed in the effect windows)", function () {
  this.timeout(120_000);
  const workflow = path.join(root, "test", "fixtures", "workflows", "refund.ts");
  const hooks = path.join(__dirname, "killHooks.cjs");
  let erp: ErpServer;
  let dir: string;
  let file: string;

  beforeEach(async () => {
    dir = tempDir("casefile-fork-effects-");
    file = path.join(dir, "refund.casefile");
    erp = await startErp({ dataDir: path.join(dir, "erp") });
  });
  afterEach(async () => {
    await erp.close();
    rmSync(dir, { recursive: true, force: true });
  });

  type Kill = "before-intent" | "before-act" | "after-act";

  /**
   * Runs the CLI as the kill harness does (`--require killHooks.cjs`, events on stdout) and
   * SIGKILLs it at the chosen moment: the fixture's hold before the refund records its intent, or
   * the effect's test-hook pauses (held 10 s, so the kill lands in the window).
   */
  async function killedAt(kill: Kill, args: string[]): Promise<void> {
    const env: NodeJS.ProcessEnv = { ...process.env, ERP_URL: erp.url, CASEFILE_EVENTS: "jsonl" };
    if (kill === "before-act") env.CASEFILE_TEST_PAUSE_BEFORE_ACT_MS = "10000";
    if (kill === "after-act") env.CASEFILE_TEST_PAUSE_AFTER_ACT_MS = "10000";
    if (kill === "before-intent") env.REFUND_HOLD_BEFORE_CHECK_MS = "10000";
    const child = spawn(process.execPath, ["--require", hooks, cliPath, ...args], { env, stdio: ["ignore", "ignore", "pipe"] });
    let err = "";
    child.stderr.on("data", (d: Buffer) => {
      err += d.toString("utf8");
      if (err.includes(kill === "before-intent" ? "hold: no intent yet" : "test hook:")) child.kill("SIGKILL");
    });
    const signal = await new Promise<NodeJS.Signals | null>((resolve) => child.on("close", (_c, s) => resolve(s)));
    assert.equal(signal, "SIGKILL", `the ${kill} kill landed (stderr: ${err.trim()})`);
  }

  async function caseFile(): Promise<{ runs: RunRecord[]; intents: IntentRecord[] }> {
    const store = await SqlJsStore.open(file, { readOnly: true });
    try {
      return { runs: store.listRuns(), intents: store.listIntents() };
    } finally {
      store.close();
    }
  }

  async function latest(runId: string): Promise<string> {
    const store = await SqlJsStore.open(file, { readOnly: true });
    try {
      return store.latestCheckpoint(runId)!.id;
    } finally {
      store.close();
    }
  }

  const cli = (args: string[]) => runCli(args, { ERP_URL: erp.url });
  const patched = (amount: number) => ["--patch", JSON.stringify({ decision: { amount } })];
  /** The refunds the ERP holds, and how many times each idempotency key was applied. */
  function erpRefunds(): { amounts: number[]; keysApplied: number[] } {
    const refunds = Object.values(erp.snapshot().collections.refunds ?? {}).map((r) => r.data.amount as number);
    const perKey = new Map<string, number>();
    for (const w of erp.snapshot().log ?? []) if (w.idempotencyKey) perKey.set(w.idempotencyKey, (perKey.get(w.idempotencyKey) ?? 0) + 1);
    return { amounts: refunds.sort(), keysApplied: [...perKey.values()] };
  }

  for (const window of ["before-act", "after-act"] as const) {
    it(`the branch's runner killed ${window}: resumed, it refunds its 25 once; an identical fork reuses it; the root's 60 is refused`, async () => {
      await killedAt("before-intent", ["run", workflow, "--case-file", file, "--input", '{"amount":60}']);
      const rootRun = (await caseFile()).runs[0]!;
      assert.deepEqual((await caseFile()).intents, [], "the root run was stopped before its effect");
      const forkPoint = `${rootRun.id}:1`;

      // Edit-then-fork: the branch decides 25, and its runner is killed in the effect window.
      await killedAt(window, ["resume", file, "--checkpoint", forkPoint, ...patched(25)]);
      const branch = (await caseFile()).runs.find((r) => r.parentRunId === rootRun.id)!;
      assert.equal((await caseFile()).intents.find((i) => i.runId === branch.id)!.status, "open", "the kill left the branch's intent open");
      assert.deepEqual(erpRefunds().amounts, window === "after-act" ? [25] : []);

      const resumed = await cli(["resume", file, "--checkpoint", await latest(branch.id)]);
      assert.equal(resumed.code, 0, resumed.stderr);
      assert.deepEqual(erpRefunds(), { amounts: [25], keysApplied: [1] }, "one refund of 25");

      // A second fork deciding the same 25 reuses the branch's reference.
      const same = await cli(["resume", file, "--checkpoint", forkPoint, ...patched(25)]);
      assert.equal(same.code, 0, same.stderr);
      assert.match(same.stderr, new RegExp(`identical to run ${branch.id}'s intent \\S+; reused its reference, not acting again`));
      const reused = (await caseFile()).intents.filter((i) => i.reusedFrom);
      assert.deepEqual(
        reused.map((i) => i.reusedFrom!.run),
        [branch.id],
      );

      // The root run, continued from its own latest checkpoint, decides 60: refused, not adopted.
      const rootAgain = await cli(["resume", file, "--checkpoint", forkPoint]);
      assert.equal(rootAgain.code, 1, "a case stopped for replanning is not a success");
      assert.match(rootAgain.stdout, /needs_replanning/);
      assert.match(rootAgain.stderr, /EFFECT_CONFLICT: .*idempotency key \S+ is held by run run-[0-9a-f]+'s done intent/);
      assert.ok(rootAgain.stderr.includes(`payload.amount: 25 (run ${branch.id}) vs 60 (this run)`), rootAgain.stderr);
      const after = await caseFile();
      assert.equal(after.runs.find((r) => r.id === rootRun.id)!.status, "needs_replanning");
      const refused = after.intents.find((i) => i.runId === rootRun.id)!;
      assert.equal(refused.status, "needs_replanning");
      assert.deepEqual(refused.conflict?.differs, [{ path: "payload.amount", existing: 25, proposed: 60 }]);
      assert.deepEqual(erpRefunds(), { amounts: [25], keysApplied: [1] }, "still exactly one refund, of 25");
    });

    it(`the root's runner killed ${window}: a fork deciding 25 is refused against the open intent; the root, resumed, refunds 60 once`, async () => {
      await killedAt(window, ["run", workflow, "--case-file", file, "--input", '{"amount":60}']);
      const rootRun = (await caseFile()).runs[0]!;
      assert.equal((await caseFile()).intents[0]!.status, "open");

      const fork = await cli(["resume", file, "--checkpoint", `${rootRun.id}:1`, ...patched(25)]);
      assert.equal(fork.code, 1);
      assert.match(fork.stderr, new RegExp(`EFFECT_CONFLICT: .*is held by run ${rootRun.id}'s open intent`));
      assert.ok(fork.stderr.includes(`payload.amount: 60 (run ${rootRun.id}) vs 25 (this branch)`), fork.stderr);
      assert.deepEqual(erpRefunds().amounts, window === "after-act" ? [60] : [], "the fork made no call");

      const resumed = await cli(["resume", file, "--checkpoint", await latest(rootRun.id)]);
      assert.equal(resumed.code, 0, resumed.stderr);
      assert.deepEqual(erpRefunds(), { amounts: [60], keysApplied: [1] }, "one refund of 60");

      // Once the root's refund is done, the fork deciding 25 is still refused.
      const again = await cli(["resume", file, "--checkpoint", `${rootRun.id}:1`, ...patched(25)]);
      assert.equal(again.code, 1);
      assert.match(again.stderr, new RegExp(`EFFECT_CONFLICT: .*is held by run ${rootRun.id}'s done intent`));
      assert.deepEqual(erpRefunds(), { amounts: [60], keysApplied: [1] });
    });
  }
});
