import assert from "node:assert/strict";
import { z } from "zod";
import { isCasefileError } from "../../../src/engine/errors";
import { agent, code, edge } from "../../../src/engine/executors";
import { checkPinnedModels, modelFor, withRunModel, type RunModel } from "../../../src/engine/modelChoice";
import { defineWorkflow } from "../../../src/engine/workflow";

/**
 * MODEL_PINNED as a script reads it (--json details: the run's model, its provider, the steps and
 * the models they pin), the editor's advice when two models are pinned, and which workflow object
 * a run gets back. Each names the slip in modelChoice.ts it catches.
 */

const Proposal = z.object({ action: z.enum(["pay"]), reason: z.string(), facts: z.array(z.string()) });

function workflow(pins: Record<string, { model: string; pin?: true }>) {
  const ids = Object.keys(pins);
  return defineWorkflow({
    name: "pins",
    version: 1,
    state: { note: z.string() },
    start: ids[0]!,
    executors: {
      ...Object.fromEntries(ids.map((id) => [id, agent({ proposal: Proposal, model: pins[id]!, context: () => [] })])),
      done: code({ owns: ["note"], run: (ctx) => ctx.write("note", "done") }),
    },
    edges: [...ids.slice(1).map((id, i) => edge(ids[i]!, id)), edge(ids[ids.length - 1]!, "done")],
  });
}

function refusal(f: () => unknown): { message: string; details: Record<string, unknown> } {
  try {
    f();
  } catch (e) {
    assert.ok(isCasefileError(e) && e.code === "MODEL_PINNED", `MODEL_PINNED: ${String(e)}`);
    return { message: e.message, details: e.details };
  }
  throw new Error("not refused");
}

describe("model choice: MODEL_PINNED in full", () => {
  it("two steps pinning the same model: plural wording naming that model, and the details a script reads", () => {
    const wf = workflow({ a: { model: "gpt-4o", pin: true }, b: { model: "gpt-4o", pin: true }, c: { model: "gpt-4o-mini" } });
    const r = refusal(() => checkPinnedModels(wf, { model: "o3", provider: "openai" }));
    assert.equal(
      r.message,
      'the run names model "o3", but agent steps "a" pins "gpt-4o", "b" pins "gpt-4o": ' +
        'drop "model" from --provider (in the editor: clear casefile.model), set it to "gpt-4o", or remove pin from the steps',
    );
    assert.deepEqual(r.details, { runModel: "o3", provider: "openai", steps: ["a", "b"], pinned: ["gpt-4o", "gpt-4o"] });
  });

  it("in the editor with two different pinned models, the advice is to clear the family, not to name one", () => {
    const wf = workflow({ a: { model: "gpt-4o", pin: true }, b: { model: "o3", pin: true } });
    const r = refusal(() => checkPinnedModels(wf, { model: "o3", provider: "vscode-lm" }));
    assert.equal(
      r.message,
      'the run names model "o3", but agent step "a" pins "gpt-4o": ' +
        "clear casefile.model (the family asked of the editor's language models) so each step asks for its own, or remove pin from the step",
    );
    assert.deepEqual(r.details, { runModel: "o3", provider: "vscode-lm", steps: ["a"], pinned: ["gpt-4o"] });
  });

  it("a run's model that changes no step gives the loaded workflow back as it is", () => {
    const wf = workflow({ a: { model: "gpt-4o", pin: true }, b: { model: "gpt-4o" } });
    const runModel: RunModel = { model: "gpt-4o", provider: "openai" };
    assert.equal(withRunModel(wf, runModel), wf, "nothing to rewrite: the same object");
    assert.equal(withRunModel(wf, runModel, { b: "gpt-4o" }), wf, "an override naming the step's own model rewrites nothing");
    const rewritten = withRunModel(wf, undefined, { b: "o3" });
    assert.notEqual(rewritten, wf, "an override that changes a model gives a new workflow");
    assert.equal((rewritten.executors.b as { model: { model: string } }).model.model, "o3");
    assert.equal((wf.executors.b as { model: { model: string } }).model.model, "gpt-4o", "the loaded workflow is not mutated");
  });

  it("modelFor's refusal of a pinned step advises naming the pinned model", () => {
    const r = refusal(() => modelFor("s", { model: "gpt-4o", pin: true }, { model: "o3", provider: "openai" }));
    assert.equal(
      r.message,
      'the run names model "o3", but agent step "s" pins "gpt-4o": ' +
        'drop "model" from --provider (in the editor: clear casefile.model), set it to "gpt-4o", or remove pin from the step',
    );
  });

  it("withRunModel refuses naming every conflicting pinned step, not only the first it rewrites", () => {
    const wf = workflow({ a: { model: "gpt-4o", pin: true }, b: { model: "gpt-4o", pin: true } });
    assert.deepEqual(refusal(() => withRunModel(wf, { model: "o3", provider: "openai" })).details.steps, ["a", "b"]);
  });
});
