import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { openCaseFile } from "../../../src/casefile/index";
import { isCasefileError } from "../../../src/engine/errors";
import { runSession } from "../../../src/runner/session";

/**
 * One case file per case: a workflow that names its cases from the input (`caseId`) gets
 * `cases/<caseId>.casefile` beside it, each invoice with its own history; a refused input leaves
 * no file (nor folder) behind; a workflow without caseId keeps `<workflow>.casefile`.
 */
const WORKFLOW = `import { code, defineWorkflow, z } from "casefile";
export default defineWorkflow({
  name: "named-cases",
  version: 1,
  state: { seen: z.string() },
  input: z.object({ invoiceId: z.string().min(1) }),
  caseId: (input) => input.invoiceId,
  start: "note",
  executors: {
    note: code({ owns: ["seen"], run(ctx) { ctx.write("seen", (ctx.message as { invoiceId: string }).invoiceId); } }),
  },
  edges: [],
});
`;

describe("case naming: one case file per case", () => {
  let dir = "";
  let workflow = "";
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "casefile-casename-"));
    workflow = path.join(dir, "workflow.ts");
    writeFileSync(workflow, WORKFLOW);
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("puts each invoice's run in cases/<invoiceId>.casefile beside the workflow, each with one run", async () => {
    const first = await runSession({ kind: "run", workflowPath: workflow, input: { invoiceId: "INV-1001" } });
    const second = await runSession({ kind: "run", workflowPath: workflow, input: { invoiceId: "INV-1002" } });
    assert.equal(first.caseFile, path.join(dir, "cases", "INV-1001.casefile"));
    assert.equal(second.caseFile, path.join(dir, "cases", "INV-1002.casefile"));
    assert.equal(first.status, "completed");
    assert.deepEqual(
      readdirSync(path.join(dir, "cases"))
        .filter((f) => f.endsWith(".casefile"))
        .sort(),
      ["INV-1001.casefile", "INV-1002.casefile"],
    );
    const store = await openCaseFile(second.caseFile, { readOnly: true });
    try {
      const runs = store.listRuns();
      assert.equal(runs.length, 1, "INV-1002's case file holds only its own run, not a branch of INV-1001's");
    } finally {
      store.close();
    }
    assert.equal(existsSync(path.join(dir, "workflow.casefile")), false);
  });

  it("refuses an invalid input before any file or folder is made", async () => {
    await assert.rejects(
      runSession({ kind: "run", workflowPath: workflow, input: { invoiceId: "" } }),
      (e: unknown) => isCasefileError(e) && e.code === "INVALID_INPUT" && /invoiceId/.test(e.message),
    );
    assert.deepEqual(readdirSync(dir), ["workflow.ts"]);
  });

  it("refuses an invalid input with a named case file too, leaving no file", async () => {
    const named = path.join(dir, "mine.casefile");
    await assert.rejects(
      runSession({ kind: "run", workflowPath: workflow, caseFile: named, input: {} }),
      (e: unknown) => isCasefileError(e) && e.code === "INVALID_INPUT",
    );
    assert.equal(existsSync(named), false);
  });

  it("follows the configured case folder, relative to the workspace root", async () => {
    const result = await runSession({
      kind: "run",
      workflowPath: workflow,
      caseFolder: "runs/all",
      caseFolderRoot: dir,
      input: { invoiceId: "INV-7" },
    });
    assert.equal(result.caseFile, path.join(dir, "runs", "all", "INV-7.casefile"));
    assert.ok(existsSync(result.caseFile), `the case file ${result.caseFile} exists`);
  });
});
