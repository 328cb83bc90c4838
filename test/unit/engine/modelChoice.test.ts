import assert from "node:assert/strict";
import { z } from "zod";
import { isCasefileError } from "../../../src/engine/errors";
import { agent, code, edge } from "../../../src/engine/executors";
import { checkPinnedModels, modelFor, withRunModel } from "../../../src/engine/modelChoice";
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

const model = (wf: ReturnType<typeof workflow>, id: string) => (wf.executors[id] as { model: { model: string } }).model;

describe("model choice", () => {
  it("modelFor: the run's model replaces the step's; none, empty or the same leaves it", () => {
    assert.equal(modelFor("s", { model: "gpt-4o-mini" }, "llama3.1"), "llama3.1");
    assert.equal(modelFor("s", { model: "gpt-4o-mini" }, undefined), "gpt-4o-mini");
    assert.equal(modelFor("s", { model: "gpt-4o-mini" }, ""), "gpt-4o-mini");
    assert.equal(modelFor("s", { model: "gpt-4o", pin: true }, "gpt-4o"), "gpt-4o");
    assert.equal(modelFor("s", { model: "gpt-4o", pin: true }, undefined), "gpt-4o");
    assert.throws(
      () => modelFor("s", { model: "gpt-4o", pin: true }, "llama3.1"),
      (e: unknown) => isCasefileError(e) && e.code === "MODEL_PINNED" && /agent step "s" pins "gpt-4o"/.test(e.message),
    );
  });

  it("checkPinnedModels names every pinned step the run's model conflicts with", () => {
    assert.throws(
      () => checkPinnedModels(workflow(), "llama3.1"),
      (e: unknown) =>
        isCasefileError(e) &&
        e.code === "MODEL_PINNED" &&
        e.message.startsWith('the run names model "llama3.1", but agent steps "pinned" pins "gpt-4o", "alsoPinned" pins "o3"') &&
        JSON.stringify(e.details.steps) === '["pinned","alsoPinned"]',
    );
    assert.throws(() => checkPinnedModels(workflow(), "gpt-4o"), /agent step "alsoPinned" pins "o3"/);
    checkPinnedModels(workflow(), undefined);
    // An empty run model (a cleared setting) is no run model: nothing to conflict with.
    assert.doesNotThrow(() => checkPinnedModels(workflow(), ""), "an empty run model");
  });

  it("withRunModel rewrites unpinned steps, keeps params and the graph hash, and leaves the loaded workflow as it was", () => {
    const unpinned = defineWorkflow({ ...workflowSpecWithoutPins() });
    const ran = withRunModel(unpinned, "llama3.1");
    assert.deepEqual(model(ran, "free"), { model: "llama3.1", params: { temperature: 0 } });
    assert.equal(ran.graphHash, unpinned.graphHash, "resuming is unaffected");
    assert.equal(model(unpinned, "free").model, "gpt-4o-mini");
    assert.equal(withRunModel(unpinned, undefined), unpinned);
    // A recorded replay's step asks for the model that answered, whatever the run names.
    assert.equal(model(withRunModel(unpinned, "llama3.1", { free: "gpt-4o-mini" }), "free").model, "gpt-4o-mini");
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
