import assert from "node:assert/strict";
import path from "node:path";
import type { ModelRequest } from "../../../src/engine/model";
import { ProviderConfigSchema } from "../../../src/protocol/provider";
import { providerFor } from "../../../src/runner/provider";

/** The scripted provider's `latencyMs`: how bench:postgres rehearses a hosted model's wait offline. */
describe("scripted provider with latencyMs", () => {
  const workflowPath = path.resolve(__dirname, "../../../examples/supplier/workflow.ts");
  const request: ModelRequest = {
    step: "review",
    messages: [],
    model: "m",
    params: {},
    responseSchema: {},
    hash: "sha256:x",
    callIndex: 0,
  };

  it("answers the fixture's response, no sooner than the latency after the call", async () => {
    const provider = providerFor({ kind: "scripted", latencyMs: 300 }, { workflowPath, env: {} });
    const started = process.hrtime.bigint();
    const answer = await provider.complete(request);
    const waitedMs = Number(process.hrtime.bigint() - started) / 1e6;
    assert.equal((JSON.parse(answer.text) as { action: string }).action, "onboard", "the fixture's answer for the review step");
    // A lower bound only: a timer never fires early; how late it fires depends on the machine.
    assert.ok(waitedMs >= 299, `answered after ${waitedMs.toFixed(0)} ms, before the 300 ms latency`);
    assert.equal(provider.name, "scripted", "still reported as the scripted provider");
  });

  it("ends the wait when the call is aborted, refusing it as an aborted call", async () => {
    const provider = providerFor({ kind: "scripted", latencyMs: 600_000 }, { workflowPath, env: {} });
    const abort = new AbortController();
    setTimeout(() => abort.abort(), 20);
    await assert.rejects(
      provider.complete(request, abort.signal),
      (e: Error & { code?: string }) => e.code === "MODEL_CALL_FAILED" && /aborted/.test(e.message),
    );
  });

  it("takes a whole number of milliseconds, from 0 to ten minutes", () => {
    for (const bad of [-1, 1.5, 600_001, "300"]) {
      assert.equal(
        ProviderConfigSchema.safeParse({ kind: "scripted", latencyMs: bad }).success,
        false,
        `latencyMs ${JSON.stringify(bad)} refused`,
      );
    }
    assert.equal(ProviderConfigSchema.safeParse({ kind: "scripted", latencyMs: 0 }).success, true, "0: no latency");
  });
});
