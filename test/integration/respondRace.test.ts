import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { openCaseFile } from "../../src/casefile/index";
import { lockPath } from "../../src/casefile/lock";
import { cliPath, runCli, tempDir, type CliResult } from "./helpers";

/**
 * Two people answer one request at the same moment, from two real processes: the second waits
 * for the first's lock (the first holds it while its answer runs on) and is then refused naming
 * the first answer, rather than told the case file is locked.
 */

// The answer is followed by a step that takes a while, so the first respond holds the lock.
const SIGNOFF = `import { code, defineWorkflow, edge, request, z } from "casefile";
export default defineWorkflow({
  name: "signoff",
  version: 1,
  state: { signoff: z.string(), booked: z.boolean() },
  start: "approve",
  executors: {
    approve: request({
      owns: ["signoff"],
      prompt: () => ({ title: "Sign off 2 pallets", options: ["approve", "reject"] }),
      onAnswer: (answer, ctx) => {
        ctx.write("signoff", answer.decision);
        return answer.decision;
      },
    }),
    book: code({
      owns: ["booked"],
      run: async (ctx) => {
        await new Promise((r) => setTimeout(r, 1500));
        ctx.write("booked", true);
      },
    }),
  },
  edges: [edge("approve", "book")],
});
`;

function startCli(args: string[]): { done: Promise<CliResult> } {
  const child = spawn(process.execPath, [cliPath, ...args], { stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  return { done: new Promise((resolve) => child.on("exit", (code) => resolve({ code: code ?? -1, stdout, stderr }))) };
}

describe("two concurrent responds to one request", function () {
  this.timeout(120_000);
  let dir: string;
  before(() => (dir = tempDir("casefile-respond-race-")));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("the second waits for the first's lock, then is refused naming the first answer", async () => {
    const workflow = path.join(dir, "signoff.ts");
    const caseFile = path.join(dir, "signoff.casefile");
    writeFileSync(workflow, SIGNOFF);
    const run = await runCli(["run", workflow, "--case-file", caseFile]);
    assert.equal(run.code, 0, run.stderr);
    const store = await openCaseFile(caseFile, { readOnly: true });
    const request = store.latestCheckpoint(store.listRuns()[0]!.id)!.waiting[0]!.id;
    store.close();

    const respond = (decision: string, by: string) =>
      startCli(["respond", caseFile, "--request", request, "--answer", JSON.stringify({ decision }), "--by", by]);
    const ann = respond("approve", "ann");
    // Ben answers while Ann's respond holds the case file (its lock is there).
    while (!existsSync(lockPath(caseFile))) await new Promise((r) => setTimeout(r, 10));
    const ben = respond("reject", "ben");
    const [first, second] = await Promise.all([ann.done, ben.done]);

    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stdout, /completed/, "the first answer ran on to the end");
    assert.equal(second.code, 3, second.stdout);
    assert.doesNotMatch(second.stderr, /CASE_FILE_LOCKED/, "the second waited for the lock");
    assert.match(
      second.stderr.trim(),
      new RegExp(
        `^casefile: REQUEST_ANSWERED: request "${request}" was already answered \\{"decision":"approve"\\} by ann at \\S+, in run `,
      ),
      "and was refused naming the first answer",
    );

    const after = await openCaseFile(caseFile, { readOnly: true });
    try {
      const answers = after.listEvents().filter((e) => e.type === "request_answered");
      assert.deepEqual(
        answers.map((e) => (e.data as { by?: string }).by),
        ["ann"],
        "one answer on the record",
      );
      assert.deepEqual(
        after.listRuns().map((r) => r.status),
        ["completed"],
        "one run, completed with Ann's answer",
      );
    } finally {
      after.close();
    }
  });
});
