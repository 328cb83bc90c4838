import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { openCaseFile } from "../../src/casefile/index";
import { cliPath, runCli, tempDir } from "./helpers";

/**
 * A reader that goes away early (`casefile ... | head -1`): the command ends quietly with 141, as
 * a Unix tool killed by SIGPIPE does, never a stack; a run under way stops at its next superstep
 * boundary on the record, the case file whole and resumable. Real pipes to a spawned CLI.
 */

// 100 supersteps of 20 ms: a run still under way when the test closes its output.
const TICKS = `import { code, defineWorkflow, edge, z } from "casefile";
export default defineWorkflow({
  name: "ticks",
  version: 1,
  state: { n: z.number() },
  start: "tick",
  executors: {
    tick: code({
      owns: ["n"],
      run: async (ctx) => {
        await new Promise((r) => setTimeout(r, 20));
        const n = (ctx.state.n ?? 0) + 1;
        ctx.write("n", n);
        return n;
      },
    }),
  },
  edges: [edge("tick", "tick", { when: (n) => (n as number) < 100 })],
});
`;

interface Closed {
  code: number | null;
  signal: NodeJS.Signals | null;
  firstLine: string;
  stderr: string;
}

/**
 * Spawns the CLI and closes the read end of `which` (stdout after its first line, or stderr at
 * once), collecting the other stream until the process exits.
 */
function spawnAndClose(args: string[], which: "stdout" | "stderr", env: NodeJS.ProcessEnv = {}): Promise<Closed> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cliPath, ...args], { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    let firstLine = "";
    child.on("error", reject);
    if (which === "stderr") child.stderr.destroy();
    else child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    child.stdout.on("data", (d: Buffer) => {
      out += d.toString();
      const nl = out.indexOf("\n");
      if (which === "stdout" && nl >= 0 && !firstLine) {
        firstLine = out.slice(0, nl);
        child.stdout.destroy();
      }
    });
    child.on("exit", (code, signal) => resolve({ code, signal, firstLine, stderr: err }));
  });
}

describe("CLI output closed early (a pipe to head)", function () {
  this.timeout(120_000);
  let dir: string;
  let workflow: string;
  before(() => {
    dir = tempDir("casefile-pipes-");
    workflow = path.join(dir, "ticks.ts");
    writeFileSync(workflow, TICKS);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("a run whose stdout closes after the first event stops on the record at a superstep boundary, quietly, and resumes", async () => {
    const caseFile = path.join(dir, "ticks.casefile");
    const r = await spawnAndClose(["run", workflow, "--case-file", caseFile], "stdout", { CASEFILE_EVENTS: "jsonl" });
    assert.equal(JSON.parse(r.firstLine).type, "run_started", "the first line was the run's first event");
    assert.equal(r.stderr, "", "nothing printed about the closed pipe: no stack, no INTERNAL");
    assert.deepEqual([r.code, r.signal], [141, null], "exit 141, as a process killed by SIGPIPE reports in a shell");

    const store = await openCaseFile(caseFile, { readOnly: true });
    let latest;
    try {
      assert.deepEqual(store.warnings, [], "the case file reopens whole (no torn journal tail)");
      const [run] = store.listRuns();
      assert.equal(run!.status, "stopped", "the run stopped on the record");
      assert.equal(store.listEvents({ runId: run!.id }).filter((e) => e.type === "run_stopped").length, 1, "with its run_stopped event");
      latest = store.latestCheckpoint(run!.id)!;
      assert.ok(latest.superstep >= 1 && latest.superstep < 100, `stopped early, after whole supersteps: ${latest.superstep}`);
      assert.equal(store.readValues(latest.keys).n, latest.superstep, "every superstep on the record was committed whole");
    } finally {
      store.close();
    }
    const resumed = await runCli(["resume", caseFile, "--checkpoint", latest.id]);
    assert.equal(resumed.code, 0, resumed.stderr);
    assert.match(resumed.stdout, /completed at superstep 100/, "resuming runs it to the end");
  });

  it("inspect, --help and a refusal end quietly when the reader of stdout or stderr has gone", async () => {
    const caseFile = path.join(dir, "ticks.casefile");
    for (const args of [["inspect", caseFile], ["inspect", caseFile, "--json"], ["--help"]]) {
      const r = await spawnAndClose(args, "stdout");
      assert.equal(r.stderr, "", `${args.join(" ")}: nothing on stderr`);
      assert.ok(r.code === 141 || r.code === 0, `${args.join(" ")}: 141 when a line was lost, 0 when all fit in the pipe: ${r.code}`);
    }
    // An error line written to a closed stderr: no crash either.
    const refused = await spawnAndClose(["inspect", path.join(dir, "missing.casefile")], "stderr");
    assert.deepEqual([refused.code, refused.signal], [141, null], "the refusal could not be told: 141, not a crash");
  });
});
