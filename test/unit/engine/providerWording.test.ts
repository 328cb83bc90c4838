import assert from "node:assert/strict";
import { isCasefileError } from "../../../src/engine/errors";
import { createProvider, defaultFixturePath, FixedProvider } from "../../../src/engine/providers/index";
import type { ModelRequest } from "../../../src/engine/model";

/**
 * What choosing a provider tells the person running the CLI, word for word with the details a
 * script gets (a missing key names the variable and where it was for; vscode-lm outside the
 * editor names the kind), the default fixture's name for each workflow file extension, and the
 * fixed provider's refusals. Each names the slip in providers/index.ts or fixed.ts it catches.
 */

const opts = { workflowPath: "/w/f.ts", env: {} };

function refusal(f: () => unknown): { code: string; message: string; details: Record<string, unknown> } {
  try {
    f();
  } catch (e) {
    assert.ok(isCasefileError(e), `a CasefileError: ${String(e)}`);
    return { code: e.code, message: e.message, details: e.details };
  }
  throw new Error("not refused");
}

describe("providers: refusals word for word", () => {
  it("a missing OpenAI key names the variable, and the base URL it was for when there is one", () => {
    assert.deepEqual(
      refusal(() => createProvider({ kind: "openai" }, opts)),
      {
        code: "USAGE",
        message:
          "no API key: the environment variable OPENAI_API_KEY is not set or empty (a local server that needs no key accepts any value)",
        details: { variable: "OPENAI_API_KEY" },
      },
    );
    assert.equal(
      refusal(() => createProvider({ kind: "openai", baseUrl: "http://127.0.0.1:11434/v1" }, opts)).message,
      "no API key for http://127.0.0.1:11434/v1: the environment variable OPENAI_API_KEY is not set or empty (a local server that needs no key accepts any value)",
    );
    assert.equal(
      refusal(() =>
        createProvider({ kind: "azure", endpoint: "https://x.openai.azure.com", deployment: "d1", apiVersion: "2024-10-21" }, opts),
      ).message,
      'no API key for Azure OpenAI deployment "d1": the environment variable AZURE_OPENAI_API_KEY is not set or empty (a local server that needs no key accepts any value)',
    );
  });

  it("vscode-lm outside the editor is refused in full, naming the kind in the details", () => {
    assert.deepEqual(
      refusal(() => createProvider({ kind: "vscode-lm" }, opts)),
      {
        code: "USAGE",
        message:
          'the "vscode-lm" provider (VS Code Language Model API) is only available inside VS Code, where the runner asks the editor to make each call; ' +
          'from the CLI choose "scripted", "openai" or "azure"',
        details: { kind: "vscode-lm" },
      },
    );
  });

  it("the default fixture drops .ts, .mts, .cts, .js, .mjs and .cjs, and keeps any other extension", () => {
    for (const ext of [".ts", ".mts", ".cts", ".js", ".mjs", ".cjs"]) {
      assert.equal(defaultFixturePath(`/w/flow${ext}`), "/w/flow.responses.json", ext);
    }
    assert.equal(defaultFixturePath("/w/flow.json"), "/w/flow.json.responses.json", "not a script: kept");
    assert.equal(defaultFixturePath("/w/flow.xts"), "/w/flow.xts.responses.json", "anchored at the dot");
    assert.equal(defaultFixturePath("/w/flow.tsx"), "/w/flow.tsx.responses.json", "anchored at the end");
    assert.equal(defaultFixturePath("/w/flow"), "/w/flow.responses.json", "no extension");
  });
});

describe("fixed provider: refusals word for word", () => {
  const request = (step: string): ModelRequest => ({
    step,
    hash: "sha256:" + "c".repeat(64),
    callIndex: 4,
    messages: [],
    model: "m",
    params: {},
    responseSchema: {},
  });

  it("another step's call names both steps and the hash, with step, hash and call in the details", async () => {
    await assert.rejects(new FixedProvider("classify", "{}").complete(request("review")), (e: unknown) => {
      assert.ok(isCasefileError(e), `a CasefileError: ${String(e)}`);
      assert.equal(e.code, "MODEL_RESPONSE_MISSING");
      assert.equal(
        e.message,
        `no fixed response for step "review" (hash sha256:${"c".repeat(64)}): this provider answers step "classify" only`,
      );
      assert.deepEqual(e.details, { step: "review", hash: `sha256:${"c".repeat(64)}`, callIndex: 4 });
      return true;
    });
  });

  it("an aborted call has the step in its details; its own step gets the text with where it came from", async () => {
    const ac = new AbortController();
    ac.abort();
    await assert.rejects(
      new FixedProvider("classify", "{}").complete(request("classify"), ac.signal),
      (e: unknown) => isCasefileError(e) && e.code === "MODEL_CALL_FAILED" && JSON.stringify(e.details) === '{"step":"classify"}',
    );
    assert.deepEqual(await new FixedProvider("classify", '{"a":1}').complete(request("classify")), {
      text: '{"a":1}',
      meta: { fixed: "classify" },
    });
  });
});
