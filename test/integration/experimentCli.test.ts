import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { openCaseFile } from "../../src/casefile/index";
import { parseExperimentResults, type ExperimentResults } from "../../src/protocol/experiment";
import { startErp, type ErpServer } from "../../examples/erp/server";
import { invoiceSeed } from "../../examples/invoice/erpData";
import { root, runCli, tempDir } from "./helpers";

/**
 * `casefile experiment` as a user runs it (bin/casefile.js, built by `npm run build`) on the
 * invoice example's exported cases (INV-1001, a 9% variance the rules escalate; INV-1002, 2%,
 * approved): two provider variants against a loopback Chat Completions server that answers by
 * model name (gpt-4o-mini approves, gpt-4o escalates), and two workflow versions whose rules
 * differ (test/fixtures/workflows/invoiceV2.ts tolerates 10%).
 */

const workflow = path.join(root, "examples", "invoice", "workflow.ts");
const workflowV2 = path.join(root, "test", "fixtures", "workflows", "invoiceV2.ts");

describe("CLI: experiment, one eval set under several variants", function () {
  this.timeout(240_000);
  const dir = tempDir("casefile-experiment-");
  const evals = path.join(dir, "evals");
  let erp: ErpServer;
  let server: http.Server;
  let baseUrl: string;
  const seen: { model?: string; temperature?: number }[] = [];
  const env: NodeJS.ProcessEnv = { OPENAI_API_KEY: "sk-experiment-test" };

  before(async () => {
    execFileSync("npm", ["run", "build", "--silent"], { cwd: root, stdio: "pipe" });
    erp = await startErp({ dataDir: path.join(dir, "erp"), seed: invoiceSeed });
    server = http.createServer((req, res) => {
      let body = "";
      req.on("data", (c: Buffer) => (body += c.toString("utf8")));
      req.on("end", () => {
        const parsed = JSON.parse(body || "{}") as { model?: string; temperature?: number };
        seen.push({ model: parsed.model, temperature: parsed.temperature });
        const mini = parsed.model === "gpt-4o-mini";
        const answer = mini
          ? { action: "approve_variance", reason: "Prices follow the agreement's schedule.", facts: ["invoice", "po"] }
          : { action: "escalate", reason: "A person should look at any variance.", facts: ["invoice"] };
        res.setHeader("content-type", "application/json");
        res.end(
          JSON.stringify({
            id: `chatcmpl-${parsed.model}`,
            object: "chat.completion",
            created: 1,
            model: parsed.model,
            choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content: JSON.stringify(answer), refusal: null } }],
            usage: mini
              ? { prompt_tokens: 300, completion_tokens: 30, total_tokens: 330 }
              : { prompt_tokens: 300, completion_tokens: 70, total_tokens: 370 },
          }),
        );
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;

    // The example's two cases, run with their scripted answers and exported as eval cases.
    for (const invoice of ["INV-1001", "INV-1002"]) {
      const caseFile = path.join(dir, `${invoice}.casefile`);
      const run = await runCli(["run", workflow, "--case-file", caseFile, "--input", JSON.stringify({ invoiceId: invoice })], {
        ...env,
        ERP_URL: erp.url,
      });
      assert.equal(run.code, 0, run.stderr);
      const store = await openCaseFile(caseFile, { readOnly: true });
      const [call] = store.listAgentCalls();
      store.close();
      const exported = await runCli(["export-eval", caseFile, "--step", call!.id, "--out", path.join(evals, `${invoice}.eval.json`)], env);
      assert.equal(exported.code, 0, exported.stderr);
    }
  });

  after(async () => {
    await erp?.close();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    rmSync(dir, { recursive: true, force: true });
  });

  const results = (stdout: string): ExperimentResults => {
    const line = stdout.trim().split("\n").at(-1)!;
    assert.match(line, /^results: .*\.experiment\.json$/, "the last line names the results file");
    const parsed = parseExperimentResults(readFileSync(line.slice("results: ".length), "utf8"));
    assert.ok(parsed.ok, `the results file parses: ${parsed.ok ? "" : parsed.error}`);
    return parsed.value;
  };
  const cell = (r: ExperimentResults, c: string, v: string) => r.cells.find((x) => x.case.startsWith(c) && x.variant === v)!;

  it("runs two models side by side, repeated, and exits 1 naming the cases the baseline passes and the other fails", async () => {
    seen.length = 0;
    const mini = JSON.stringify({ kind: "openai", baseUrl, model: "gpt-4o-mini" });
    const large = JSON.stringify({ kind: "openai", baseUrl, model: "gpt-4o", temperature: 0.7 });
    const r = await runCli(
      ["experiment", evals, "--variant", `mini=${mini}`, "--variant", `large=${large}`, "--repeat", "2", "--baseline", "mini"],
      env,
    );
    assert.equal(r.code, 1, `a regression exits 1: ${r.stderr}`);
    assert.equal(r.stderr, "", "nothing on stderr");
    assert.match(r.stdout, /^case\s+expected\s+mini \(baseline\)\s+large$/m, r.stdout);
    assert.match(
      r.stdout,
      /^run-\w+-propose-\d+\s+approve_variance \/ escalated\s+PASS 2\/2 approve_variance \/ escalated {2}330 tok {2}\d+ ms\s+FAIL 0\/2 escalate \/ accepted {2}370 tok/m,
    );
    assert.match(r.stdout, /^mini\s+100%\s+2\/2\s+1320\s/m, "totals: 4 runs of 330 tokens");
    assert.match(r.stdout, /^large\s+0%\s+0\/2\s+1480\s/m, "totals: 4 runs of 370 tokens");
    assert.match(r.stdout, /regression: case run-\w+-propose-\d+ passes under baseline "mini" and fails under "large"/);
    assert.equal(r.stdout.match(/^regression: /gm)?.length, 2, "both cases regress");

    assert.equal(seen.length, 8, "2 cases x 2 variants x 2 repeats reached the server");
    assert.deepEqual([...new Set(seen.map((s) => `${s.model}@${s.temperature}`))].sort(), ["gpt-4o-mini@0", "gpt-4o@0.7"]);

    const res = results(r.stdout);
    assert.equal(path.dirname(r.stdout.trim().split("\n").at(-1)!.slice("results: ".length)), evals, "written beside the cases");
    assert.equal(res.repeat, 2);
    assert.deepEqual(res.variants[1]!.spec, { provider: { kind: "openai", model: "gpt-4o", baseUrl }, temperature: 0.7 });
    assert.equal(JSON.stringify(res).includes("sk-experiment-test"), false, "no API key in the results file");
    const failed = cell(res, "", "large");
    assert.equal(failed.passRate, 0);
    assert.deepEqual(failed.runs[0]!.tokens.prompt, 300);
    assert.equal(failed.request?.model, "gpt-4o");
    assert.equal(res.regressions.length, 2);

    const beside = (f: string) => path.join(evals, f);
    assert.equal(res.cases[0]!.file.startsWith("INV-100"), true, "case files are named relative to the results file");
    const junit = readFileSync(beside(res.junit.large!), "utf8");
    assert.match(junit, /<testsuites name="casefile eval" tests="4" failures="4" errors="0"/, junit);
    assert.match(junit, /name="run-\w+-propose-\d+ \(run 2\)"/, "a repeat is its own testcase");
    assert.match(readFileSync(beside(res.junit.mini!), "utf8"), /tests="4" failures="0"/);

    // Running again on the folder: the results file beside the cases is not taken for a case.
    const again = await runCli(["experiment", evals, "--variant", "rec=recorded"], env);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(results(again.stdout).cases.length, 2, "two cases, the results file left out");
  });

  it("runs two workflow versions whose rules differ: the context is rebuilt by each, the looser rule fails the 9% case", async () => {
    const out = path.join(dir, "versions.experiment.json");
    const r = await runCli(
      ["experiment", evals, "--variant", `v1=${workflow}`, "--variant", `v2=${workflowV2}`, "--baseline", "v1", "--out", out],
      env,
    );
    assert.equal(r.code, 1, r.stdout + r.stderr);
    const res = results(r.stdout);
    const c1001 = res.cases.find((c) => c.expected.verdict === "escalated")!.id;
    const c1002 = res.cases.find((c) => c.expected.verdict === "accepted")!.id;
    assert.deepEqual(res.regressions, [{ case: c1001, variant: "v2" }], "the 9% case: accepted under the 10% tolerance");
    assert.equal(cell(res, c1001, "v2").runs[0]!.verdict, "accepted");
    assert.equal(cell(res, c1002, "v2").passed, true, "the 2% case passes under both");
    assert.match(r.stdout, new RegExp(`regression: case ${c1001} passes under baseline "v1" and fails under "v2"`));

    // v1 rebuilds exactly the recorded context; v2's context says its tolerance.
    const recorded = JSON.parse(readFileSync(path.join(evals, "INV-1001.eval.json"), "utf8")) as { request: { hash: string } };
    assert.equal(cell(res, c1001, "v1").request?.hash, recorded.request.hash, "the same workflow rebuilds the same context");
    const v2System = cell(res, c1001, "v2").request!.messages[0]!.content;
    assert.match(v2System, /Variances up to 10% may be approved/);
    assert.deepEqual(
      cell(res, c1001, "v2").runs[0]!.notes,
      ["workflow v1 -> v2", "context differs from the recorded one"],
      "v2's changes are noted",
    );
    assert.deepEqual(cell(res, c1001, "v1").runs[0]!.notes, [], "v1 changes nothing");
    assert.ok(existsSync(`${out.replace(/\.experiment\.json$/, "")}.v2.junit.xml`), "a JUnit file per variant, beside --out");

    // A case whose case file is gone: its recorded context is used, and the notes say so.
    const moved = path.join(dir, "moved");
    mkdirSync(moved, { recursive: true });
    const kept = JSON.parse(readFileSync(path.join(evals, "INV-1001.eval.json"), "utf8")) as {
      provenance: { caseFile: string };
      workflow: { file?: string };
    };
    kept.provenance.caseFile = path.join(dir, "gone.casefile");
    delete kept.workflow.file;
    writeFileSync(path.join(moved, "INV-1001.eval.json"), JSON.stringify(kept));
    const alone = await runCli(["experiment", moved, "--variant", `v2=${workflowV2}`], env);
    assert.equal(alone.code, 0, alone.stdout + alone.stderr);
    assert.match(alone.stdout, /FAIL approve_variance \/ accepted/, "v2's rule still judges the recorded answer");
    assert.match(
      alone.stdout,
      new RegExp(
        `context as recorded: case file ${kept.provenance.caseFile.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} not found to rebuild it`,
      ),
    );

    // The looser version as baseline: it passes nothing v1 fails, so no regression.
    const flipped = await runCli(
      ["experiment", evals, "--variant", `v1=${workflow}`, "--variant", `v2=${workflowV2}`, "--baseline", "v2", "--out", out],
      env,
    );
    assert.equal(flipped.code, 0, flipped.stdout + flipped.stderr);
  });

  it("refuses a malformed variant or an unknown baseline in one line, exit 2", async () => {
    const cases: [string[], RegExp][] = [
      [["--variant", "nameonly"], /^casefile: USAGE: --variant "nameonly" is not NAME=SPEC/],
      [["--variant", 'x={"kind":"openia"}'], /^casefile: USAGE: --variant x: .* at "kind"/],
      [["--variant", "x=nope.txt"], /^casefile: USAGE: --variant x: "nope.txt" is neither recorded, a workflow file/],
      [["--variant", "x=recorded", "--baseline", "y"], /^casefile: USAGE: --baseline "y" is not a variant \(variants: x\)/],
      [["--variant", "x=recorded", "--repeat", "0"], /^casefile: USAGE: --repeat must be a whole number from 1 to 100/],
      [[], /^casefile: USAGE: experiment needs at least one --variant/],
    ];
    for (const [args, expected] of cases) {
      const r = await runCli(["experiment", evals, ...args], env);
      assert.equal(r.code, 2, `${args.join(" ")}: ${r.stderr}`);
      assert.match(r.stderr, expected);
      assert.equal(r.stderr.trim().split("\n").length, 1, "one line");
    }
  });
});
