import assert from "node:assert/strict";
import { isCasefileError } from "../../../src/engine/errors";
import type { ModelRequest } from "../../../src/engine/model";
import { FixedProvider } from "../../../src/engine/providers/index";

function request(step: string): ModelRequest {
  return {
    step,
    hash: "sha256:" + "a".repeat(64),
    callIndex: 0,
    messages: [{ role: "user", content: "x" }],
    model: "gpt-4o-mini",
    params: {},
    responseSchema: {},
  };
}

describe("FixedProvider", () => {
  it("answers its step with the text it was made with, every time", async () => {
    const p = new FixedProvider("classify", '{"action":"ship"}');
    assert.equal((await p.complete(request("classify"))).text, '{"action":"ship"}');
    assert.equal((await p.complete({ ...request("classify"), callIndex: 3 })).text, '{"action":"ship"}');
    assert.equal(p.name, "fixed", "the provider an agent call records (inspect shows it)");
    assert.deepEqual((await p.complete(request("classify"))).meta, { fixed: "classify" }, "says which fixed step answered");
  });

  it("refuses another step with MODEL_RESPONSE_MISSING naming both steps", async () => {
    await assert.rejects(
      new FixedProvider("classify", "{}").complete(request("draft")),
      (e: unknown) =>
        isCasefileError(e) &&
        e.code === "MODEL_RESPONSE_MISSING" &&
        /step "draft"/.test(e.message) &&
        /answers step "classify" only/.test(e.message) &&
        JSON.stringify(e.details) === JSON.stringify({ step: "draft", hash: "sha256:" + "a".repeat(64), callIndex: 0 }),
    );
  });

  it("refuses an aborted call", async () => {
    const ac = new AbortController();
    ac.abort();
    await assert.rejects(
      new FixedProvider("classify", "{}").complete(request("classify"), ac.signal),
      (e: unknown) =>
        isCasefileError(e) &&
        e.code === "MODEL_CALL_FAILED" &&
        e.message === 'step "classify": the call was aborted' &&
        e.details.step === "classify",
    );
  });
});
