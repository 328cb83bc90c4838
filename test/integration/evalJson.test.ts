import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { startErp, type ErpServer } from "../../examples/erp/server";
import { invoiceSeed } from "../../examples/invoice/erpData";
import { parseEvalRunLine, type EvalCaseRun, type EvalRunLine } from "../../src/protocol/evalRun";
import { parseExportEvalResult } from "../../src/protocol/exportEval";
import { root, runCli, tempDir } from "./helpers";

/**
 * `casefile eval … --json`, as the Testing view reads it: JSON lines, each parsed with the
 * shared schema (src/protocol/evalRun.ts), on an eval case exported from a real run of the
 * invoice example. A passing case, the same case with its expected action edited (a failure with
 * the rules' results), and a case whose workflow is gone (an error with its code).
 */

const workflow = path.join(root, "examples", "invoice", "workflow.ts");

function lines(stdout: string): EvalRunLine[] {
  return stdout
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => {
      const parsed = parseEvalRunLine(l);
      assert.ok(parsed.ok, `every stdout line parses with the schema: ${parsed.ok ? "" : parsed.error}\n${l}`);
      return parsed.value;
    });
}

const caseLines = (all: EvalRunLine[]) => all.filter((l): l is EvalCaseRun => l.type === "case");

describe("CLI: eval --json gives a typed result per case", function () {
  this.timeout(180_000);
  let dir: string;
  let erp: ErpServer;
  let evalFile: string;

  before(async () => {
    execFileSync("npm", ["run", "build", "--silent"], { cwd: root, stdio: "pipe" });
    dir = tempDir("casefile-evaljson-");
    erp = await startErp({ dataDir: path.join(dir, "erp"), seed: invoiceSeed });
    const caseFile = path.join(dir, "INV-1001.casefile");
    const env = { ERP_URL: erp.url };
    const run = await runCli(["run", workflow, "--case-file", caseFile, "--input", '{"invoiceId":"INV-1001"}'], env);
    assert.equal(run.code, 0, run.stderr);
    const exported = await runCli(["export-eval", caseFile, "--step", "3:propose", "--json"], env);
    assert.equal(exported.code, 0, exported.stderr);
    const result = parseExportEvalResult(exported.stdout);
    assert.ok(result.ok, result.ok ? "" : result.error);
    evalFile = result.value.path;
  });

  after(async () => {
    await erp?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("a case that still holds passes: its action, verdict, each rule's result and where it was recorded", async () => {
    const r = await runCli(["eval", evalFile, "--json"]);
    assert.equal(r.code, 0, r.stderr);
    const all = lines(r.stdout);
    const [c] = caseLines(all);
    assert.equal(caseLines(all).length, 1, r.stdout);
    assert.equal(c!.passed, true, JSON.stringify(c));
    assert.equal(c!.file, evalFile);
    assert.equal(c!.step, "propose");
    assert.equal(c!.workflow.name, "invoice-variance");
    // The 9% variance: the agent's approve is escalated by the tolerance rule.
    assert.deepEqual(c!.expected, { action: "approve_variance", verdict: "escalated" });
    assert.equal(c!.got?.action, "approve_variance");
    assert.equal(c!.got?.verdict, "escalated");
    const failing = c!.got!.rules.filter((rule) => !rule.ok);
    assert.ok(failing.length >= 1, `a rule fails and says why: ${JSON.stringify(c!.got!.rules)}`);
    assert.ok(c!.provenance.agentCallId.length > 0 && c!.provenance.superstep >= 0, JSON.stringify(c!.provenance));
    assert.deepEqual(all.at(-1), { v: 1, type: "done", passed: 1, failed: 0 });
  });

  it("the case with its expected action edited fails, showing expected against what the step now does", async () => {
    const edited = path.join(dir, "edited.eval.json");
    const data = JSON.parse(readFileSync(evalFile, "utf8")) as { expected: { action: string }; workflow: { file: string } };
    data.expected.action = "reject";
    data.workflow.file = path.relative(dir, workflow);
    writeFileSync(edited, JSON.stringify(data, null, 2));
    const r = await runCli(["eval", edited, "--json", "--junit", path.join(dir, "junit.xml")]);
    assert.equal(r.code, 1, "exit 1: a case failed");
    const all = lines(r.stdout);
    const [c] = caseLines(all);
    assert.equal(c!.passed, false);
    assert.equal(c!.expected.action, "reject");
    assert.equal(c!.got?.action, "approve_variance");
    assert.equal(c!.error, undefined);
    assert.deepEqual(all.at(-1), { v: 1, type: "done", passed: 0, failed: 1 });
    assert.match(r.stderr, /JUnit: /, "the JUnit path goes to stderr: stdout holds only JSON lines");
  });

  it("a case that cannot run gives its error's code and message, and the other cases still run", async () => {
    const broken = path.join(dir, "broken.eval.json");
    const data = JSON.parse(readFileSync(evalFile, "utf8")) as { id: string; workflow: { file: string } };
    data.id = "broken";
    data.workflow.file = "no-such-workflow.ts";
    writeFileSync(broken, JSON.stringify(data, null, 2));
    const r = await runCli(["eval", broken, evalFile, "--json"]);
    assert.equal(r.code, 1, r.stderr);
    const cases = caseLines(lines(r.stdout));
    assert.deepEqual(
      cases.map((c) => [c.id, c.passed]),
      [
        ["broken", false],
        [cases[1]!.id, true],
      ],
    );
    assert.ok(cases[0]!.error && cases[0]!.error.code !== "INTERNAL", JSON.stringify(cases[0]!.error));
    assert.match(cases[0]!.error!.message, /no-such-workflow\.ts/);
    assert.equal(cases[0]!.got, undefined);
  });
});
