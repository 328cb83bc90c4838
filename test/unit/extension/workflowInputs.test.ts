import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { z } from "zod";
import {
  fieldStart,
  fieldValue,
  formFields,
  inputsFileFor,
  keepInput,
  keptChoices,
  parseEnvFile,
  readKeptInputs,
} from "../../../src/extension/workflowInputs";

/**
 * The input form's memory and fields: inputs kept beside the workflow in <workflow>.inputs.json
 * (reread from disk, named ones untouched by a new last input), and the fields a zod 4 input
 * schema's JSON Schema gives (choices, defaults, descriptions), checked as a person types.
 */
describe("workflow inputs: kept beside the workflow, and the form's fields", () => {
  let dir = "";
  let workflow = "";
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "casefile-inputs-"));
    workflow = path.join(dir, "workflow.ts");
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("keeps the last input in workflow.inputs.json, offered first next time, without losing the named ones", () => {
    assert.equal(inputsFileFor(workflow), path.join(dir, "workflow.inputs.json"));
    assert.deepEqual(readKeptInputs(workflow).kept, { named: {} });
    writeFileSync(inputsFileFor(workflow), JSON.stringify({ named: { "INV-1001 escalated": { invoiceId: "INV-1001" } } }));
    keepInput(workflow, { invoiceId: "INV-1002" });
    const onDisk = JSON.parse(readFileSync(inputsFileFor(workflow), "utf8")) as unknown;
    assert.deepEqual(onDisk, { last: { invoiceId: "INV-1002" }, named: { "INV-1001 escalated": { invoiceId: "INV-1001" } } });
    const choices = keptChoices(readKeptInputs(workflow).kept);
    assert.deepEqual(
      choices.map((c) => [c.label, c.last]),
      [
        ["Last used", true],
        ["INV-1001 escalated", false],
      ],
    );
    // Using a named input again: it is the last one, listed first, not twice.
    keepInput(workflow, { invoiceId: "INV-1001" }, "INV-1001 escalated");
    assert.deepEqual(
      keptChoices(readKeptInputs(workflow).kept).map((c) => [c.label, c.last]),
      [["INV-1001 escalated", true]],
    );
  });

  it("reports a broken inputs file by name and refuses to overwrite it", () => {
    writeFileSync(inputsFileFor(workflow), "{ not json");
    const { kept, problem } = readKeptInputs(workflow);
    assert.deepEqual(kept, { named: {} });
    assert.match(problem ?? "", /workflow\.inputs\.json is not JSON/);
    assert.throws(() => keepInput(workflow, { a: 1 }), /cannot keep the input: workflow\.inputs\.json is not JSON/);
    assert.equal(readFileSync(inputsFileFor(workflow), "utf8"), "{ not json");
  });

  it("builds the form from zod 4's JSON Schema: choices, defaults, descriptions, required", () => {
    const schema = z.toJSONSchema(
      z.object({
        invoiceId: z.string().min(1).describe("The invoice to check"),
        priority: z.enum(["low", "high"]).default("low"),
        retries: z.number().int().optional(),
        dryRun: z.boolean().optional(),
        erpUrl: z.string().url().optional(),
      }),
      { io: "input" },
    ) as Record<string, unknown>;
    const fields = formFields(schema)!;
    assert.deepEqual(
      fields.map((f) => [f.key, f.kind, f.required]),
      [
        ["invoiceId", "string", true],
        ["priority", "choice", false],
        ["retries", "integer", false],
        ["dryRun", "boolean", false],
        ["erpUrl", "string", false],
      ],
    );
    const [invoiceId, priority, retries, , erpUrl] = fields as [
      (typeof fields)[0],
      (typeof fields)[0],
      (typeof fields)[0],
      unknown,
      (typeof fields)[0],
    ];
    assert.equal(invoiceId.description, "The invoice to check");
    assert.deepEqual(priority.choices, ["low", "high"]);
    assert.equal(fieldStart(priority, undefined), "low");
    assert.equal(fieldStart(invoiceId, "INV-1001"), "INV-1001");
    assert.deepEqual(fieldValue(invoiceId, ""), { problem: "invoiceId is required." });
    assert.deepEqual(fieldValue(invoiceId, "INV-7"), { value: "INV-7" });
    assert.deepEqual(fieldValue(retries, "2.5"), { problem: "retries is a whole number." });
    assert.deepEqual(fieldValue(retries, ""), { omit: true });
    assert.deepEqual(fieldValue(erpUrl, "localhost"), { problem: "erpUrl is a URL, e.g. http://127.0.0.1:4310." });
    assert.deepEqual(fieldValue(priority, "medium"), { problem: 'priority is one of "low", "high".' });
    assert.equal(formFields({ type: "string" }), undefined, "a non-object input goes to the JSON editor");
  });

  it("reads the ERP stand-in's env file", () => {
    assert.deepEqual(parseEnvFile('# written by erp/serve.ts\nERP_URL=http://127.0.0.1:40123\nQUOTED="a b"\n\n'), {
      ERP_URL: "http://127.0.0.1:40123",
      QUOTED: "a b",
    });
  });
});
