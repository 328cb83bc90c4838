import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { inspect } from "node:util";
import { isCasefileError } from "../../../src/engine/errors";
import type { ModelRequest } from "../../../src/engine/model";
import { createProvider, defaultFixturePath, OpenAICompatibleProvider, runModelOf, ScriptedProvider } from "../../../src/engine/providers";

const hash = "sha256:" + "c".repeat(64);
const request: ModelRequest = {
  step: "classify",
  hash,
  callIndex: 0,
  messages: [{ role: "user", content: "x" }],
  model: "gpt-4o-mini",
  params: {},
  responseSchema: null,
};
const key = "sk-createprovider-SECRET-998877";

describe("createProvider", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), "casefile-providers-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("defaults the scripted fixture to <workflow>.responses.json beside the workflow and answers from it", async () => {
    const workflow = path.join(dir, "invoice.ts");
    writeFileSync(
      path.join(dir, "invoice.responses.json"),
      JSON.stringify({ responses: [{ step: "classify", response: { action: "approve" } }] }),
    );
    const p = createProvider({ kind: "scripted" }, { workflowPath: workflow, env: {} });
    assert.ok(p instanceof ScriptedProvider, "expected: p instanceof ScriptedProvider");
    assert.equal(p.fixturePath, path.join(dir, "invoice.responses.json"));
    assert.equal((await p.complete(request)).text, '{"action":"approve"}');
  });

  it("resolves a configured fixture relative to the workflow's folder", () => {
    const p = createProvider({ kind: "scripted", fixture: "fixtures/happy.json" }, { workflowPath: path.join(dir, "wf.ts"), env: {} });
    assert.equal((p as ScriptedProvider).fixturePath, path.join(dir, "fixtures", "happy.json"));
  });

  it("strips .ts, .mts and .js from the workflow name for the default fixture", () => {
    assert.equal(defaultFixturePath("/w/flow.ts"), "/w/flow.responses.json");
    assert.equal(defaultFixturePath("/w/flow.mts"), "/w/flow.responses.json");
    assert.equal(defaultFixturePath("/w/flow.workflow.js"), "/w/flow.workflow.responses.json");
  });

  it("reads the OpenAI key from OPENAI_API_KEY, or the variable the config names", () => {
    const a = createProvider({ kind: "openai" }, { workflowPath: "/w/f.ts", env: { OPENAI_API_KEY: key } });
    assert.ok(a instanceof OpenAICompatibleProvider, "expected: a instanceof OpenAICompatibleProvider");
    assert.equal(a.name, "openai");
    const b = createProvider(
      { kind: "openai", apiKeyEnv: "LOCAL_LLM_KEY", baseUrl: "http://127.0.0.1:11434/v1" },
      { workflowPath: "/w/f.ts", env: { LOCAL_LLM_KEY: "ollama" } },
    );
    assert.ok(b instanceof OpenAICompatibleProvider, "expected: b instanceof OpenAICompatibleProvider");
  });

  it("refuses a provider kind it does not know, naming it (a config from a newer version, or a typo)", () => {
    // Kills the mutant of createProvider's default branch message (providers/index.ts).
    assert.throws(
      () => createProvider({ kind: "anthropic" } as unknown as Parameters<typeof createProvider>[0], { workflowPath: "/w/f.ts", env: {} }),
      (e: unknown) => isCasefileError(e) && e.code === "USAGE" && e.message === 'unknown provider kind "anthropic"',
    );
  });

  it("refuses a kind it does not know when asked for the run's model too, the same way", () => {
    // Kills providers/index.ts:39 (runModelOf's default branch): it gave back the config itself as the run's model.
    assert.throws(
      () => runModelOf({ kind: "anthropic", model: "claude" } as unknown as Parameters<typeof runModelOf>[0]),
      (e: unknown) => isCasefileError(e) && e.code === "USAGE" && e.message === 'unknown provider kind "anthropic"',
    );
  });

  it("names the missing variable, not a value, when the key is absent", () => {
    const check = (e: unknown, variable: string): boolean => {
      assert.ok(isCasefileError(e), "expected: isCasefileError(e)");
      assert.equal(e.code, "USAGE");
      assert.match(e.message, new RegExp(`environment variable ${variable} is not set`));
      assert.deepEqual(e.details, { variable });
      return true;
    };
    assert.throws(
      () => createProvider({ kind: "openai" }, { workflowPath: "/w/f.ts", env: { OTHER: key } }),
      (e) => check(e, "OPENAI_API_KEY"),
    );
    assert.throws(
      () => createProvider({ kind: "openai", apiKeyEnv: "MY_KEY" }, { workflowPath: "/w/f.ts", env: { OPENAI_API_KEY: key, MY_KEY: "" } }),
      (e) => check(e, "MY_KEY"),
    );
    assert.throws(
      () =>
        createProvider(
          { kind: "azure", endpoint: "https://x.openai.azure.com", deployment: "d1", apiVersion: "2024-10-21" },
          { workflowPath: "/w/f.ts", env: { OPENAI_API_KEY: key } },
        ),
      (e) => check(e, "AZURE_OPENAI_API_KEY") && /deployment "d1"/.test((e as Error).message),
    );
  });

  it("refuses vscode-lm outside the editor with a clear error", () => {
    assert.throws(
      () => createProvider({ kind: "vscode-lm" }, { workflowPath: "/w/f.ts", env: {} }),
      (e: unknown) =>
        isCasefileError(e) &&
        e.code === "USAGE" &&
        /only available inside VS Code/.test(e.message) &&
        /"scripted", "openai" or "azure"/.test(e.message),
    );
  });

  describe("with a loopback server", () => {
    let server: Server;
    let url = "";
    const seen: { url: string; auth: string | undefined; apiKey: string | undefined; model: string }[] = [];
    before(async () => {
      server = createServer((req, res) => {
        let body = "";
        req.on("data", (c: Buffer) => (body += c.toString("utf8")));
        req.on("end", () => {
          const model = (JSON.parse(body) as { model: string }).model;
          seen.push({
            url: req.url ?? "",
            auth: req.headers.authorization,
            apiKey: req.headers["api-key"] as string | undefined,
            model,
          });
          res.writeHead(200, { "content-type": "application/json" });
          res.end(
            JSON.stringify({
              id: "c1",
              object: "chat.completion",
              created: 1,
              model,
              choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }],
            }),
          );
        });
      });
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });
    after(() => new Promise<void>((resolve) => server.close(() => resolve())));

    it("sends the key from the environment to a compatible base URL, and keeps it out of the provider's printable state", async () => {
      const p = createProvider(
        { kind: "openai", baseUrl: `${url}/v1`, apiKeyEnv: "CASEFILE_TEST_KEY" },
        { workflowPath: "/w/f.ts", env: { CASEFILE_TEST_KEY: key } },
      );
      const r = await p.complete(request);
      assert.equal(r.text, "ok");
      assert.equal(r.usage, undefined);
      assert.deepEqual(seen.at(-1), {
        url: "/v1/chat/completions",
        auth: `Bearer ${key}`,
        apiKey: undefined,
        model: "gpt-4o-mini",
      });
      await assert.rejects(p.complete({ ...request, model: "" }), /step "classify": no model named in the request or the provider/);
      for (const text of [JSON.stringify(p), inspect(p, { depth: 20, showHidden: true }), JSON.stringify(r)])
        assert.ok(!text.includes(key), text);
    });

    it("uses the config's model for a request without one, and names it as the run's model", async () => {
      const config = { kind: "openai", baseUrl: `${url}/v1`, model: "from-config" } as const;
      await createProvider(config, { workflowPath: "/w/f.ts", env: { OPENAI_API_KEY: key } }).complete({ ...request, model: "" });
      assert.equal(seen.at(-1)!.model, "from-config");
      assert.deepEqual(runModelOf(config), { model: "from-config", provider: "openai" });
      assert.equal(runModelOf({ kind: "openai", baseUrl: `${url}/v1` }), undefined);
      assert.deepEqual(runModelOf({ kind: "azure", endpoint: url, deployment: "dep", apiVersion: "2024-10-21" }), {
        model: "dep",
        provider: "azure",
      });
      assert.deepEqual(runModelOf({ kind: "vscode-lm", family: "gpt-4o" }), { model: "gpt-4o", provider: "vscode-lm" });
      assert.equal(runModelOf({ kind: "scripted" }), undefined);
      assert.equal(runModelOf(undefined), undefined);
    });

    it("builds an Azure provider from endpoint, deployment and api-version with the key from AZURE_OPENAI_API_KEY", async () => {
      const p = createProvider(
        { kind: "azure", endpoint: url, deployment: "casefile-dep", apiVersion: "2025-01-01-preview" },
        { workflowPath: "/w/f.ts", env: { AZURE_OPENAI_API_KEY: key } },
      );
      assert.equal(p.name, "azure");
      await p.complete({ ...request, model: "" });
      assert.deepEqual(seen.at(-1), {
        url: "/openai/deployments/casefile-dep/chat/completions?api-version=2025-01-01-preview",
        auth: undefined,
        apiKey: key,
        model: "casefile-dep",
      });
    });
  });
});
