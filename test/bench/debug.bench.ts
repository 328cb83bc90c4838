/**
 * `npm run bench:debug`: the debugger's latencies, through `casefile dap` (the built CLI) driven by
 * @vscode/debugadapter-testsupport's DebugClient, as a DAP client sees them. In one run:
 *   F5 to first stop   launch of the invoice example with a breakpoint on `propose` to the stop
 *                      before superstep 3 (three supersteps run: load from the ERP stand-in,
 *                      variance), against starting a bare `node -e 0` (the floor of any process);
 *   Next to stopped    Next at each boundary of the invoice run to the stopped event, less the
 *                      superstep's own work (its slowest step's recorded durationMs) (target < 100 ms);
 *   Step Back          on a case file of 10,000 checkpoints, Step Back to the stopped event after
 *                      the client's usual stackTrace (target < 50 ms).
 * Medians of DEBUG_BENCH_SAMPLES (default 5) sessions. Run `npm run build` first (the script does).
 */
import { execFile, execFileSync, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import type { Readable, Writable } from "node:stream";
import { DebugClient } from "@vscode/debugadapter-testsupport";
import type { DebugProtocol } from "@vscode/debugprotocol";
import { startErp } from "../../examples/erp/server";
import { invoiceSeed } from "../../examples/invoice/erpData";
import { openCaseFile } from "../../src/casefile/index";
import type { Checkpoint } from "../../src/engine/records";

const ROOT = path.resolve(__dirname, "../..");
const CLI = path.join(ROOT, "bin", "casefile.js");
const WORKFLOW = path.join(ROOT, "examples/invoice/workflow.ts");
const SAMPLES = Number(process.env.DEBUG_BENCH_SAMPLES ?? 5);
const CHECKPOINTS = 10_000;

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const ms = (n: number): string => `${n.toFixed(1)} ms`;

async function session(env: NodeJS.ProcessEnv): Promise<{ dc: DebugClient; adapter: ChildProcess; close: () => Promise<void> }> {
  const adapter = spawn(process.execPath, [CLI, "dap"], { env, stdio: ["pipe", "pipe", "inherit"] });
  const dc = new StdioClient(process.execPath, CLI, "casefile");
  dc.defaultTimeout = 120_000;
  dc.attach(adapter.stdout!, adapter.stdin!);
  return {
    dc,
    adapter,
    close: async () => {
      await Promise.race([dc.disconnectRequest({}).catch(() => {}), new Promise((r) => setTimeout(r, 10_000))]);
      adapter.kill();
    },
  };
}

async function launch(dc: DebugClient, args: Record<string, unknown>, setup: () => Promise<unknown>): Promise<void> {
  await dc.initializeRequest({ adapterID: "casefile", linesStartAt1: true, columnsStartAt1: true, pathFormat: "path" });
  await Promise.all([
    dc.waitForEvent("initialized").then(async () => {
      await setup();
      await dc.configurationDoneRequest();
    }),
    dc.launchRequest(args as DebugProtocol.LaunchRequestArguments),
  ]);
}

/** A DebugClient on the stdio of an adapter process spawned here (`node bin/casefile.js dap`: DebugClient spawns `runtime executable` only). */
class StdioClient extends DebugClient {
  attach(readable: Readable, writable: Writable): void {
    this.connect(readable, writable);
  }
}

/** What a client does on every stop: threads, the stack, the top frame's scopes. */
async function look(dc: DebugClient, threadId: number): Promise<void> {
  await dc.threadsRequest();
  const frames = (await dc.stackTraceRequest({ threadId })).body.stackFrames;
  await dc.scopesRequest({ frameId: frames[0]!.id });
}

async function main(): Promise<void> {
  execFileSync("npm", ["run", "build", "--silent"], { cwd: ROOT, stdio: "inherit" });
  const dir = mkdtempSync(path.join(os.tmpdir(), "casefile-debug-bench-"));
  const erp = await startErp({ dataDir: path.join(dir, "erp"), seed: invoiceSeed });
  const env = { ...process.env, ERP_URL: erp.url };
  try {
    // The floor: a bare Node process.
    const bare: number[] = [];
    for (let i = 0; i < SAMPLES; i++) {
      const t = performance.now();
      execFileSync(process.execPath, ["-e", "0"]);
      bare.push(performance.now() - t);
    }

    const f5: number[] = [];
    const next: number[] = [];
    const nextRaw: number[] = [];
    for (let i = 0; i < SAMPLES; i++) {
      const file = path.join(dir, `f5-${i}.casefile`);
      const s = await session(env);
      const t0 = performance.now();
      const stoppedAt = s.dc.waitForEvent("stopped");
      await launch(s.dc, { workflow: WORKFLOW, caseFile: file, input: { invoiceId: "INV-1001" } }, () =>
        s.dc.setFunctionBreakpointsRequest({ breakpoints: [{ name: "propose" }] }),
      );
      const ev = (await stoppedAt) as DebugProtocol.StoppedEvent;
      f5.push(performance.now() - t0);
      const threadId = ev.body.threadId!;
      await look(s.dc, threadId);
      // Next twice: propose (the scripted model) then decide.
      for (let k = 0; k < 2; k++) {
        const t = performance.now();
        await Promise.all([s.dc.nextRequest({ threadId }), s.dc.waitForEvent("stopped")]);
        const took = performance.now() - t;
        await look(s.dc, threadId);
        const store = await openCaseFile(file, { readOnly: true });
        const run = store.listRuns()[0]!;
        const superstep = 3 + k;
        const own = Math.max(0, ...store.listSteps(run.id, superstep).map((st) => st.durationMs));
        store.close();
        nextRaw.push(took);
        next.push(took - own);
      }
      await s.close();
    }

    // A case file of 10,000 checkpoints: the invoice run stopped at checkpoint 2, then a run of
    // 10,000 more checkpoints like it chained by parentId (made through the store, as the engine would).
    const big = path.join(dir, "big.casefile");
    // Asynchronously: the ERP stand-in answers from this process.
    await promisify(execFile)(process.execPath, [CLI, "run", WORKFLOW, "--case-file", big, "--input", '{"invoiceId":"INV-1001"}'], { env });
    const writer = await openCaseFile(big);
    const run = writer.listRuns()[0]!;
    const base = writer.getCheckpoint(`${run.id}:2`)!;
    const longRun = { ...run, id: "run-bench10k", status: "stopped" as const, outputs: [] };
    delete (longRun as { error?: unknown }).error;
    let prev: Checkpoint = { ...base, id: `${longRun.id}:0`, runId: longRun.id, superstep: 0 };
    delete prev.parentId;
    writer.commit({ runs: [longRun], checkpoints: [prev] });
    for (let from = 1; from < CHECKPOINTS; from += 1000) {
      const batch: Checkpoint[] = [];
      for (let k = from; k < Math.min(from + 1000, CHECKPOINTS); k++) {
        const cp: Checkpoint = { ...base, id: `${longRun.id}:${k}`, runId: longRun.id, superstep: k, parentId: prev.id };
        batch.push(cp);
        prev = cp;
      }
      writer.commit({ checkpoints: batch });
    }
    writer.close();

    const back: number[] = [];
    {
      const s = await session(env);
      const stoppedAt = s.dc.waitForEvent("stopped");
      await launch(s.dc, { caseFile: big, resumeFrom: { checkpoint: prev.id }, stopOnEntry: true }, async () => {});
      const ev = (await stoppedAt) as DebugProtocol.StoppedEvent;
      const threadId = ev.body.threadId!;
      await look(s.dc, threadId);
      for (let i = 0; i < Math.max(SAMPLES, 10); i++) {
        const t = performance.now();
        await Promise.all([s.dc.stepBackRequest({ threadId }), s.dc.waitForEvent("stopped")]);
        back.push(performance.now() - t);
        await look(s.dc, threadId);
      }
      const frames = (await s.dc.stackTraceRequest({ threadId })).body.stackFrames;
      if (!frames.at(-1)!.name.includes(`${longRun.id}:${CHECKPOINTS - 1 - back.length}`))
        throw new Error(`step back did not reach the expected checkpoint: ${frames.at(-1)!.name}`);
      await s.close();
    }

    const f5m = median(f5);
    const barem = median(bare);
    console.log(`debugger latencies (medians of ${SAMPLES} sessions; casefile dap over stdio)`);
    console.log(`  node -e 0                      ${ms(barem)}`);
    console.log(`  F5 to first stop (superstep 3) ${ms(f5m)}   ratio to node -e 0: ${(f5m / barem).toFixed(1)}x`);
    console.log(
      `  Next to stopped                ${ms(median(nextRaw))} in all; beyond the superstep's own work ${ms(median(next))} (target < 100 ms) ${median(next) < 100 ? "PASS" : "FAIL"}`,
    );
    console.log(
      `  Step Back, ${CHECKPOINTS} checkpoints    ${ms(median(back))} (target < 50 ms) ${median(back) < 50 ? "PASS" : "FAIL"}   [${back.map((b) => b.toFixed(0)).join(", ")}]`,
    );
  } finally {
    await erp.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e: Error) => {
  console.error(e.stack ?? e.message);
  process.exitCode = 1;
});
