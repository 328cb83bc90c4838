import assert from "node:assert/strict";
import { readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { startErp, type ErpServer } from "../../examples/erp/server";
import { invoiceSeed } from "../../examples/invoice/erpData";
import { openCaseFile } from "../../src/casefile/index";
import { root, runCli, tempDir } from "./helpers";

const workflow = path.join(root, "examples/invoice/workflow.ts");

interface Inspected {
  runs: {
    id: string;
    status: string;
    parent?: { run: string; checkpoint: string };
    supersteps: { superstep: number; checkpoint?: string; changed: string[]; steps: { executor: string; status: string }[] }[];
    verdicts: { action: string; verdict: string; reason: string }[];
    waiting: { id: string; title: string }[];
    outputs: unknown[];
  }[];
}

describe("CLI end to end on the invoice example", function () {
  this.timeout(120_000);
  let erp: ErpServer;
  let dir: string;
  let env: NodeJS.ProcessEnv;

  before(async () => {
    dir = tempDir();
    erp = await startErp({ dataDir: path.join(dir, "erp"), seed: invoiceSeed });
    env = { ERP_URL: erp.url };
  });
  after(() => erp.close());

  const inspect = async (file: string): Promise<Inspected> => {
    const r = await runCli(["inspect", file, "--json"], env);
    assert.equal(r.code, 0, r.stderr);
    return JSON.parse(r.stdout) as Inspected;
  };

  it("runs the 9% invoice: the tolerance rule escalates the model's approval and the run waits for a person", async () => {
    const file = path.join(dir, "inv-1001.casefile");
    const r = await runCli(["run", workflow, "--case-file", file, "--input", '{"invoiceId":"INV-1001"}'], env);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /run run-\w+ waiting at superstep 5/);
    const [run] = (await inspect(file)).runs;
    assert.equal(run!.status, "waiting");
    assert.deepEqual(
      run!.verdicts.map((v) => [v.action, v.verdict]),
      [["approve_variance", "escalated"]],
    );
    assert.match(run!.verdicts[0]!.reason, /withinTolerance: variance 9% exceeds the 5% tolerance/);
    assert.deepEqual(
      run!.supersteps.map((s) => s.steps.map((st) => st.executor).join(",")),
      ["", "load", "variance", "propose", "decide", "review"],
    );
    assert.deepEqual(run!.supersteps[1]!.changed, ["invoice", "po", "contract"]);
    assert.deepEqual(run!.supersteps[3]!.changed, ["priceTerms"], "the agent's extract is made in its superstep");

    const human = await runCli(["inspect", file], env);
    assert.match(human.stdout, /proposed "approve_variance" -> ESCALATED: withinTolerance: variance 9% exceeds/);
    assert.match(human.stdout, /waiting for a person: \S+:5:review {2}"Review invoice INV-1001: variance 9%"/);

    const answer = await runCli(
      ["respond", file, "--request", run!.waiting[0]!.id, "--answer", '{"decision":"reject","comment":"no"}'],
      env,
    );
    assert.equal(answer.code, 0, answer.stderr);
    const [done] = (await inspect(file)).runs;
    assert.equal(done!.status, "completed");
    assert.deepEqual(done!.outputs, [{ invoice: "INV-1001", outcome: "reject by reviewer" }]);
  });

  it("forks with edited state: the branch points at its parent, which is untouched", async () => {
    const file = path.join(dir, "inv-1002.casefile");
    assert.equal((await runCli(["run", workflow, "--case-file", file, "--input", '{"invoiceId":"INV-1002"}'], env)).code, 0);
    const before = await inspect(file);
    const parent = before.runs[0]!;
    assert.equal(parent.status, "completed");
    assert.equal(parent.verdicts[0]!.verdict, "accepted");

    const bad = await runCli(["resume", file, "--checkpoint", `${parent.id}:2`, "--patch", '{"variance":{"amount":"x","pct":9}}'], env);
    assert.equal(bad.code, 3);
    assert.match(bad.stderr, /^casefile: INVALID_PATCH: patch value for "variance" is invalid at "variance.amount"/m);

    const fork = await runCli(["resume", file, "--checkpoint", `${parent.id}:2`, "--patch", '{"variance":{"amount":90,"pct":9}}'], env);
    assert.equal(fork.code, 0, fork.stderr);
    const after = await inspect(file);
    assert.equal(after.runs.length, 2);
    assert.deepEqual(after.runs[0], { ...before.runs[0], branches: [after.runs[1]!.id] } as unknown);
    const branch = after.runs[1]!;
    assert.deepEqual(branch.parent, { run: parent.id, checkpoint: `${parent.id}:2` });
    assert.equal(branch.verdicts[0]!.verdict, "escalated", "with a 9% variance the same proposal is escalated in the branch");
    assert.equal(branch.status, "waiting");
  });

  it("fails with a one-line error and a distinct exit code for scripts", async () => {
    const usage = await runCli(["run"], env);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /^casefile: USAGE: run needs a workflow file$/m);

    const broken = await runCli(
      ["run", path.join(root, "test/fixtures/workflows/broken.ts"), "--case-file", path.join(dir, "b.casefile")],
      env,
    );
    assert.equal(broken.code, 3);
    assert.match(broken.stderr, /casefile: DUPLICATE_OWNER: state key "x" is owned by both "a" and "b"/);

    const notCase = path.join(dir, "notes.casefile");
    writeFileSync(notCase, "just some text, not a database");
    const mtime = statSync(notCase).mtimeMs;
    const refused = await runCli(["inspect", notCase], env);
    assert.equal(refused.code, 3);
    assert.match(refused.stderr, /casefile: NOT_A_CASE_FILE: /);
    assert.equal(readFileSync(notCase, "utf8"), "just some text, not a database");
    assert.equal(statSync(notCase).mtimeMs, mtime);

    const badInput = await runCli(["run", workflow, "--case-file", path.join(dir, "c.casefile"), "--input", '{"invoice":1}'], env);
    assert.equal(badInput.code, 3);
    assert.match(badInput.stderr, /INVALID_INPUT: input of workflow "invoice-variance" is invalid at "invoiceId"/);
  });

  it("records facts with their ERP source and version in the case file", async () => {
    const file = path.join(dir, "inv-1001.casefile");
    const store = await openCaseFile(file, { readOnly: true });
    try {
      const run = store.listRuns()[0]!;
      const facts = store.listFacts(run.id);
      assert.deepEqual(
        facts.map((f) => [f.key, f.source.replace(erp.url, "ERP"), f.sourceVersion]),
        [
          ["invoice", "ERP/invoices/INV-1001", '"v1"'],
          ["po", "ERP/purchase-orders/PO-7001", '"v1"'],
          ["contract", "ERP/contracts/FA-2025-014", '"v1"'],
        ],
      );
      const call = store.listAgentCalls(run.id)[0]!;
      assert.match(call.hash, /^sha256:[0-9a-f]{64}$/);
      assert.ok(call.tokens!.count > 50, "the context is token-counted");
      assert.equal(call.request.messages.length, 2);
      // The agent is shown the agreement's price schedule, an extract labelled with the agreement's version, not its text.
      assert.deepEqual(call.extracts, [
        { key: "priceTerms", from: "contract", source: `${erp.url}/contracts/FA-2025-014`, sourceVersion: '"v1"' },
      ]);
      assert.match(
        call.request.messages[1]!.content,
        /\(extract of http:\S+\/contracts\/FA-2025-014@"v1"\):\n\{"unitPrices":\{"PAL-EUR":10,"PAL-IND":12\.5\}/,
      );
      assert.doesNotMatch(call.request.messages[1]!.content, /Framework supply agreement/);
    } finally {
      store.close();
    }
  });
});
