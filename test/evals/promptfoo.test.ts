import assert from "node:assert/strict";
import { execFile, execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { startErp, type ErpServer } from "../../examples/erp/server";
import { invoiceSeed } from "../../examples/invoice/erpData";

/**
 * The promptfoo export as promptfoo itself loads it: the real `promptfoo eval` (installed by
 * test/evals/setup-promptfoo.sh into .vscode-test/promptfoo, not a dependency of ours) on a case
 * exported from the invoice example, with a small `file://` provider that answers the recorded
 * response. It passes; with the answer's action changed it fails; and it ran the one test the
 * file holds (promptfoo picks a test file's loader by its extension, and an unknown one loads
 * none, silently). Offline: telemetry and update checks off, its config in a temp folder, and
 * its one remaining request sent to a dead loopback port.
 */

const root = path.resolve(__dirname, "../..");
const cli = path.join(root, "bin", "casefile.js");
const workflow = path.join(root, "examples", "invoice", "workflow.ts");
const promptfoo = path.join(root, ".vscode-test", "promptfoo", "node_modules", ".bin", "promptfoo");

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

function run(file: string, args: string[], env: NodeJS.ProcessEnv, cwd = root): Promise<Ran> {
  return new Promise((resolve) => {
    execFile(file, args, { env, cwd, encoding: "utf8", maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
      const code = err ? (err as { code?: unknown }).code : 0;
      resolve({ code: typeof code === "number" ? code : -1, stdout, stderr });
    });
  });
}

/** The provider: answers the case's recorded response (kept in its metadata), or that answer with `config.action` as its action. */
const PROVIDER = `module.exports = class RecordedAnswer {
  constructor(options) { this.action = (options && options.config && options.config.action) || undefined; }
  id() { return "casefile-recorded-answer"; }
  async callApi(prompt, context) {
    const answer = context.test.metadata.casefile.answer;
    if (!this.action) return { output: answer };
    return { output: JSON.stringify({ ...JSON.parse(answer), action: this.action }) };
  }
};
`;

interface PromptfooResults {
  results: { stats: { successes: number; failures: number; errors: number }; results: { success: boolean; error?: string }[] };
}

describe("promptfoo: the real promptfoo runs an exported case", function () {
  this.timeout(300_000);
  let dir: string;
  let erp: ErpServer;
  let caseYaml: string;
  let offline: NodeJS.ProcessEnv;

  before(async () => {
    assert.ok(existsSync(promptfoo), `promptfoo is not installed at ${promptfoo}: run bash test/evals/setup-promptfoo.sh`);
    execFileSync("npm", ["run", "build", "--silent"], { cwd: root, stdio: "pipe" });
    dir = mkdtempSync(path.join(os.tmpdir(), "casefile-promptfoo-"));
    erp = await startErp({ dataDir: path.join(dir, "erp"), seed: invoiceSeed });
    const env: NodeJS.ProcessEnv = { ...process.env, ERP_URL: erp.url };
    delete env.CASEFILE_PROVIDER;
    const caseFile = path.join(dir, "INV-1001.casefile");
    const ran = await run(process.execPath, [cli, "run", workflow, "--case-file", caseFile, "--input", '{"invoiceId":"INV-1001"}'], env);
    assert.equal(ran.code, 0, ran.stderr);
    // The export's default name, in the default folder beside the case file.
    const exported = await run(
      process.execPath,
      [cli, "export-eval", caseFile, "--step", "3:propose", "--format", "promptfoo", "--json"],
      env,
    );
    assert.equal(exported.code, 0, exported.stderr);
    caseYaml = (JSON.parse(exported.stdout) as { path: string }).path;
    assert.equal(path.dirname(caseYaml), path.join(dir, "evals"), "written into evals/ beside the case file");
    assert.match(path.basename(caseYaml), /\.yaml$/, "a name promptfoo loads as YAML");

    const configDir = path.join(dir, "promptfoo-config");
    mkdirSync(configDir);
    offline = {
      ...process.env,
      PROMPTFOO_DISABLE_TELEMETRY: "1",
      PROMPTFOO_DISABLE_UPDATE: "1",
      PROMPTFOO_CONFIG_DIR: configDir,
      HTTPS_PROXY: "http://127.0.0.1:9",
      HTTP_PROXY: "http://127.0.0.1:9",
      NO_PROXY: "",
    };
    delete offline.NODE_OPTIONS;
    writeFileSync(path.join(dir, "provider.js"), PROVIDER);
  });

  after(async () => {
    await erp?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** Writes a promptfoo config over the exported file and runs `promptfoo eval` on it. */
  async function promptfooEval(name: string, providerConfig: Record<string, unknown>): Promise<{ ran: Ran; out: PromptfooResults }> {
    const config = path.join(dir, `${name}.promptfooconfig.json`);
    const output = path.join(dir, `${name}.results.json`);
    writeFileSync(
      config,
      JSON.stringify({
        description: `casefile export (${name})`,
        prompts: ["{{ messages }}"],
        providers: [{ id: `file://${path.join(dir, "provider.js")}`, config: providerConfig }],
        tests: `file://${caseYaml}`,
      }),
    );
    const ran = await run(promptfoo, ["eval", "-c", config, "--no-cache", "--no-write", "--no-progress-bar", "-o", output], offline, dir);
    assert.ok(existsSync(output), `promptfoo wrote no results (exit ${ran.code}):\n${ran.stdout}\n${ran.stderr}`);
    return { ran, out: JSON.parse(readFileSync(output, "utf8")) as PromptfooResults };
  }

  it("passes with the recorded answer, having run the one test the export holds", async () => {
    const { ran, out } = await promptfooEval("recorded", {});
    assert.deepEqual(
      out.results.stats,
      { ...out.results.stats, successes: 1, failures: 0, errors: 0 },
      `one test, passed:\n${ran.stdout}\n${ran.stderr}`,
    );
    assert.equal(ran.code, 0, `promptfoo exits 0 when every test passes:\n${ran.stdout}\n${ran.stderr}`);
  });

  it("fails when the answer's action changes, saying which check failed", async () => {
    const { ran, out } = await promptfooEval("changed", { action: "request_credit_note" });
    assert.deepEqual(
      out.results.stats,
      { ...out.results.stats, successes: 0, failures: 1, errors: 0 },
      `one test, failed:\n${ran.stdout}\n${ran.stderr}`,
    );
    assert.equal(ran.code, 100, `promptfoo exits 100 when a test fails:\n${ran.stdout}\n${ran.stderr}`);
    const [result] = out.results.results;
    assert.match(result?.error ?? "", /expected_action/, "the failed check is the action's");
  });
});
