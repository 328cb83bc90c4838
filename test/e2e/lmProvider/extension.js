// @ts-check
/**
 * A language model served through VS Code's Language Model API, for the e2e suite only. It
 * stands in for Copilot or any other model an editor offers: Casefile's vscode-lm provider finds
 * it with vscode.lm.selectChatModels and sends it the step's context. Every request it receives is
 * appended to lm-requests.jsonl in the harness's exchange directory, so the suite can compare
 * what the model was sent with what the case file recorded. It answers one fixed proposal for the
 * invoice example (request a credit note), different from the scripted fixture's, so a run shows
 * which provider answered.
 */
const fs = require("node:fs");
const path = require("node:path");
const vscode = require("vscode");

const ANSWER = {
  action: "request_credit_note",
  reason: "Answered by the e2e suite's language model through vscode.lm: ask the supplier for a credit note.",
  facts: ["invoice", "po"],
};

function activate(context) {
  const provider = {
    provideLanguageModelChatInformation() {
      return [
        {
          id: "casefile-test-model",
          name: "Casefile Test Model",
          family: "casefile-test",
          version: "1",
          maxInputTokens: 100000,
          maxOutputTokens: 4000,
          capabilities: {},
        },
      ];
    },
    async provideLanguageModelChatResponse(model, messages, _options, progress) {
      const received = messages.map((m) => ({
        role: m.role === vscode.LanguageModelChatMessageRole.Assistant ? "assistant" : "user",
        content: m.content.map((part) => (part instanceof vscode.LanguageModelTextPart ? part.value : "")).join(""),
      }));
      const exchange = process.env.CASEFILE_E2E_EXCHANGE;
      if (exchange) fs.appendFileSync(path.join(exchange, "lm-requests.jsonl"), JSON.stringify({ model: model.id, messages: received }) + "\n");
      progress.report(new vscode.LanguageModelTextPart(JSON.stringify(ANSWER)));
    },
    provideTokenCount(_model, text) {
      const s = typeof text === "string" ? text : JSON.stringify(text);
      return Math.ceil(s.length / 4);
    },
  };
  context.subscriptions.push(vscode.lm.registerLanguageModelChatProvider("casefile-test", provider));
}

module.exports = { activate, deactivate() {} };
