import assert from "node:assert/strict";
import { z } from "zod";
import { isCasefileError } from "../../../src/engine/errors";
import { agent, code, edge } from "../../../src/engine/executors";
import { checkPinnedModels, modelFor, withRunModel, type RunModel } from "../../../src/engine/modelChoice";
import { defineWorkflow } from "../../../src/engine/workflow";

/** The precedence of models: pinned step, then the run's model, then the step's own. */

const Proposal = z.object({ action: z.enum(["pay", "refuse"]), reason: z.string(), facts: z.array(z.string()) });

function workflow() {
  return defineWorkflow({
    name: "models",
    version: 1,
    state: { note: z.string() },
    start: "free",
    executors: {
      free: agent({ proposal: Proposal, model: { model: "gpt-4o-mini", params: { temperature: 0 } }, context: () => [] }),
      pinned: agent({ proposal: Proposal, model: { model: "gpt-4o", pin: true }, context: () => [] }),
      alsoPinned: agent({ proposal: Proposal, model: { model: "o3", pin: true }, context: () => [] }),
      done: code({ owns: ["note"], run: (ctx) => ctx.write("note", "done") }),
    },
    edges: [edge("free", "pinned"), edge("pinned", "alsoPinned"), edge("alsoPinned", "done")],
  });
}

/** A run-level model named by an OpenAI-compatible provider's `model`. */
const openai = (model: string): RunModel => ({ model, provider: "openai" });

const model = (wf: ReturnType<typeof workflow>, id: string) => (wf.executors[id] as { model: { model: string } }).model;

describe("model choice", () => {
  it("modelFor: the run's model replaces the step's; none, empty or the same leaves it", () => {
    assert.equal(modelFor("s", { model: "gpt-4o-mini" }, openai("llama3.1")), "llama3.1");
    assert.equal(modelFor("s", { model: "gpt-4o-mini" }, undefined), "gpt-4o-mini");
    assert.equal(modelFor("s", { model: "gpt-4o-mini" }, openai("")), "gpt-4o-mini");
    assert.equal(modelFor("s", { model: "gpt-4o", pin: true }, openai("gpt-4o")), "gpt-4o");
    assert.equal(modelFor("s", { model: "gpt-4o", pin: true }, undefined), "gpt-4o");
    assert.throws(
      () => modelFor("s", { model: "gpt-4o", pin: true }, openai("llama3.1")),
      (e: unknown) => isCasefileError(e) && e.code === "MODEL_PINNED" && /agent step "s" pins "gpt-4o"/.test(e.message),
    );
  });

  it("checkPinnedModels names every pinned step the run's model conflicts with", () => {
    assert.throws(
      () => checkPinnedModels(workflow(), openai("llama3.1")),
      (e: unknown) =>
        isCasefileError(e) &&
        e.code === "MODEL_PINNED" &&
        e.message.startsWith('the run names model "llama3.1", but agent steps "pinned" pins "gpt-4o", "alsoPinned" pins "o3"') &&
        JSON.stringify(e.details.steps) === '["pinned","alsoPinned"]',
    );
    assert.throws(() => checkPinnedModels(workflow(), openai("gpt-4o")), /agent step "alsoPinned" pins "o3"/);
    checkPinnedModels(workflow(), undefined);
    // An empty run model (a cleared setting) is no run model: nothing to conflict with.
    assert.doesNotThrow(() => checkPinnedModels(workflow(), openai("")), "an empty run model");
  });

  it("MODEL_PINNED's advice is what the provider that named the run's model allows", () => {
    const refusal = (runModel: RunModel, steps: { model: string; pin: true }[]): string => {
      try {
        checkPinnedModels(
          defineWorkflow({
            ...workflowSpecWithoutPins(),
            executors: {
              ...Object.fromEntries(steps.map((m, i) => [`s${i}`, agent({ proposal: Proposal, model: m, context: () => [] })])),
              done: code({ owns: ["note"], run: (ctx) => ctx.write("note", "done") }),
            },
            start: "s0",
            edges: [...steps.slice(1).map((_, i) => edge(`s${i}`, `s${i + 1}`)), edge(`s${steps.length - 1}`, "done")],
          }),
          runModel,
        );
      } catch (e) {
        assert.ok(isCasefileError(e) && e.code === "MODEL_PINNED", `MODEL_PINNED: ${String(e)}`);
        return e.message.slice(e.message.indexOf(": ") + 2);
      }
      throw new Error("not refused");
    };
    const one = [{ model: "gpt-4o", pin: true as const }];
    const two = [...one, { model: "o3", pin: true as const }];
    assert.equal(
      refusal(openai("llama3.1"), one),
      'drop "model" from --provider (in the editor: clear casefile.model), set it to "gpt-4o", or remove pin from the step',
    );
    // Azure's deployment is required: leaving it out is no advice there.
    const azure = refusal({ model: "prod-4o", provider: "azure" }, one);
    assert.equal(
      azure,
      'Azure calls the deployment named ("deployment" in --provider; in the editor: casefile.model), which cannot be left out: ' +
        'use a deployment named "gpt-4o", or remove pin from the step',
    );
    assert.doesNotMatch(azure, /drop/, "nothing tells an Azure user to drop the deployment");
    assert.equal(
      refusal({ model: "claude-sonnet", provider: "vscode-lm" }, one),
      "clear casefile.model (the family asked of the editor's language models) so each step asks for its own, " +
        'set it to "gpt-4o", or remove pin from the step',
    );
    // Two steps pinning two models: no one run model runs both.
    assert.equal(
      refusal(openai("llama3.1"), two),
      'drop "model" from --provider (in the editor: clear casefile.model) so each step asks for its own, or remove pin from the steps',
    );
    assert.equal(
      refusal({ model: "gpt-4o", provider: "azure" }, two),
      'Azure calls the one deployment named ("deployment" in --provider; in the editor: casefile.model), ' +
        'so steps pinning "gpt-4o" and "o3" cannot all run in one Azure run: remove pin from the step',
    );
  });

  it("withRunModel rewrites unpinned steps, keeps params and the graph hash, and leaves the loaded workflow as it was", () => {
    const unpinned = defineWorkflow({ ...workflowSpecWithoutPins() });
    const ran = withRunModel(unpinned, openai("llama3.1"));
    assert.deepEqual(model(ran, "free"), { model: "llama3.1", params: { temperature: 0 } });
    assert.equal(ran.graphHash, unpinned.graphHash, "resuming is unaffected");
    assert.equal(model(unpinned, "free").model, "gpt-4o-mini");
    assert.equal(withRunModel(unpinned, undefined), unpinned);
    // A recorded replay's step asks for the model that answered, whatever the run names.
    assert.equal(model(withRunModel(unpinned, openai("llama3.1"), { free: "gpt-4o-mini" }), "free").model, "gpt-4o-mini");
  });
});

function workflowSpecWithoutPins() {
  return {
    name: "models",
    version: 1,
    state: { note: z.string() },
    start: "free",
    executors: {
      free: agent({ proposal: Proposal, model: { model: "gpt-4o-mini", params: { temperature: 0 } }, context: () => [] }),
      done: code({ owns: ["note"], run: (ctx) => ctx.write("note", "done") }),
    },
    edges: [edge("free", "done")],
  };
}
