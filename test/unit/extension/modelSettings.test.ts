import assert from "node:assert/strict";
import { modelFor } from "../../../src/engine/modelChoice";
import { runModelOf } from "../../../src/engine/providers/index";
import { pickLanguageModel, providerFromSettingValues } from "../../../src/extension/modelSettings";

/** The editor's settings path: casefile.model -> the provider config -> the model each step asks for. */

describe("casefile.model in the editor", () => {
  const step = { model: "gpt-4o-mini" };

  it("is the run's model for openai, Azure (the deployment) and vscode-lm (the family)", () => {
    for (const provider of ["openai", "azure", "vscode-lm"]) {
      const config = providerFromSettingValues({ provider, baseUrl: "http://127.0.0.1:11434/v1", model: " llama3.1 " });
      assert.equal(modelFor("propose", step, runModelOf(config)), "llama3.1", provider);
    }
  });

  it("empty, or the scripted provider: each step asks for its own model", () => {
    assert.equal(modelFor("propose", step, runModelOf(providerFromSettingValues({ provider: "openai", model: "" }))), "gpt-4o-mini");
    assert.equal(providerFromSettingValues({ provider: "scripted", model: "llama3.1" }), undefined);
    assert.equal(
      modelFor("propose", step, runModelOf(providerFromSettingValues({ provider: "scripted", model: "llama3.1" }))),
      "gpt-4o-mini",
    );
  });

  it("refuses a step that pins another model, naming it, with the advice the provider allows", () => {
    const advice: Record<string, RegExp> = {
      // An OpenAI-compatible model and the vscode-lm family may be cleared; Azure's deployment may not.
      openai:
        /agent step "propose" pins "gpt-4o": drop "model" from --provider \(in the editor: clear casefile\.model\), set it to "gpt-4o"/,
      azure:
        /agent step "propose" pins "gpt-4o": Azure calls the deployment named .*cannot be left out: use a deployment named "gpt-4o", or remove pin/,
      "vscode-lm": /agent step "propose" pins "gpt-4o": clear casefile\.model \(the family asked of the editor's language models\)/,
    };
    for (const [provider, expected] of Object.entries(advice)) {
      const config = providerFromSettingValues({ provider, baseUrl: "https://example.openai.azure.com", model: "llama3.1" });
      assert.throws(
        () => modelFor("propose", { model: "gpt-4o", pin: true }, runModelOf(config)),
        (e: Error & { code?: string }) =>
          e.code === "MODEL_PINNED" && expected.test(e.message) && (provider !== "azure" || !/drop/.test(e.message)),
        provider,
      );
    }
  });

  it("vscode-lm answers with the editor's model of the family the request names, else by id; never another", () => {
    const offered = [
      { id: "copilot-gpt-4o-mini", family: "gpt-4o-mini" },
      { id: "copilot-claude-sonnet-4", family: "claude-sonnet" },
    ];
    assert.equal(pickLanguageModel("claude-sonnet", offered).id, "copilot-claude-sonnet-4");
    assert.equal(pickLanguageModel("copilot-gpt-4o-mini", offered).id, "copilot-gpt-4o-mini");
    assert.throws(
      () => pickLanguageModel("llama3.1", offered),
      /^Error: no language model is available in this editor \(vscode\.lm\) for model "llama3\.1"; it offers: gpt-4o-mini \(copilot-gpt-4o-mini\), claude-sonnet \(copilot-claude-sonnet-4\); set casefile\.model to one of these families \(a step that pins "llama3\.1" refuses any other: remove its pin first\)$/,
    );
    assert.throws(
      () => pickLanguageModel("llama3.1", []),
      /no language model is available in this editor \(vscode\.lm\) for model "llama3\.1": it offers none/,
    );
  });
});
