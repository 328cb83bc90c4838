import * as vscode from "vscode";
import { CasefileDebugSession } from "../debug/index";
import { pickLanguageModel } from "./modelSettings";

/**
 * The casefile debug adapter, run inline in the extension host: the same DAP session class
 * `casefile dap` serves on stdio (src/debug/session.ts, no `vscode`), given what only the editor
 * knows: where the bundled runner is, the environment with the API keys from SecretStorage, and
 * VS Code's Language Model API for runs whose provider is `vscode-lm`. A bundle of its own
 * (esbuild.mjs), loaded by debugSessions.ts when the first session starts.
 */
export function inlineAdapter(opts: {
  runnerPath: string;
  env: NodeJS.ProcessEnv;
  log: vscode.LogOutputChannel;
}): vscode.DebugAdapterDescriptor {
  const session = new CasefileDebugSession({
    runnerPath: opts.runnerPath,
    env: opts.env,
    // js-debug is attached by debugSessions.ts, which says when (casefile/executorDebuggerAttached).
    // Step Into at a boundary then pauses js-debug on the first line of the executor code the
    // superstep calls (src/runner/stepInto.ts): the editor shows it, Continue or Step Out there
    // comes back to this session at the next boundary.
    waitForExecutorDebugger: true,
    answerModelRequest: (request) => answerWithLanguageModel(request, opts.log),
  });
  return new vscode.DebugAdapterInlineImplementation(session);
}

/** One model call of a debugged run, through vscode.lm (the model the request names: casefile.model or the step's own). */
async function answerWithLanguageModel(
  request: { step: string; messages: { role: string; content: string }[]; model: string },
  log: vscode.LogOutputChannel,
): Promise<{ ok: true; text: string; model?: string } | { ok: false; error: string }> {
  try {
    const model = pickLanguageModel(request.model, await vscode.lm.selectChatModels());
    // The LM API has no system role: system messages go first as user messages.
    const messages = request.messages.map((m) =>
      m.role === "assistant" ? vscode.LanguageModelChatMessage.Assistant(m.content) : vscode.LanguageModelChatMessage.User(m.content),
    );
    const response = await model.sendRequest(messages, {});
    let text = "";
    for await (const part of response.text) text += part;
    return { ok: true, text, model: model.id };
  } catch (e) {
    const error = e instanceof Error ? e.message : String(e);
    log.error(`model request for ${request.step} failed: ${error}`);
    return { ok: false, error };
  }
}
