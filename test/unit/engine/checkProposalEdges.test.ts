import assert from "node:assert/strict";
import { z } from "zod";
import { checkProposal, describeContextChange } from "../../../src/engine/agentStep";
import type { Json } from "../../../src/engine/records";

/**
 * What the agent step tells a person about a model's answer it rejects, at the edges: no fact
 * to cite at all, several unknown citations, an action that is not a string, a schema with no
 * action list, extracts and fields of facts; and how a replayed context changed when only a role
 * did. Each names the slip in agentStep.ts it catches.
 */

const Proposal = z.object({ action: z.enum(["pay", "refuse"]), reason: z.string(), facts: z.array(z.string()) });
const fact = (value: Json) => ({ value, provenance: { source: "crm://claims/C-1", sourceVersion: "v3", readAt: "t" } });
const extract = (value: Json) => ({
  value,
  from: "claimPdf",
  source: "dms://C-1.pdf",
  sourceVersion: "v1",
  sourceHash: "sha256:0",
  extractedAt: "t",
});
const answer = (o: Record<string, Json>) => JSON.stringify({ action: "pay", reason: "small", facts: [], ...o });

describe("checkProposal: the rejection a person reads", () => {
  // kills agentStep.ts:175 StringLiteral "none" -> ""
  it("citing anything when no fact was given says none were", () => {
    assert.deepEqual(checkProposal({ proposal: Proposal }, answer({ facts: ["claim"] }), { note: "x" }), {
      rejection: { code: "UNKNOWN_FACT", message: 'proposal cites "claim", not among the facts it was given (none)' },
    });
  });

  // kills both agentStep.ts:175 StringLiteral ", " -> "" (the citations, the facts given)
  it("names every unknown citation, and lists facts and extracts as citable (a value alone is no fact)", () => {
    const state = { claim: fact(1), claimText: extract("text"), loose: { value: 3 } } as unknown as Record<string, Json>;
    assert.deepEqual(checkProposal({ proposal: Proposal }, answer({ facts: ["loose", "claim", "bank.balance"] }), state), {
      rejection: {
        code: "UNKNOWN_FACT",
        message: 'proposal cites "loose", "bank.balance", not among the facts it was given (claim, claimText)',
      },
    });
    assert.deepEqual(checkProposal({ proposal: Proposal }, answer({ facts: ["claimText", "claim.amount"] }), state), {
      proposal: { action: "pay", reason: "small", facts: ["claimText", "claim.amount"] },
    });
  });

  it("an action that is not a string is the schema's to refuse, at its path", () => {
    const r = checkProposal({ proposal: Proposal }, answer({ action: 7 }), {});
    assert.equal("rejection" in r && r.rejection.code, "SCHEMA_VIOLATION");
    assert.match("rejection" in r ? r.rejection.message : "", /^proposal does not match its schema at "action": /);
  });

  it("a schema without an action list lets any action through to the schema", () => {
    const free = z.object({ action: z.string(), facts: z.array(z.string()) });
    assert.deepEqual(checkProposal({ proposal: free }, JSON.stringify({ action: "anything", facts: [] }), {}), {
      proposal: { action: "anything", facts: [] },
    });
  });

  it("JSON null is the schema's to refuse at the root; text that is no JSON says what the parser said", () => {
    const r = checkProposal({ proposal: Proposal }, "null", {});
    assert.match("rejection" in r ? r.rejection.message : "", /^proposal does not match its schema at "\(root\)": /);
    let parser = "";
    try {
      JSON.parse("Sure!");
    } catch (e) {
      parser = (e as Error).message;
    }
    assert.deepEqual(checkProposal({ proposal: Proposal }, "Sure!", {}), {
      rejection: { code: "BAD_JSON", message: `model answer is not valid JSON: ${parser}` },
    });
  });

  // kills agentStep.ts:169 ArrayDeclaration ["Stryker was here"]
  it("facts that are no list cite nothing", () => {
    const loose = z.object({ action: z.enum(["pay"]), facts: z.unknown() });
    assert.deepEqual(checkProposal({ proposal: loose }, JSON.stringify({ action: "pay", facts: "claim" }), {}), {
      proposal: { action: "pay", facts: "claim" },
    });
  });
});

describe("describeContextChange: a role changed, text the same", () => {
  // kills agentStep.ts:189 ConditionalExpression m.role !== after[j]!.role -> false; agentStep.ts:194 EqualityOperator p <= a.length;
  // agentStep.ts:194 ConditionalExpression p < a.length -> true loops for ever on equal texts (a timeout)
  it("names the message whose role changed, from the end of its text", () => {
    assert.equal(
      describeContextChange([{ role: "user", content: "hi" }], [{ role: "system", content: "hi" }]),
      'message 0 (system) differs from character 2: was "", now ""',
    );
  });

  it("shows 40 characters from where the text differs", () => {
    const a = "x".repeat(10) + "a".repeat(50);
    const b = "x".repeat(10) + "b".repeat(50);
    assert.equal(
      describeContextChange([{ role: "user", content: a }], [{ role: "user", content: b }]),
      `message 0 (user) differs from character 10: was "${"a".repeat(40)}", now "${"b".repeat(40)}"`,
    );
  });
});
