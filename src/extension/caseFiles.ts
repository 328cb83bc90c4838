import * as path from "node:path";
import type * as vscode from "vscode";
import type { ChatMessage } from "../engine/records";
import type { InspectorViewModel, SuperstepDetailView } from "../protocol/webview";
import { canRunWorkflowCode } from "./trust";

/**
 * Reads case files for the extension's views and panels. sql.js and the tokenizer are loaded here,
 * on first use, never on activation: `import()` keeps them out of the activation path.
 */

export const CASE_FILE_GLOB = "**/*.casefile";

/** Opens the case file read-only (no lock: a running workflow may hold it), builds the view model, closes it. */
export async function loadInspectorViewModel(caseFile: vscode.Uri, runId: string | undefined): Promise<InspectorViewModel> {
  const [{ openCaseFile }, { buildInspectorViewModel }] = await Promise.all([import("../casefile/index.js"), import("./viewModel.js")]);
  const store = await openCaseFile(caseFile.fsPath, { readOnly: true });
  try {
    return buildInspectorViewModel(store, {
      caseFile: { path: caseFile.fsPath, name: path.basename(caseFile.fsPath) },
      ...(runId !== undefined ? { runId } : {}),
      canRun: canRunWorkflowCode(),
    });
  } finally {
    store.close();
  }
}

/** Opens the case file read-only, reads one superstep's details, closes it. */
export async function loadSuperstepDetail(caseFile: vscode.Uri, runId: string, superstep: number): Promise<SuperstepDetailView> {
  const [{ openCaseFile }, { buildSuperstepDetail }] = await Promise.all([import("../casefile/index.js"), import("./viewModel.js")]);
  const countTokens = loadTokenCounter();
  const store = await openCaseFile(caseFile.fsPath, { readOnly: true });
  try {
    return buildSuperstepDetail(store, runId, superstep, {
      // A message's share of the request: the count with it minus the count of an empty request.
      ...(countTokens
        ? { countMessageTokens: (m: ChatMessage, model: string) => countTokens([m], model).count - countTokens([], model).count }
        : {}),
    });
  } finally {
    store.close();
  }
}

type CountTokens = (typeof import("../engine/tokens.js"))["countTokens"];
let tokenCounter: CountTokens | null | undefined;

/**
 * The engine's token counter, from its own bundle beside extension.js (see esbuild.mjs). Without
 * it the inspector still opens; per-message counts then show as "not counted".
 */
function loadTokenCounter(): CountTokens | null {
  if (tokenCounter === undefined) {
    try {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      tokenCounter = (require(path.join(__dirname, "tokenCounter.js")) as { countTokens: CountTokens }).countTokens;
    } catch {
      tokenCounter = null;
    }
  }
  return tokenCounter;
}
