import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { copyFileSync, rmSync } from "node:fs";
import path from "node:path";
import { startErp, type ErpServer } from "../../examples/erp/server";
import { invoiceSeed } from "../../examples/invoice/erpData";
import { InspectOutputSchema, type InspectOutput } from "../../src/protocol/inspect";
import { root, runCli, tempDir } from "./helpers";

/**
 * `casefile inspect` as a user runs it on the invoice example: the agent call id it prints is
 * what `export-eval --step` and `replay --step` take (and so is `<superstep>:<executor>` with
 * `--run`); after a person approves the escalated case, the outcome says the person decided.
 */
describe("CLI: inspect prints the ids the other commands take, and the case's outcome", function () {
  this.timeout(120_000);
  const workflow = path.join(root, "examples", "invoice", "workflow.ts");
  let dir: string;
  let erp: ErpServer;
  let env: NodeJS.ProcessEnv;
  let file: string;

  before(async () => {
    execFileSync("npm", ["run", "build", "--silent"], { cwd: root, stdio: "pipe" });
    dir = tempDir("casefile-inspectcli-");
    erp = await startErp({ dataDir: path.join(dir, "erp"), seed: invoiceSeed });
    env = { ERP_URL: erp.url, CASEFILE_PROVIDER: '{"kind":"scripted"}' };
    file = path.join(dir, "INV-1001.casefile");
    const r = await runCli(["run", workflow, "--case-file", file, "--input", '{"invoiceId":"INV-1001"}'], env);
    assert.equal(r.code, 0, r.stderr);
  });
  after(async () => {
    await erp.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const inspectJson = async (): Promise<InspectOutput> => {
    const r = await runCli(["inspect", file, "--json"], env);
    assert.equal(r.code, 0, r.stderr);
    const printed = JSON.parse(r.stdout) as unknown;
    assert.deepEqual(InspectOutputSchema.parse(printed), printed, "the printed JSON is the documented schema");
    return printed as InspectOutput;
  };

  it("the agent call id in inspect's text is accepted by export-eval --step and replay --step", async () => {
    const text = await runCli(["inspect", file], env);
    assert.equal(text.code, 0, text.stderr);
    // The first lines are the summary the README shows.
    assert.match(
      text.stdout,
      /^case file .*: 1 run\(s\)\n\nrun run-\w+ {2}invoice-variance v1 {2}WAITING\n {2}superstep {3}0 {2}\(start\)\n {2}superstep {3}1 {2}load \(loader, ok\)/,
    );
    const printed = /agent calls .*:\n {4}(\S+) {2}\(3:propose\)/.exec(text.stdout);
    assert.ok(printed, text.stdout);
    const id = printed[1]!;
    const json = await inspectJson();
    assert.equal(json.v, 1);
    assert.equal(json.runs[0]!.agentCalls[0]!.id, id);
    assert.match(text.stdout, new RegExp(`context ${json.runs[0]!.agentCalls[0]!.hash}  2 message\\(s\\), \\d+ tokens`));

    const exported = await runCli(["export-eval", file, "--step", id, "--out", path.join(dir, "by-id.eval.json")], env);
    assert.equal(exported.code, 0, exported.stderr);
    assert.match(exported.stdout, /eval case .*: step "propose", expects approve_variance \(escalated\)/);
    const replayed = await runCli(["replay", file, "--step", id], env);
    assert.equal(replayed.code, 0, replayed.stderr);
    assert.match(replayed.stdout, new RegExp(`^replayed ${id} \\(recorded\\) as run run-\\w+: waiting`, "m"));
  });

  it("--step SUPERSTEP:EXECUTOR works within --run; ambiguous and unknown steps get one line listing the ids", async () => {
    const json = await inspectJson();
    const [original, branch] = json.runs;
    assert.ok(branch, "the replay above made a branch run");
    const ids = json.runs.flatMap((r) => r.agentCalls.map((c) => c.id));
    assert.deepEqual(ids, [`${original!.id}:3:propose`, `${branch.id}:3:propose`]);

    const exported = await runCli(
      ["export-eval", file, "--step", "3:propose", "--run", branch.id, "--out", path.join(dir, "short.eval.json")],
      env,
    );
    assert.equal(exported.code, 0, exported.stderr);
    const replayed = await runCli(["replay", file, "--step", "3:propose", "--run", original!.id], env);
    assert.equal(replayed.code, 0, replayed.stderr);
    assert.match(replayed.stdout, new RegExp(`^replayed ${original!.id}:3:propose \\(recorded\\)`, "m"));

    for (const command of ["replay", "export-eval"]) {
      const ambiguous = await runCli([command, file, "--step", "3:propose"], env);
      assert.equal(ambiguous.code, 2);
      assert.equal(ambiguous.stderr.trim().split("\n").length, 1, ambiguous.stderr);
      assert.match(ambiguous.stderr, new RegExp(`^casefile: USAGE: --step 3:propose is ambiguous: .*${ids[0]}, ${ids[1]}.*pass --run RUN`));
      const unknown = await runCli([command, file, "--step", "9:propose", "--run", original!.id], env);
      assert.equal(unknown.code, 2);
      assert.equal(unknown.stderr.trim().split("\n").length, 1, unknown.stderr);
      assert.match(unknown.stderr, new RegExp(`no agent step "9:propose" in run ${original!.id} in .*; agent steps: ${ids[0]} `));
    }
  });

  it("after a person approves the escalated case, the outcome says the person decided", async () => {
    const json = await inspectJson();
    const run = json.runs[0]!;
    const answered = await runCli(
      ["respond", file, "--request", run.waiting[0]!.id, "--answer", '{"decision":"approve"}', "--by", "ana"],
      env,
    );
    assert.equal(answered.code, 0, answered.stderr);
    const text = await runCli(["inspect", file, "--run", run.id], env);
    assert.match(
      text.stdout,
      /\n {2}outcome: COMPLETED: the rules escalated "approve_variance" at superstep 4 \(decide\); then ana decided "approve" on request \S+:5:review at superstep 6\n/,
    );
    assert.match(text.stdout, /answered by ana at \S+ \(superstep 6\): \{"decision":"approve"\}/);
    const after = (await inspectJson()).runs[0]!;
    assert.deepEqual([after.outcome.decidedBy, after.outcome.person?.decision], ["person", "approve"]);
  });

  it("eval tells the format from the content, whatever the file is called", async () => {
    const odd = path.join(dir, "case-from-ci.txt");
    copyFileSync(path.join(dir, "by-id.eval.json"), odd);
    const r = await runCli(["eval", odd], env);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /^PASS /m);
  });
});
