import assert from "node:assert/strict";
import { copyFileSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { startErp, type ErpServer, type ErpWrite } from "../../../examples/erp/server";
import { SqlJsStore } from "../../../src/casefile/sqlJsStore";
import type { AgentReplay } from "../../../src/engine/task";
import { Engine, type EngineOptions, type RunResult } from "../../../src/engine/engine";
import type { EventRecord, IntentConflict, IntentRecord, Json } from "../../../src/engine/records";
import { formatInspection, inspectCaseFile } from "../../../src/cli/inspect";
import { lookups, model, provider, refundWorkflow } from "./helpers/refundWorkflow";

/**
 * A branch reaching an effect whose idempotency key another run of the case holds. The workflow
 * decides a refund (a loader reads the claim, a model proposes an amount, a commit step accepts
 * it) and posts it to the ERP stand-in on loopback, which answers a repeated idempotency key with
 * the first refund: exactly the silent adoption the comparison exists to prevent. Every test runs
 * on a case file on disk, closed and reopened between commands as the CLI would.
 */

describe("effects on branches: a fork never silently takes over a different effect", () => {
  let dir: string;
  let file: string;
  let erp: ErpServer;
  let wf = refundWorkflow(() => erp.url);

  beforeEach(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "casefile-fork-effects-"));
    file = path.join(dir, "refund.casefile");
    erp = await startErp({ dataDir: path.join(dir, "erp") });
    model.amount = 60;
    wf = refundWorkflow(() => erp.url);
    Object.assign(lookups, { count: 0, down: false });
  });
  afterEach(async () => {
    await erp.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** One command on the case file: opened, run, closed, as a CLI invocation does. */
  async function command(
    at: string,
    go: (engine: Engine, store: SqlJsStore) => Promise<RunResult>,
    opts: EngineOptions = {},
  ): Promise<RunResult & { logs: string[] }> {
    const store = await SqlJsStore.open(at, { create: true });
    const logs: string[] = [];
    try {
      const result = await go(new Engine(wf, store, { provider, log: (m) => logs.push(m), ...opts }), store);
      return { ...result, logs };
    } finally {
      store.close();
    }
  }

  async function read<T>(at: string, f: (store: SqlJsStore) => T): Promise<T> {
    const store = await SqlJsStore.open(at, { readOnly: true });
    try {
      return f(store);
    } finally {
      store.close();
    }
  }

  const checkpoint = (runId: string, superstep: number) => `${runId}:${superstep}`;
  const refundsPosted = (): ErpWrite[] => (erp.snapshot().log ?? []).filter((w) => w.collection === "refunds");

  /** The root run: refunds 60 and completes. Returns its run id and its intent as recorded. */
  async function parentRefunds60(): Promise<{ runId: string; intent: IntentRecord }> {
    const root = await command(file, (e) => e.run());
    assert.equal(root.status, "completed");
    const intent = await read(file, (s) => s.listIntents({ runId: root.runId }));
    assert.equal(intent.length, 1);
    assert.equal(intent[0]!.status, "done");
    assert.equal(refundsPosted().length, 1);
    return { runId: root.runId, intent: intent[0]! };
  }

  /** What a user checks after an identical branch: done with the parent's reference, reused, no new refund. */
  async function assertReused(branch: RunResult, parent: { runId: string; intent: IntentRecord }): Promise<void> {
    assert.equal(branch.status, "completed", branch.error?.message);
    assert.notEqual(branch.runId, parent.runId);
    const { mine, parentNow, events, state } = await read(file, (s) => ({
      mine: s.listIntents({ runId: branch.runId }),
      parentNow: s.listIntents({ runId: parent.runId }),
      events: s.listEvents({ runId: branch.runId }),
      state: s.readValues(s.latestCheckpoint(branch.runId)!.keys),
    }));
    assert.equal(mine.length, 1, "the branch keeps its own record of the key");
    const [intent] = mine;
    assert.equal(intent!.status, "done");
    assert.equal(intent!.key, parent.intent.id, "under the case's key");
    assert.equal(intent!.id, `${parent.intent.id}@${branch.runId}`);
    assert.deepEqual(intent!.reference, parent.intent.reference, "the parent's reference, reused");
    assert.deepEqual(intent!.reusedFrom, { run: parent.runId, intent: parent.intent.id });
    const reused = events.find((e) => e.type === "intent" && (e.data as { what: string }).what === "reused");
    assert.deepEqual((reused?.data as { reusedFrom?: Json }).reusedFrom, { run: parent.runId, intent: parent.intent.id });
    assert.deepEqual(state.refund, parent.intent.reference, "the step's done() got the reused reference");
    assert.deepEqual(parentNow, [parent.intent], "the parent's record is untouched");
    assert.equal(refundsPosted().length, 1, "the ERP got no second refund");
    // casefile inspect says so, in --json and in text
    const shown = await read(file, (s) => inspectCaseFile(s, file, branch.runId));
    assert.deepEqual(shown.runs[0]!.intents[0]!.reusedFrom, { run: parent.runId, intent: parent.intent.id });
    assert.match(
      formatInspection(file, shown.runs),
      new RegExp(`reused the reference of run ${parent.runId}'s identical intent ${parent.intent.id}; not acted again`),
    );
  }

  /** What a user checks after a different branch: stopped for replanning with both intents, no call, parent untouched. */
  async function assertRefused(branch: RunResult, parent: { runId: string; intent: IntentRecord }, proposedAmount: number) {
    assert.equal(branch.status, "needs_replanning");
    assert.equal(branch.error?.code, "EFFECT_CONFLICT");
    assert.equal(branch.error?.executor, "refund");
    const key = parent.intent.key ?? parent.intent.id;
    assert.ok(
      branch.error!.message.includes(`idempotency key ${key} is held by run ${parent.runId}'s ${parent.intent.status} intent`),
      "expected: branch.error!.message.includes(`idempotency key ${key} is held by run ${parent.runId}'s ${parent.intent.status} intent`)",
    );
    assert.ok(
      branch.error!.message.includes(`payload.amount: 60 (run ${parent.runId}) vs ${proposedAmount} (this branch)`),
      branch.error!.message,
    );
    const { run, mine, parentNow, events, state } = await read(file, (s) => ({
      run: s.getRun(branch.runId)!,
      mine: s.listIntents({ runId: branch.runId }),
      parentNow: s.listIntents({ runId: parent.runId }),
      events: s.listEvents({ runId: branch.runId }),
      state: s.readValues(s.latestCheckpoint(branch.runId)!.keys),
    }));
    assert.equal(run.status, "needs_replanning", "the case file says so after reopening");
    assert.equal(run.error?.code, "EFFECT_CONFLICT");
    assert.equal(mine.length, 1);
    const intent = mine[0]!;
    assert.equal(intent.status, "needs_replanning");
    assert.equal(intent.reference, undefined, "the parent's reference is not adopted");
    assert.equal(intent.reusedFrom, undefined);
    assert.equal(intent.error?.code, "EFFECT_CONFLICT");
    const conflict = intent.conflict as IntentConflict;
    assert.deepEqual(conflict.existing, {
      run: parent.runId,
      intent: parent.intent.id,
      status: parent.intent.status,
      action: "refund",
      target: "erp:refunds",
      payload: { claim: "C-7", amount: 60, currency: "EUR" },
      reliesOn: { claimAmount: 80 },
      reference: parent.intent.reference ?? null,
    });
    assert.deepEqual(conflict.proposed, {
      action: "refund",
      target: "erp:refunds",
      payload: { claim: "C-7", amount: proposedAmount, currency: "EUR" },
      reliesOn: { claimAmount: 80 },
    });
    assert.deepEqual(conflict.differs, [{ path: "payload.amount", existing: 60, proposed: proposedAmount }]);
    const refusedEvent = events.find((e) => e.type === "intent" && (e.data as { what: string }).what === "refused: conflict");
    assert.deepEqual((refusedEvent?.data as { conflict?: Json }).conflict, conflict as unknown as Json, "the event carries both intents");
    const last = events[events.length - 1] as EventRecord;
    assert.equal(last.type, "run_needs_replanning");
    assert.equal((last.data as { error: { code: string } }).error.code, "EFFECT_CONFLICT");
    assert.equal(state.refund, undefined, "no refund in the branch's state");
    assert.deepEqual(parentNow, [parent.intent], "the parent's record is untouched");
    assert.equal(refundsPosted().length, 1, "the ERP got no call from the branch");
    assert.equal(erp.snapshot().collections.refunds!["REF-1001"]!.data.amount, 60);
    // casefile inspect shows both intents side by side, in --json and in text
    const shown = await read(file, (s) => inspectCaseFile(s, file, branch.runId));
    assert.deepEqual(shown.runs[0]!.intents[0]!.conflict?.differs, conflict.differs);
    const text = formatInspection(file, shown.runs);
    assert.match(text, new RegExp(`not acted, not adopted: key ${key} is held by run ${parent.runId}'s ${parent.intent.status} intent`));
    assert.match(text, new RegExp(`payload\\.amount +60 +${proposedAmount}\\n`));
  }

  describe("a branch from an older checkpoint (the model asked again)", () => {
    it("identical decision: reuses the parent's reference, records from which run, calls the ERP once", async () => {
      const parent = await parentRefunds60();
      const branch = await command(file, (e) => e.resume(checkpoint(parent.runId, 1)));
      await assertReused(branch, parent);
      assert.ok(
        branch.logs.some((l) => l.includes(`identical to run ${parent.runId}'s intent ${parent.intent.id}; reused its reference`)),
        `no log said the intent was reused; logs: ${JSON.stringify(branch.logs)}`,
      );
      // Mutant killed: a done holder's reference looked up in the ERP again instead of taken from its record.
      assert.equal(lookups.count, 0, "the parent's done intent has its reference: no lookup by key");
    });

    it("different decision: stops the branch for replanning with both intents, no call on the ERP", async () => {
      const parent = await parentRefunds60();
      model.amount = 25;
      const branch = await command(file, (e) => e.resume(checkpoint(parent.runId, 1)));
      await assertRefused(branch, parent, 25);
      // Resuming the refused branch again (a new branch from its checkpoint) is refused the same way.
      const again = await command(file, (e) => e.resume(checkpoint(branch.runId, 3)));
      assert.equal(again.error?.code, "EFFECT_CONFLICT");
      assert.equal(refundsPosted().length, 1);
    });
  });

  describe("an edit-then-fork (--patch)", () => {
    it("a patch that leaves the refund as it was: reused", async () => {
      const parent = await parentRefunds60();
      const branch = await command(file, (e) => e.resume(checkpoint(parent.runId, 3), { patch: { decision: { amount: 60 } } }));
      await assertReused(branch, parent);
    });

    it("a patch to 25 after the parent refunded 60: refused, both intents recorded, the parent untouched", async () => {
      const parent = await parentRefunds60();
      const branch = await command(file, (e) => e.resume(checkpoint(parent.runId, 3), { patch: { decision: { amount: 25 } } }));
      await assertRefused(branch, parent, 25);
    });
  });

  describe("a replay of the agent step, with the effect after it", () => {
    async function replayOptions(mode: AgentReplay["mode"]): Promise<EngineOptions> {
      const call = await read(file, (s) => s.listAgentCalls()[0]!);
      return { replay: { executor: "propose", mode, recorded: call } };
    }

    it("replayed with the recorded answer: reused", async () => {
      const parent = await parentRefunds60();
      const branch = await command(file, (e) => e.resume(checkpoint(parent.runId, 1), { branch: true }), await replayOptions("recorded"));
      await assertReused(branch, parent);
    });

    it("replayed live, the model now answering 25: refused", async () => {
      const parent = await parentRefunds60();
      model.amount = 25;
      const branch = await command(file, (e) => e.resume(checkpoint(parent.runId, 1), { branch: true }), await replayOptions("live"));
      await assertRefused(branch, parent, 25);
    });
  });

  describe("the parent's intent left open by a crash", () => {
    /** Runs the root run and copies the case file at the test hook's pause: what a SIGKILL there leaves. */
    async function crashedParent(
      hook: "BEFORE" | "AFTER",
      onPause?: () => Promise<void>,
    ): Promise<{ runId: string; intent: IntentRecord }> {
      const crashed = path.join(dir, "crashed.casefile");
      let paused: Promise<void> | undefined;
      let said = "";
      await command(file, (e) => e.run(), {
        hooks: hook === "AFTER" ? { pauseAfterActMs: 30 } : { pauseBeforeActMs: 30 },
        log: (m) => {
          if (!m.includes("test hook")) return;
          said = m;
          copyFileSync(file, crashed);
          if (existsSync(`${file}.journal`)) copyFileSync(`${file}.journal`, `${crashed}.journal`);
          paused = onPause?.();
        },
      });
      await paused;
      // The hook says which window the copy landed in (the kill test waits for these words).
      const window = hook === "AFTER" ? "; pausing 30 ms before recording the reference" : " open; pausing 30 ms before acting";
      assert.ok(said.endsWith(window), `the test hook said: ${said}`);
      file = crashed;
      const runs = await read(file, (s) => s.listRuns());
      const intent = await read(file, (s) => s.listIntents({ runId: runs[0]!.id }));
      assert.equal(intent[0]!.status, "open");
      return { runId: runs[0]!.id, intent: intent[0]! };
    }

    it("acted, reference not recorded: a different branch is refused (no reconcile-and-adopt); an identical one reuses by the key", async () => {
      const parent = await crashedParent("AFTER");
      // The original process's refund of 60 reached the ERP before the crash.
      assert.equal(refundsPosted().length, 1);
      const refused = await command(file, (e) => e.resume(checkpoint(parent.runId, 3), { patch: { decision: { amount: 25 } } }));
      await assertRefused(refused, parent, 25);

      const same = await command(file, (e) => e.resume(checkpoint(parent.runId, 3), { patch: { decision: { amount: 60 } } }));
      assert.equal(same.status, "completed");
      const mine = await read(file, (s) => s.listIntents({ runId: same.runId }));
      assert.deepEqual(mine[0]!.reusedFrom, { run: parent.runId, intent: parent.intent.id });
      assert.deepEqual(mine[0]!.reference, { id: "REF-1001", amount: 60 }, "found by the key in the ERP");
      assert.deepEqual(
        await read(file, (s) => s.listIntents({ runId: parent.runId })),
        [parent.intent],
        "the parent's record is still its own",
      );

      // The parent, resumed, resolves its own open intent by the key: still one refund.
      const resumed = await command(file, (e, s) => e.resume(s.latestCheckpoint(parent.runId)!.id));
      assert.equal(resumed.runId, parent.runId);
      assert.equal(resumed.status, "completed");
      assert.equal((await read(file, (s) => s.listIntents({ runId: parent.runId })))[0]!.status, "done");
      assert.equal(refundsPosted().length, 1);
    });

    it("opened, not acted: a different branch is refused; an identical one acts once under the key, and the parent then finds it", async () => {
      const dataDir = path.dirname(erp.dataFile);
      // While the parent's intent is open, the ERP goes away: its action never lands, as if the process died there.
      const parent = await crashedParent("BEFORE", () => erp.close());
      erp = await startErp({ dataDir });
      assert.equal(refundsPosted().length, 0);

      const refused = await command(file, (e) => e.resume(checkpoint(parent.runId, 3), { patch: { decision: { amount: 25 } } }));
      assert.equal(refused.error?.code, "EFFECT_CONFLICT");
      assert.ok(
        refused.error!.message.includes(`run ${parent.runId}'s open intent`),
        "expected: refused.error!.message.includes(`run ${parent.runId}'s open intent`)",
      );
      assert.equal(refundsPosted().length, 0, "no call on the ERP");

      const same = await command(file, (e) => e.resume(checkpoint(parent.runId, 3), { patch: { decision: { amount: 60 } } }));
      assert.equal(same.status, "completed");
      const mine = (await read(file, (s) => s.listIntents({ runId: same.runId })))[0]!;
      assert.equal(mine.reusedFrom, undefined, "nothing to reuse: the key was not in the ERP, so the branch acted");
      assert.equal(refundsPosted().length, 1);
      assert.equal(refundsPosted()[0]!.idempotencyKey, parent.intent.id, "under the case's key");

      const resumed = await command(file, (e, s) => e.resume(s.latestCheckpoint(parent.runId)!.id));
      assert.equal(resumed.status, "completed");
      const parentNow = (await read(file, (s) => s.listIntents({ runId: parent.runId })))[0]!;
      assert.equal(parentNow.status, "done");
      assert.deepEqual(parentNow.reference, mine.reference, "the parent found the one refund by its key");
      assert.equal(refundsPosted().length, 1, "still one refund");
    });
    /** The whats of a run's intent events, in order ("opened", "done", "reused", ...). */
    const intentSteps = (runId: string) =>
      read(file, (s) => s.listEvents({ runId }).flatMap((e) => (e.type === "intent" ? [(e.data as { what: string }).what] : [])));

    it("opened, not acted: the identical branch says the key is not in the ERP and records no reuse before acting", async () => {
      const dataDir = path.dirname(erp.dataFile);
      const parent = await crashedParent("BEFORE", () => erp.close());
      erp = await startErp({ dataDir });
      const same = await command(file, (e) => e.resume(checkpoint(parent.runId, 3), { patch: { decision: { amount: 60 } } }));
      assert.equal(same.status, "completed", same.error?.message);
      const said = `run ${parent.runId}'s identical intent ${parent.intent.id} is open and its key is not in erp:refunds; acting`;
      assert.ok(
        same.logs.some((l) => l.includes(said)),
        `no log said why it acted; logs: ${JSON.stringify(same.logs)}`,
      );
      assert.deepEqual(await intentSteps(same.runId), ["opened", "done"], "acted once; no 'reused' record with a null reference first");
    });

    it("the ERP's lookup down: an identical branch of an open intent fails in reconcile, naming the effect, and does not act", async () => {
      const parent = await crashedParent("AFTER");
      lookups.down = true;
      const same = await command(file, (e) => e.resume(checkpoint(parent.runId, 3), { patch: { decision: { amount: 60 } } }));
      assert.equal(same.status, "failed");
      assert.equal(same.error?.code, "EFFECT_FAILED");
      assert.ok(
        same.error!.message.includes(
          `effect "refund" (intent ${parent.intent.id}@${same.runId}, refund on erp:refunds) failed in reconcile: ERP idempotency lookup unavailable (503)`,
        ),
        same.error!.message,
      );
      assert.equal(refundsPosted().length, 1, "the branch did not act while the outcome was unknown");
    });

    it("no lookup by key: an identical branch of an open intent acts under the same key, warning that the target must honour it", async () => {
      const parent = await crashedParent("AFTER");
      wf = refundWorkflow(() => erp.url, { reconcile: false });
      const same = await command(file, (e) => e.resume(checkpoint(parent.runId, 3), { patch: { decision: { amount: 60 } } }));
      assert.equal(same.status, "completed", same.error?.message);
      const warnings = await read(file, (s) =>
        s.listEvents({ runId: same.runId }).flatMap((e) => (e.type === "warning" ? [(e.data as { message: string }).message] : [])),
      );
      const said = `run ${parent.runId}'s identical intent ${parent.intent.id} was left open and "refund" has no reconcile: acting with the same idempotency key, which the target must honour`;
      assert.ok(
        warnings.some((w) => w.includes(said)),
        `no warning said so; warnings: ${JSON.stringify(warnings)}`,
      );
      assert.equal(refundsPosted().length, 1, "the ERP answered the repeated key with its first refund");
      assert.equal(refundsPosted()[0]!.idempotencyKey, parent.intent.id);
    });

    it("no lookup by key: the parent resumed acts again under its key, and warns so on its log", async () => {
      const parent = await crashedParent("AFTER");
      wf = refundWorkflow(() => erp.url, { reconcile: false });
      const resumed = await command(file, (e, s) => e.resume(s.latestCheckpoint(parent.runId)!.id));
      assert.equal(resumed.status, "completed", resumed.error?.message);
      const said = `warning: intent ${parent.intent.id} (refund on erp:refunds) was left open and "refund" has no reconcile: acting again with the same idempotency key, which the target must honour`;
      assert.ok(resumed.logs.includes(said), `no warning said so; logs: ${JSON.stringify(resumed.logs)}`);
      assert.equal(refundsPosted().length, 1, "the ERP answered the repeated key with its first refund");
    });

    it("resolving the parent's open intent on resume, act sees a context that logs under its name and says it is a resume", async () => {
      const dataDir = path.dirname(erp.dataFile);
      const parent = await crashedParent("BEFORE", () => erp.close());
      erp = await startErp({ dataDir });
      wf = refundWorkflow(() => erp.url, { whileResolving: (ctx) => ctx.log(`resolving ${ctx.executor} at ${ctx.superstep}`) });
      const resumed = await command(file, (e, s) => e.resume(s.latestCheckpoint(parent.runId)!.id));
      assert.equal(resumed.status, "completed", resumed.error?.message);
      assert.ok(resumed.logs.includes("[refund] resolving refund at 4"), `act's log line: ${JSON.stringify(resumed.logs)}`);
      assert.equal(refundsPosted().length, 1);
    });

    for (const call of ["write", "send", "yield", "setLocal"] as const) {
      it(`resolving on resume, act calling ctx.${call} fails naming the call and says to stage writes in done()`, async () => {
        const dataDir = path.dirname(erp.dataFile);
        const parent = await crashedParent("BEFORE", () => erp.close());
        erp = await startErp({ dataDir });
        wf = refundWorkflow(() => erp.url, {
          whileResolving: (ctx) => (ctx[call] as (...a: unknown[]) => void)("refund", { id: "x", amount: 1 }),
        });
        const resumed = await command(file, (e, s) => e.resume(s.latestCheckpoint(parent.runId)!.id));
        assert.equal(resumed.error?.code, "EFFECT_FAILED");
        const said = `effect "refund" called ctx.${call} while its open intent was being resolved on resume; stage writes in done()`;
        assert.ok(resumed.error!.message.endsWith(said), resumed.error!.message);
        assert.equal(refundsPosted().length, 0, "nothing was posted");
      });
    }
  });

  it("holds both ways round: the root run, resumed after a branch refunded 25, refuses its own 60", async () => {
    // The model is down at first: the root run fails at the agent step, before any effect.
    const root = await command(file, (e) => e.run(), {
      provider: { name: "down", complete: () => Promise.reject(new Error("model down")) },
    });
    assert.equal(root.status, "failed");
    model.amount = 25;
    const branch = await command(file, (e) => e.resume(checkpoint(root.runId, 1), { branch: true }));
    assert.equal(branch.status, "completed");
    assert.equal(refundsPosted().length, 1);
    const held = (await read(file, (s) => s.listIntents({ runId: branch.runId })))[0]!;

    model.amount = 60;
    const resumed = await command(file, (e, s) => e.resume(s.latestCheckpoint(root.runId)!.id));
    assert.equal(resumed.runId, root.runId, "the failed root run continues");
    assert.equal(resumed.status, "needs_replanning");
    assert.equal(resumed.error?.code, "EFFECT_CONFLICT");
    assert.ok(resumed.error!.message.includes(`payload.amount: 25 (run ${branch.runId}) vs 60 (this run)`), resumed.error!.message);
    assert.deepEqual(await read(file, (s) => s.listIntents({ runId: branch.runId })), [held], "the branch's record is untouched");
    assert.equal(refundsPosted().length, 1, "one refund, of 25");
    assert.equal(erp.snapshot().collections.refunds!["REF-1001"]!.data.amount, 25);
  });
});
