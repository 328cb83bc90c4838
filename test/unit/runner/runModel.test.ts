import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { openCaseFile } from "../../../src/casefile/index";
import { requestHash } from "../../../src/engine/contextRequest";
import { isCasefileError } from "../../../src/engine/errors";
import type { ModelProvider, ModelRequest } from "../../../src/engine/model";
import { runModelOf } from "../../../src/engine/providers/index";
import type { AgentCallRecord } from "../../../src/engine/records";
import { pickLanguageModel, providerFromSettingValues } from "../../../src/extension/modelSettings";
import type { ProviderConfig } from "../../../src/protocol/runner";
import { runSession } from "../../../src/runner/session";

/**
 * The model a user names for a run is the model called: a real OpenAI-compatible server on
 * loopback, driven through the real `openai` client, receives it; a step that pins its model
 * refuses a run naming another; the case file, reopened from disk, records what was asked for
 * and what answered.
 */

/** Answers every chat completion like Ollama does: `model` in the answer is the tag that ran. */
class LoopbackServer {
  readonly models: string[] = [];
  private server: Server | undefined;
  url = "";

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      let text = "";
      req.on("data", (c: Buffer) => (text += c.toString("utf8")));
      req.on("end", () => {
        const body = JSON.parse(text) as { model: string };
        this.models.push(body.model);
        res.writeHead(200, { "content-type": "application/json" });
        res.end(
          JSON.stringify({
            id: "chatcmpl-1",
            object: "chat.completion",
            created: 1_700_000_000,
            model: `${body.model}:latest`,
            choices: [
              {
                index: 0,
                message: { role: "assistant", content: '{"action":"pay","reason":"small claim","facts":[]}', refusal: null },
                finish_reason: "stop",
                logprobs: null,
              },
            ],
          }),
        );
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}/v1`;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server!.close(() => resolve()));
  }
}

describe("the model named for a run", function () {
  this.timeout(60_000);
  const server = new LoopbackServer();
  let dir: string;
  before(() => server.start());
  after(() => server.stop());
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "casefile-runmodel-"));
    server.models.length = 0;
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  /** A workflow file with one agent step asking for `model` (the step's own model clause). */
  function workflowFile(model: string): string {
    const file = path.join(dir, "claims.ts");
    writeFileSync(
      file,
      `import { agent, code, defineWorkflow, edge, z } from "casefile";
export default defineWorkflow({
  name: "claims",
  version: 1,
  state: { note: z.string() },
  start: "propose",
  executors: {
    propose: agent({
      proposal: z.object({ action: z.enum(["pay", "refuse"]), reason: z.string(), facts: z.array(z.string()) }),
      model: ${model},
      context: () => [{ role: "user", content: "Decide whether to pay the claim of 40 for a broken window." }],
    }),
    done: code({ owns: ["note"], run: (ctx) => ctx.write("note", "done") }),
  },
  edges: [edge("propose", "done")],
});
`,
    );
    return file;
  }

  const local = (model?: string): ProviderConfig => ({
    kind: "openai",
    baseUrl: server.url,
    apiKeyEnv: "LOCAL_KEY",
    ...(model ? { model } : {}),
  });
  const env = { LOCAL_KEY: "ollama" };

  async function calls(caseFile: string): Promise<AgentCallRecord[]> {
    const store = await openCaseFile(caseFile, { readOnly: true });
    try {
      return store.listAgentCalls();
    } finally {
      store.close();
    }
  }

  it("replaces the step's model: the server is asked for llama3.1, and the case file records it", async () => {
    const workflowPath = workflowFile('{ model: "gpt-4o-mini" }');
    const caseFile = path.join(dir, "claims.casefile");
    const result = await runSession({ kind: "run", workflowPath, caseFile }, { provider: local("llama3.1"), env });
    assert.equal(result.status, "completed", JSON.stringify(result.error));
    assert.deepEqual(server.models, ["llama3.1"]);

    const [call] = await calls(caseFile);
    assert.equal(call!.request.model, "llama3.1", "the request recorded is the request sent");
    assert.equal(call!.answeredBy, "llama3.1:latest", "and the model the server says answered");
    assert.equal(call!.responseId, "chatcmpl-1", "and the server's id for the response (a trace's gen_ai.response.id)");
    assert.equal(call!.provider, "openai");
    assert.equal(call!.hash, requestHash(call!.request), "the hash covers the model that was asked for");
    assert.notEqual(call!.hash, requestHash({ ...call!.request, model: "gpt-4o-mini" }));
  });

  it("without a run-level model, each step asks for its own", async () => {
    const workflowPath = workflowFile('{ model: "gpt-4o-mini" }');
    const caseFile = path.join(dir, "claims.casefile");
    const result = await runSession({ kind: "run", workflowPath, caseFile }, { provider: local(), env });
    assert.equal(result.status, "completed", JSON.stringify(result.error));
    assert.deepEqual(server.models, ["gpt-4o-mini"]);
    assert.equal((await calls(caseFile))[0]!.request.model, "gpt-4o-mini");
  });

  it("a pinned step refuses a run naming another model, naming the step, before any call and without creating the case file", async () => {
    const workflowPath = workflowFile('{ model: "gpt-4o", pin: true }');
    const caseFile = path.join(dir, "claims.casefile");
    await assert.rejects(
      runSession({ kind: "run", workflowPath, caseFile }, { provider: local("llama3.1"), env }),
      (e: unknown) =>
        isCasefileError(e) &&
        e.code === "MODEL_PINNED" &&
        /the run names model "llama3\.1", but agent step "propose" pins "gpt-4o"/.test(e.message),
    );
    assert.deepEqual(server.models, [], "no model was called");
    assert.equal(existsSync(caseFile), false, "the refused run left no case file");

    // Naming the pinned model itself, or none, runs it with the pinned model.
    for (const provider of [local("gpt-4o"), local()]) {
      const file = path.join(dir, `pinned-${server.models.length}.casefile`);
      const result = await runSession({ kind: "run", workflowPath, caseFile: file }, { provider, env });
      assert.equal(result.status, "completed", JSON.stringify(result.error));
      assert.equal((await calls(file))[0]!.request.model, "gpt-4o");
    }
    assert.deepEqual(server.models, ["gpt-4o", "gpt-4o"]);
  });

  it("a pinned step refuses a resume naming another model too", async () => {
    const workflowPath = workflowFile('{ model: "gpt-4o", pin: true }');
    const caseFile = path.join(dir, "claims.casefile");
    const first = await runSession({ kind: "run", workflowPath, caseFile }, { provider: local(), env });
    await assert.rejects(
      runSession({ kind: "resume", caseFile, checkpointId: first.checkpointId }, { provider: local("llama3.1"), env }),
      (e: unknown) => isCasefileError(e) && e.code === "MODEL_PINNED" && /"propose" pins "gpt-4o"/.test(e.message),
    );
  });

  it("a recorded replay asks for the model that answered the recorded call, whatever the run names", async () => {
    const workflowPath = workflowFile('{ model: "gpt-4o-mini" }');
    const caseFile = path.join(dir, "claims.casefile");
    await runSession({ kind: "run", workflowPath, caseFile }, { provider: local("llama3.1"), env });
    const [original] = await calls(caseFile);
    // No run-level model (the scripted default) and another run-level model: both reuse the answer.
    for (const provider of [undefined, local("qwen2.5")]) {
      const replay = await runSession(
        { kind: "replay", caseFile, agentCallId: original!.id, mode: "recorded" },
        { ...(provider ? { provider } : {}), env },
      );
      assert.equal(replay.status, "completed", JSON.stringify(replay.error));
      const call = (await calls(caseFile)).find((c) => c.runId === replay.runId)!;
      assert.equal(call.mode, "recorded");
      assert.equal(call.request.model, "llama3.1");
      assert.equal(call.answeredBy, "llama3.1:latest");
      assert.equal(call.hash, original!.hash);
    }
    assert.deepEqual(server.models, ["llama3.1"], "recorded replays call no model");

    // A live replay calls the model the run names now.
    const live = await runSession(
      { kind: "replay", caseFile, agentCallId: original!.id, mode: "live" },
      { provider: local("qwen2.5"), env },
    );
    assert.equal(live.status, "completed", JSON.stringify(live.error));
    assert.deepEqual(server.models, ["llama3.1", "qwen2.5"]);
    assert.equal((await calls(caseFile)).find((c) => c.runId === live.runId)!.request.model, "qwen2.5");
  });

  it("from the editor's settings: casefile.model is the run's model, for openai and for vscode-lm", async () => {
    const workflowPath = workflowFile('{ model: "gpt-4o-mini" }');
    const openai = providerFromSettingValues({ provider: "openai", baseUrl: server.url, model: "llama3.1" });
    assert.deepEqual(openai, { kind: "openai", apiKeyEnv: "OPENAI_API_KEY", baseUrl: server.url, model: "llama3.1" });
    const viaSettings = path.join(dir, "settings.casefile");
    const result = await runSession(
      { kind: "run", workflowPath, caseFile: viaSettings },
      { provider: openai, env: { OPENAI_API_KEY: "x" } },
    );
    assert.equal(result.status, "completed", JSON.stringify(result.error));
    assert.deepEqual(server.models, ["llama3.1"]);

    // vscode-lm: the runner hands each request to the editor, which picks the model the request
    // names among those it offers (runSessions.ts answerWithLanguageModel); this stands in for the editor.
    const lm = providerFromSettingValues({ provider: "vscode-lm", model: "claude-sonnet" });
    assert.deepEqual(lm, { kind: "vscode-lm", family: "claude-sonnet" });
    const offered = [
      { id: "copilot-gpt-4o-mini", family: "gpt-4o-mini" },
      { id: "copilot-claude-sonnet-4", family: "claude-sonnet" },
    ];
    const asked: string[] = [];
    const editor: ModelProvider = {
      name: "vscode-lm",
      complete: async (request: ModelRequest) => {
        asked.push(request.model);
        const model = pickLanguageModel(request.model, offered);
        return { text: '{"action":"refuse","reason":"late","facts":[]}', meta: { model: model.id } };
      },
    };
    const viaLm = path.join(dir, "lm.casefile");
    const ran = await runSession({ kind: "run", workflowPath, caseFile: viaLm }, { provider: lm, providerInstance: editor, env: {} });
    assert.equal(ran.status, "completed", JSON.stringify(ran.error));
    assert.deepEqual(asked, ["claude-sonnet"]);
    const [call] = await calls(viaLm);
    assert.equal(call!.request.model, "claude-sonnet");
    assert.equal(call!.answeredBy, "copilot-claude-sonnet-4");
    assert.equal(runModelOf(providerFromSettingValues({ provider: "vscode-lm", model: "" })), undefined, "empty: the step's own");
  });
});
