import assert from "node:assert/strict";
import { copyFileSync, readdirSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import path from "node:path";
import { openCaseFile } from "../../src/casefile/index";
import type { RunnerToHost } from "../../src/protocol/runner";
import { PrestartedRunner, startRunner } from "../../src/runner/client";
import { root, runnerPath, tempDir } from "./helpers";

/**
 * The runner the editor keeps ready between Runs (src/runner/client.ts, PrestartedRunner, as
 * src/extension/runSessions.ts uses it): it runs the next command in the process started ahead,
 * with the same messages as a runner forked then; one started for another environment is not
 * used; and a second Run after the workflow, or a file it imports, was edited runs the edited
 * code, not the cached bundle of the first (src/runner/bundleCache.ts). Uses dist/runner.js.
 */

async function until(cond: () => boolean, what: string, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe("prestarted runner", function () {
  this.timeout(120_000);
  let dir: string;
  let env: NodeJS.ProcessEnv;
  const spares: PrestartedRunner[] = [];
  const prestart = (e = env): PrestartedRunner => {
    const s = PrestartedRunner.start({ runnerPath, env: e, cwd: dir });
    spares.push(s);
    return s;
  };

  beforeEach(() => {
    dir = tempDir("casefile-prestarted-");
    env = { ...process.env, CASEFILE_CACHE_DIR: path.join(tempDir("casefile-prestarted-cache-")) };
  });
  afterEach(() => {
    for (const s of spares.splice(0)) s.dispose();
    rmSync(dir, { recursive: true, force: true });
    rmSync(env.CASEFILE_CACHE_DIR!, { recursive: true, force: true });
  });

  /** Runs the workflow to the end and returns the runner's messages, the pid it ran in and the final state. */
  async function run(workflowPath: string, caseFile: string, prestarted?: PrestartedRunner) {
    const messages: RunnerToHost[] = [];
    const handle = startRunner({
      runnerPath,
      command: { kind: "run", workflowPath, caseFile, input: { x: 1 } },
      env,
      cwd: dir,
      prestarted,
      onMessage: (m) => messages.push(m),
    });
    const outcome = await handle.finished;
    assert.equal(outcome.done?.status, "completed", JSON.stringify(outcome));
    const store = await openCaseFile(caseFile, { readOnly: true });
    try {
      const runId = outcome.done!.runId;
      const latest = store.latestCheckpoint(runId)!;
      return { messages, pid: handle.pid, state: store.readValues(latest.keys) };
    } finally {
      store.close();
    }
  }

  it("runs the next command in the runner started ahead, with the same messages as a new runner", async () => {
    const workflow = path.join(dir, "fourSteps.ts");
    copyFileSync(path.join(root, "test/fixtures/workflows/fourSteps.ts"), workflow);
    const cold = await run(workflow, path.join(dir, "cold.casefile"));
    const spare = prestart();
    await until(() => spare.ready, "the prestarted runner to be ready");
    const pid = spare.pid;
    const warm = await run(workflow, path.join(dir, "warm.casefile"), spare);
    assert.equal(warm.pid, pid, "the command ran in the prestarted process");
    assert.deepEqual(warm.state, { a: 2, b: 4, c: 7, total: 13 });
    assert.deepEqual(warm.state, cold.state);
    const kinds = (ms: RunnerToHost[]) => ms.map((m) => (m.type === "event" ? `event:${m.event.type}` : m.type));
    assert.deepEqual(kinds(warm.messages), kinds(cold.messages));
    assert.equal(warm.messages[0]?.type, "ready");
  });

  it("is not used for a run in another environment: a new runner runs it, and the prestarted one is stopped", async () => {
    const workflow = path.join(dir, "fourSteps.ts");
    copyFileSync(path.join(root, "test/fixtures/workflows/fourSteps.ts"), workflow);
    const spare = prestart({ ...env, OPENAI_API_KEY: "an-older-key" });
    await until(() => spare.ready, "the prestarted runner to be ready");
    const pid = spare.pid!;
    const r = await run(workflow, path.join(dir, "other.casefile"), spare);
    assert.notEqual(r.pid, pid);
    assert.deepEqual(r.state, { a: 2, b: 4, c: 7, total: 13 });
    await until(() => !alive(pid), "the unused prestarted runner to exit");
  });

  it("a second Run after the workflow and a file it imports were edited runs the edited code", async () => {
    const workflow = path.join(dir, "workflow.ts");
    const helper = path.join(dir, "helper.ts");
    const source = (label: string) => `
import { code, defineWorkflow, z } from "casefile";
import { suffix } from "./helper";
export default defineWorkflow({
  name: "edited",
  version: 1,
  state: { out: z.string() },
  start: "write",
  executors: { write: code({ owns: ["out"], run: (ctx) => ctx.write("out", "${label}" + suffix) }) },
  edges: [],
});
`;
    const save = (file: string, text: string): void => {
      writeFileSync(file, text);
      const t = (Date.now() - 60_000) / 1000; // saved a while before the Run
      utimesSync(file, t, t);
    };
    save(helper, `export const suffix = "-one";`);
    save(workflow, source("first"));
    const caseFile = path.join(dir, "workflow.casefile");
    assert.deepEqual((await run(workflow, caseFile, prestart())).state, { out: "first-one" });
    // The same again: the bundle comes from the cache.
    assert.deepEqual((await run(workflow, caseFile, prestart())).state, { out: "first-one" });
    assert.equal(readdirSync(path.join(env.CASEFILE_CACHE_DIR!, "bundles")).length, 1, "the workflow's bundle is cached");

    save(workflow, source("second"));
    assert.deepEqual((await run(workflow, caseFile, prestart())).state, { out: "second-one" });
    save(helper, `export const suffix = "-two";`);
    assert.deepEqual((await run(workflow, caseFile, prestart())).state, { out: "second-two" });
  });
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
