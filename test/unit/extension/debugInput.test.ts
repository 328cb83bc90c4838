import assert from "node:assert/strict";
import path from "node:path";
import { describeWorkflow } from "../../../src/runner/describe";
import { inputOutline, inputProblem, inputSkeleton } from "../../../src/extension/debugInput";

/**
 * The input box F5 shows for a workflow with no launch.json: prefilled from the workflow's own
 * input schema (as describe reports it), and what it says about a wrong input before a session starts.
 */

async function invoiceSchema(): Promise<Record<string, unknown> | undefined> {
  const described = await describeWorkflow(path.resolve(__dirname, "../../../examples/invoice/workflow.ts"));
  assert.ok(described.ok, `the workflow describes: ${JSON.stringify(described)}`);
  return described.inputSchema;
}

describe("extension/debugInput: the input F5 asks for", () => {
  it("prefills the invoice example's required field and names the optional one", async () => {
    const schema = await invoiceSchema();
    assert.equal(JSON.stringify(inputSkeleton(schema)), '{"invoiceId":""}');
    assert.equal(inputOutline(schema), "invoiceId: string (required), erpUrl: string uri");
  });

  it("refuses text that is not JSON, a missing required field and a field of the wrong type, and takes a good input", async () => {
    const schema = await invoiceSchema();
    assert.match(inputProblem("{invoiceId:", schema) ?? "", /^Not JSON/);
    assert.equal(inputProblem("{}", schema), 'Missing "invoiceId" (required).');
    assert.equal(inputProblem('{"invoiceId": 1001}', schema), '"invoiceId" is a string, not a number.');
    assert.equal(inputProblem("[]", schema), "The input is a JSON object: { ... }.");
    assert.equal(inputProblem('{"invoiceId": "INV-1001"}', schema), undefined);
  });

  it("uses defaults and first choices, and takes any JSON when the workflow declares no input schema", () => {
    const schema = {
      type: "object",
      properties: { mode: { type: "string", enum: ["fast", "full"] }, limit: { type: "integer", default: 10 }, note: { type: "string" } },
      required: ["mode", "limit"],
    };
    assert.deepEqual(inputSkeleton(schema), { mode: "fast", limit: 10 });
    assert.equal(inputProblem('{"mode": "slow", "limit": 1}', schema), '"mode" is one of "fast", "full".');
    assert.equal(inputProblem('{"mode": "full", "limit": 1.5}', schema), '"limit" is an integer, not a number.');
    assert.deepEqual(inputSkeleton(undefined), {});
    assert.equal(inputProblem("42", undefined), undefined);
  });
});
