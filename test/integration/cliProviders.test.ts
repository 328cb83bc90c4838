import assert from "node:assert/strict";
import { existsSync, writeFileSync } from "node:fs";
import path from "node:path";
import { openCaseFile } from "../../src/casefile/index";
import { runCli, tempDir } from "./helpers";

/**
 * The CLI as a user runs it: a warning is printed once (the engine logs it and reports it as an
 * event), and a pinned model refuses a run naming another one, in one line, exit 3, with the
 * advice the provider allows.
 */

function flow(dir: string, name: string, extra: string): string {
  const file = path.join(dir, name);
  writeFileSync(
    file,
    `import { code, defineWorkflow, edge, z } from "casefile";
export default defineWorkflow({
  name: "notes",
  version: 1,
  state: { note: z.string() },
  start: "a",
  executors: {
    a: code({ run: () => "go" }),
    b: code({ owns: ["note"], run: (ctx) => { ctx.write("note", "done"); return "next"; } }),
    ${extra}
  },
  edges: [edge("a", "b")${extra ? ', edge("b", "c")' : ""}],
});
`,
  );
  return file;
}

describe("CLI: warnings and pinned models", function () {
  this.timeout(120_000);
  const dir = tempDir("casefile-cli-providers-");

  it("prints a changed graph's warning once on a resume", async () => {
    const v1 = flow(dir, "notes.ts", "");
    const v2 = flow(dir, "notes-v2.ts", 'c: code({ run: (ctx) => { ctx.yield("c ran"); } }),');
    const file = path.join(dir, "notes.casefile");
    const run = await runCli(["run", v1, "--case-file", file]);
    assert.equal(run.code, 0, run.stderr);
    const store = await openCaseFile(file, { readOnly: true });
    const [first] = store.listCheckpoints(store.listRuns()[0]!.id);
    store.close();

    for (const env of [{}, { CASEFILE_EVENTS: "jsonl" }]) {
      const resumed = await runCli(["resume", file, "--checkpoint", first!.id, "--workflow", v2], env);
      assert.equal(resumed.code, 0, resumed.stderr);
      const warnings = resumed.stderr.split("\n").filter((l) => l.startsWith("warning: "));
      assert.deepEqual(warnings, [`warning: graph of "notes" changed since checkpoint "${first!.id}"; executors added: c`], resumed.stderr);
      assert.match(resumed.stdout, /run run-\w+ completed/);
    }
  });

  it("refuses a run naming a model other than the one a step pins: one line, exit 3, no case file", async () => {
    const workflow = path.join(dir, "pinned.ts");
    writeFileSync(
      workflow,
      `import { agent, defineWorkflow, z } from "casefile";
export default defineWorkflow({
  name: "pinned",
  version: 1,
  state: {},
  start: "propose",
  executors: {
    propose: agent({
      proposal: z.object({ action: z.enum(["pay"]), reason: z.string(), facts: z.array(z.string()) }),
      model: { model: "gpt-4o", pin: true },
      context: () => [{ role: "user", content: "Pay?" }],
    }),
  },
  edges: [],
});
`,
    );
    const file = path.join(dir, "pinned.casefile");
    const r = await runCli(
      ["run", workflow, "--case-file", file, "--provider", '{"kind":"openai","baseUrl":"http://127.0.0.1:9/v1","model":"llama3.1"}'],
      { OPENAI_API_KEY: "x" },
    );
    assert.equal(r.code, 3, r.stderr);
    assert.equal(
      r.stderr.trim(),
      'casefile: MODEL_PINNED: the run names model "llama3.1", but agent step "propose" pins "gpt-4o": drop "model" from --provider (in the editor: clear casefile.model), set it to "gpt-4o", or remove pin from the step',
    );
    assert.equal(existsSync(file), false);

    // On Azure the deployment is required: the advice is to name a deployment of the pinned model.
    const azure = await runCli(
      [
        "run",
        workflow,
        "--case-file",
        file,
        "--provider",
        '{"kind":"azure","endpoint":"http://127.0.0.1:9","deployment":"prod-4o-mini","apiVersion":"2024-10-21"}',
      ],
      { AZURE_OPENAI_API_KEY: "x" },
    );
    assert.equal(azure.code, 3, azure.stderr);
    assert.equal(
      azure.stderr.trim(),
      'casefile: MODEL_PINNED: the run names model "prod-4o-mini", but agent step "propose" pins "gpt-4o": Azure calls the deployment named ' +
        '("deployment" in --provider; in the editor: casefile.model), which cannot be left out: use a deployment named "gpt-4o", or remove pin from the step',
    );
    assert.equal(existsSync(file), false, "the refused Azure run left no case file");
  });
});
