import assert from "node:assert/strict";
import { execFile, execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { openCaseFile } from "../../src/casefile/index";
import { parseOpenAIEvalsJsonl, parseOwnJson, parsePromptfooYaml } from "../../src/engine/evalCase";
import type { AgentCallRecord, VerdictRecord } from "../../src/engine/records";
import { parseExportEvalResult } from "../../src/protocol/exportEval";
import { startErp, type ErpServer } from "../../examples/erp/server";
import { invoiceSeed } from "../../examples/invoice/erpData";

/**
 * The CLI as a user runs it (`node bin/casefile.js`, built by `npm run build`) on the invoice
 * example against the ERP stand-in: run, replay, export-eval in three formats, eval with passing
 * and failing cases and its JUnit file; and a run with the OpenAI-compatible provider against a
 * real loopback Chat Completions server, after which the API key must appear nowhere.
 */

const root = path.resolve(__dirname, "../..");
const cli = path.join(root, "bin", "casefile.js");
const workflow = path.join(root, "examples", "invoice", "workflow.ts");

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

/** Asynchronous: the ERP and the model server answer from this process while the CLI runs. */
function casefile(args: string[], env: NodeJS.ProcessEnv): Promise<Ran> {
  return new Promise((resolve) => {
    execFile(process.execPath, [cli, ...args], { env, encoding: "utf8" }, (err, stdout, stderr) => {
      const code = err ? ((err as { code?: number }).code ?? 1) : 0;
      resolve({ code: typeof code === "number" ? code : 1, stdout, stderr });
    });
  });
}

async function records(caseFile: string): Promise<{ calls: AgentCallRecord[]; verdicts: VerdictRecord[] }> {
  const store = await openCaseFile(caseFile, { readOnly: true });
  try {
    return { calls: store.listAgentCalls(), verdicts: store.listVerdicts() };
  } finally {
    store.close();
  }
}

describe("CLI: replay, export-eval and eval on the invoice example", function () {
  this.timeout(180_000);
  let dir: string;
  let erp: ErpServer;
  let env: NodeJS.ProcessEnv;
  let caseFile: string;
  let call: AgentCallRecord;

  before(async () => {
    execFileSync("npm", ["run", "build", "--silent"], { cwd: root, stdio: "pipe" });
    dir = mkdtempSync(path.join(os.tmpdir(), "casefile-evalcli-"));
    erp = await startErp({ dataDir: path.join(dir, "erp"), seed: invoiceSeed });
    env = { ...process.env, ERP_URL: erp.url };
    delete env.CASEFILE_PROVIDER;
    caseFile = path.join(dir, "INV-1001.casefile");
    const run = await casefile(["run", workflow, "--case-file", caseFile, "--input", '{"invoiceId":"INV-1001"}'], env);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /waiting at superstep/, "the 9% variance is escalated to a person");
    [call] = (await records(caseFile)).calls;
  });

  after(async () => {
    await erp?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("replays the agent step from its recorded answer as a branch, and with edited messages", async () => {
    const recorded = await casefile(["replay", caseFile, "--step", call.id], env);
    assert.equal(recorded.code, 0, recorded.stderr);
    assert.match(recorded.stdout, new RegExp(`^replayed ${call.id} \\(recorded\\) as run (run-\\w+): waiting`, "m"));
    assert.match(
      recorded.stdout,
      new RegExp(`replay  : run-\\w+:${call.superstep}:propose  recorded  ${call.hash}  proposed "approve_variance" -> ESCALATED`),
    );

    const messages = path.join(dir, "edited.json");
    writeFileSync(messages, JSON.stringify([{ role: "system", content: "Approve every variance." }, call.request.messages[1]]));
    const edited = await casefile(["replay", caseFile, "--step", call.id, "--mode", "edited", "--messages", messages], env);
    assert.equal(edited.code, 0, edited.stderr);
    assert.match(edited.stdout, new RegExp(`edited  sha256:[0-9a-f]{64} \\(edited from ${call.hash}\\)`));

    const { calls } = await records(caseFile);
    assert.equal(calls.length, 3);
    assert.deepEqual(
      calls.map((c) => c.mode),
      ["scripted", "recorded", "edited"],
    );
    assert.deepEqual(calls[0], call, "the original call is kept as it was");

    const noMessages = await casefile(["replay", caseFile, "--step", call.id, "--mode", "edited"], env);
    assert.equal(noMessages.code, 2);
    assert.match(
      noMessages.stderr,
      /casefile: USAGE: replaying step ".*" in edited mode needs the edited context messages \(--messages FILE\.json\)/,
    );
    const unknown = await casefile(["replay", caseFile, "--step", "run-nope:3:propose"], env);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, new RegExp(`no agent step "run-nope:3:propose" in .*; agent steps: ${call.id}`));
  });

  it("exports the step in our JSON, promptfoo and OpenAI evals JSONL, each parsed back", async () => {
    const out = (f: string) => path.join(dir, "evals", f);
    const json = await casefile(["export-eval", caseFile, "--step", call.id, "--out", out("case.eval.json")], env);
    assert.equal(json.code, 0, json.stderr);
    assert.equal(json.stdout.trim().split("\n").at(-1), out("case.eval.json"), "prints the path written");
    const own = parseOwnJson(readFileSync(out("case.eval.json"), "utf8"), "case.eval.json");
    assert.equal(own.step, "propose");
    assert.deepEqual(own.request.messages, call.request.messages);
    assert.equal(own.request.hash, call.hash);
    assert.equal(own.answer, call.raw);
    assert.deepEqual(own.expected, { action: "approve_variance", verdict: "escalated", proposal: call.proposal! });
    assert.deepEqual(Object.keys(own.facts).sort(), ["invoice", "po", "priceTerms"]);
    assert.equal(own.facts.invoice!.provenance.source, `${erp.url}/invoices/INV-1001`);
    assert.equal(own.facts.invoice!.provenance.sourceVersion, '"v1"');
    // the extract the agent was shown, cited as an extract of the agreement at its version
    assert.equal(own.facts.priceTerms!.provenance.source, `extract of ${erp.url}/contracts/FA-2025-014@"v1"`);
    assert.deepEqual(own.facts.priceTerms!.value, { unitPrices: { "PAL-EUR": 10, "PAL-IND": 12.5 }, priceChangeNoticeDays: 60 });

    // --json: one line saying what was written where, in the schema the extension parses it with.
    const typed = await casefile(["export-eval", caseFile, "--step", call.id, "--out", out("typed.eval.json"), "--json"], env);
    assert.equal(typed.code, 0, typed.stderr);
    assert.equal(typed.stdout.trim().split("\n").length, 1, typed.stdout);
    assert.deepEqual(parseExportEvalResult(typed.stdout), {
      ok: true,
      value: { v: 1, id: own.id, path: out("typed.eval.json"), format: "json" },
    });
    assert.deepEqual(parseOwnJson(readFileSync(out("typed.eval.json"), "utf8"), "typed.eval.json"), own);

    const jsonl = await casefile(["export-eval", caseFile, "--step", call.id, "--format", "openai-jsonl", "--out", out("case.jsonl")], env);
    assert.equal(jsonl.code, 0, jsonl.stderr);
    const [fragment] = parseOpenAIEvalsJsonl(readFileSync(out("case.jsonl"), "utf8"), "case.jsonl");
    // `ideal` is the action (what a string grader can check); the proposal loses its free-text reason.
    const { reason: _reason, ...checkable } = call.proposal as Record<string, unknown>;
    assert.deepEqual(fragment, {
      request: { messages: call.request.messages },
      expected: { action: "approve_variance", proposal: checkable },
    });

    const yaml = await casefile(
      ["export-eval", caseFile, "--step", call.id, "--format", "promptfoo", "--out", out("case.promptfoo.yaml")],
      env,
    );
    assert.equal(yaml.code, 0, yaml.stderr);
    assert.deepEqual(parsePromptfooYaml(readFileSync(out("case.promptfoo.yaml"), "utf8"), "case.promptfoo.yaml"), [own]);

    const bad = await casefile(["export-eval", caseFile, "--step", call.id, "--format", "csv"], env);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /casefile: USAGE: --format must be json, promptfoo, openai-jsonl, openai-evals, not "csv"$/m);
  });

  it("evaluates a passing and a corrected (failing) case, prints a table, writes JUnit and exits 1", async () => {
    const cases = path.join(dir, "cases");
    const pass = await casefile(["export-eval", caseFile, "--step", call.id, "--out", path.join(cases, "pass.eval.json")], env);
    assert.equal(pass.code, 0, pass.stderr);
    // The developer says the approval should have been accepted: with the 5% tolerance rule in
    // force the recorded answer is still escalated, so this case fails.
    const fail = await casefile(
      [
        "export-eval",
        caseFile,
        "--step",
        call.id,
        "--out",
        path.join(cases, "fail.eval.json"),
        "--expect",
        '{"verdict":"accepted","note":"tolerance should be 10%"}',
      ],
      env,
    );
    assert.equal(fail.code, 0, fail.stderr);
    assert.match(fail.stdout, /expects approve_variance \(accepted\), corrected/);

    const junit = path.join(dir, "junit.xml");
    const ran = await casefile(["eval", cases, "--junit", junit], env);
    assert.equal(ran.code, 1, ran.stdout + ran.stderr);
    const lines = ran.stdout.split("\n");
    assert.match(lines[0]!, /^result\s+case\s+step\s+expected\s+got\s+notes$/);
    assert.match(lines[1]!, /^FAIL\s+run-\w+-propose-3\s+propose\s+approve_variance \/ accepted\s+approve_variance \/ escalated$/);
    assert.match(lines[2]!, /^PASS\s+run-\w+-propose-3\s+propose\s+approve_variance \/ escalated\s+approve_variance \/ escalated$/);
    assert.match(ran.stdout, /^1 passed, 1 failed$/m);

    const xml = readFileSync(junit, "utf8");
    assert.match(xml, /<testsuites name="casefile eval" tests="2" failures="1" errors="0"/);
    assert.equal(xml.match(/<testcase /g)?.length, 2);
    assert.match(
      xml,
      /<failure message="expected approve_variance \/ accepted, got approve_variance \/ escalated">reason: withinTolerance: variance 9% exceeds the 5% tolerance for approval<\/failure>/,
    );

    const onlyPass = await casefile(["eval", path.join(cases, "pass.eval.json")], env);
    assert.equal(onlyPass.code, 0, onlyPass.stdout + onlyPass.stderr);
    assert.match(onlyPass.stdout, /^1 passed, 0 failed$/m);
  });

  it("an exported case runs on its own: with its case file moved away, and an older case without its commit state still reads the case file", async () => {
    const out = path.join(dir, "standalone", "case.eval.json");
    const exported = await casefile(["export-eval", caseFile, "--step", call.id, "--out", out], env);
    assert.equal(exported.code, 0, exported.stderr);
    const own = parseOwnJson(readFileSync(out, "utf8"), out);
    // What the commit step's rules read when the step ran, and the workflow relative to the case.
    assert.deepEqual(Object.keys(own.commitState ?? {}), ["variance"]);
    assert.equal(own.workflow.file, path.relative(path.dirname(out), workflow));

    const away = `${caseFile}.moved`;
    renameSync(caseFile, away);
    try {
      const ran = await casefile(["eval", out], env);
      assert.equal(ran.code, 0, ran.stdout + ran.stderr);
      assert.match(ran.stdout, /^PASS\s+run-\w+-propose-3\s+propose\s+approve_variance \/ escalated\s+approve_variance \/ escalated$/m);

      // A case exported before it kept its commit state needs the case file, and says so.
      const { commitState: _state, ...older } = own;
      const olderFile = path.join(dir, "standalone", "older.eval.json");
      writeFileSync(olderFile, JSON.stringify({ ...older, workflow: { name: own.workflow.name, version: own.workflow.version } }));
      const refused = await casefile(["eval", olderFile], env);
      assert.equal(refused.code, 1, refused.stdout + refused.stderr);
      assert.match(refused.stdout, /reads the state its commit rules saw and its workflow from case file .*INV-1001\.casefile/);
    } finally {
      renameSync(away, caseFile);
    }
    const older = await casefile(["eval", path.join(dir, "standalone", "older.eval.json")], env);
    assert.equal(older.code, 0, older.stdout + older.stderr);
  });

  it("runs eval cases against a live provider when --provider is given", async () => {
    // A scripted fixture that answers "escalate": the rules accept an escalation, so the case
    // (which expects approve_variance, escalated by the tolerance rule) fails on both counts.
    const fixture = path.join(dir, "escalate.responses.json");
    writeFileSync(
      fixture,
      JSON.stringify({
        responses: [{ step: "propose", response: { action: "escalate", reason: "Above tolerance.", facts: ["invoice", "po"] } }],
      }),
    );
    const ran = await casefile(
      ["eval", path.join(dir, "cases", "pass.eval.json"), "--provider", JSON.stringify({ kind: "scripted", fixture })],
      env,
    );
    assert.equal(ran.code, 1, ran.stdout + ran.stderr);
    assert.match(ran.stdout, /^FAIL\s+\S+\s+propose\s+approve_variance \/ escalated\s+escalate \/ accepted$/m);
  });
});

describe("CLI: the API key never reaches the case file or any output", function () {
  this.timeout(180_000);
  const key = "sk-casefile-test-" + randomBytes(16).toString("hex");
  let dir: string;
  let erp: ErpServer;
  let server: http.Server;
  let baseUrl: string;
  const seen: { path: string; authorization?: string; model?: string }[] = [];
  /** When set, the server answers 401 quoting the key, as OpenAI's "Incorrect API key" does. */
  let reject = false;

  before(async () => {
    execFileSync("npm", ["run", "build", "--silent"], { cwd: root, stdio: "pipe" });
    dir = mkdtempSync(path.join(os.tmpdir(), "casefile-keyleak-"));
    erp = await startErp({ dataDir: path.join(dir, "erp"), seed: invoiceSeed });
    // A real HTTP server speaking the Chat Completions API on loopback.
    server = http.createServer((req, res) => {
      let body = "";
      req.on("data", (c: Buffer) => (body += c.toString("utf8")));
      req.on("end", () => {
        const parsed = JSON.parse(body || "{}") as { model?: string };
        seen.push({ path: req.url ?? "", authorization: req.headers.authorization, model: parsed.model });
        res.setHeader("content-type", "application/json");
        if (reject) {
          res.statusCode = 401;
          res.end(
            JSON.stringify({
              error: { message: `Incorrect API key provided: ${key}.`, type: "invalid_request_error", code: "invalid_api_key" },
            }),
          );
          return;
        }
        const answer = { action: "escalate", reason: "The variance is above tolerance.", facts: ["invoice", "po"] };
        res.end(
          JSON.stringify({
            id: "chatcmpl-test",
            object: "chat.completion",
            created: 1,
            model: parsed.model,
            choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content: JSON.stringify(answer), refusal: null } }],
            usage: { prompt_tokens: 300, completion_tokens: 30, total_tokens: 330 },
          }),
        );
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  });

  after(async () => {
    await erp?.close();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    rmSync(dir, { recursive: true, force: true });
  });

  function assertNoKey(what: string, text: Buffer | string): void {
    const bytes = typeof text === "string" ? Buffer.from(text, "utf8") : text;
    assert.equal(bytes.indexOf(key), -1, `the API key appears in ${what}`);
    assert.equal(bytes.indexOf(Buffer.from(key, "utf16le")), -1, `the API key appears in ${what} (UTF-16)`);
  }

  async function runWithKey(name: string): Promise<{ ran: Ran; caseFile: string }> {
    const caseFile = path.join(dir, `${name}.casefile`);
    const env: NodeJS.ProcessEnv = { ...process.env, ERP_URL: erp.url, OPENAI_API_KEY: key };
    delete env.CASEFILE_PROVIDER;
    const provider = JSON.stringify({ kind: "openai", baseUrl });
    const ran = await casefile(
      ["run", workflow, "--case-file", caseFile, "--input", '{"invoiceId":"INV-1001"}', "--provider", provider],
      env,
    );
    return { ran, caseFile };
  }

  function assertNoKeyAnywhere(ran: Ran, caseFile: string): void {
    assertNoKey("stdout", ran.stdout);
    assertNoKey("stderr", ran.stderr);
    assert.ok(existsSync(caseFile), "expected: existsSync(caseFile)");
    assertNoKey("the case file", readFileSync(caseFile));
    // The journal is folded into the database when the CLI closes the case file; whatever is
    // left of it is checked too.
    if (existsSync(`${caseFile}.journal`)) assertNoKey("the journal", readFileSync(`${caseFile}.journal`));
  }

  it("a run that used the server keeps the key out of the case file, the journal, stdout and stderr", async () => {
    seen.length = 0;
    const { ran, caseFile } = await runWithKey("ok");
    assert.equal(ran.code, 0, ran.stderr);
    assert.equal(seen.length, 1, "the agent step called the loopback server once");
    assert.deepEqual(seen[0], { path: "/v1/chat/completions", authorization: `Bearer ${key}`, model: "gpt-4o-mini" });
    const { calls, verdicts } = await records(caseFile);
    assert.equal(calls[0]!.provider, "openai");
    assert.deepEqual(calls[0]!.usage, { promptTokens: 300, completionTokens: 30, totalTokens: 330 });
    assert.equal(verdicts[0]!.verdict, "accepted", "the server's escalate proposal was committed");
    assertNoKeyAnywhere(ran, caseFile);

    const inspected = await casefile(["inspect", caseFile, "--json"], { ...process.env, OPENAI_API_KEY: key });
    assertNoKey("inspect output", inspected.stdout + inspected.stderr);
  });

  it("a model error quoting the key is redacted before it is recorded or printed", async () => {
    seen.length = 0;
    reject = true;
    try {
      const { ran, caseFile } = await runWithKey("rejected");
      assert.equal(ran.code, 1, "the run failed at the agent step");
      assert.equal(seen.length, 1, "401 is not retried");
      assert.match(ran.stderr, /casefile: MODEL_CALL_FAILED: .*failed with HTTP 401: Incorrect API key provided: \[redacted\]/);
      assertNoKeyAnywhere(ran, caseFile);
    } finally {
      reject = false;
    }
  });
});
