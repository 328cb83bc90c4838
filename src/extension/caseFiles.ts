import * as path from "node:path";
import type * as vscode from "vscode";
import type { ChatMessage } from "../engine/records";
import type { CaseStore } from "../engine/store";
import type { ContextView, InspectorViewModel, SuperstepDetailView } from "../protocol/webview";
import type { DetailOptions } from "./viewModel";
import { canRunWorkflowCode } from "./trust";

/**
 * Reads case files for the extension's views and panels. sql.js and the tokenizer are loaded here,
 * on first use, never on activation: `import()` keeps them out of the activation path.
 */

export const CASE_FILE_GLOB = "**/*.casefile";

type Readers = import("../casefile/readers.js").CaseFileReaders;
let readers: Promise<Readers> | undefined;

/** The host's read-only stores of open case files (see casefile/readers.ts), made on first use. */
function caseFileReaders(): Promise<Readers> {
  readers ??= import("../casefile/index.js").then(({ CaseFileReaders }) => new CaseFileReaders());
  return readers;
}

/**
 * Reads a case file as it is on disk now, read-only (no lock: a running workflow may hold it):
 * through the store kept for an open inspector when there is one, else one opened for this read.
 */
export async function readCaseFile<T>(caseFile: vscode.Uri, read: (store: CaseStore) => T): Promise<T> {
  return (await caseFileReaders()).read(caseFile.fsPath, read);
}

/**
 * Builds the inspector's view model: the whole run's, or with `opening` the one it opens with
 * (the run's last supersteps, undefined when they do not hold its decision; see
 * buildOpeningViewModel). The inspector's first load keeps the case file's store open for its
 * later reads (the whole timeline, a superstep's click, a context), until `releaseCaseFile`.
 */
export async function loadInspectorViewModel(caseFile: vscode.Uri, runId: string | undefined): Promise<InspectorViewModel>;
export async function loadInspectorViewModel(
  caseFile: vscode.Uri,
  runId: string | undefined,
  part: "opening",
): Promise<InspectorViewModel | undefined>;
export async function loadInspectorViewModel(
  caseFile: vscode.Uri,
  runId: string | undefined,
  part?: "opening",
): Promise<InspectorViewModel | undefined> {
  const [r, { buildInspectorViewModel, buildOpeningViewModel }] = await Promise.all([caseFileReaders(), import("./viewModel.js")]);
  r.keep(caseFile.fsPath);
  const opts = {
    caseFile: { path: caseFile.fsPath, name: path.basename(caseFile.fsPath) },
    ...(runId !== undefined ? { runId } : {}),
    canRun: canRunWorkflowCode(),
  };
  return r.read(caseFile.fsPath, (store) =>
    part === "opening" ? buildOpeningViewModel(store, opts) : buildInspectorViewModel(store, opts),
  );
}

/** Called when the case file's inspector closes: its kept store is closed. */
export function releaseCaseFile(caseFile: vscode.Uri): void {
  void readers?.then((r) => r.drop(caseFile.fsPath));
}

/** Called when the extension deactivates: every kept store is closed. */
export function closeCaseFileReaders(): void {
  void readers?.then((r) => r.dispose());
  readers = undefined;
}

/** One superstep's details, read when the person selects it. */
export async function loadSuperstepDetail(caseFile: vscode.Uri, runId: string, superstep: number): Promise<SuperstepDetailView> {
  const [r, { buildSuperstepDetail }] = await Promise.all([caseFileReaders(), import("./viewModel.js")]);
  const opts = detailOptions();
  return r.read(caseFile.fsPath, (store) => buildSuperstepDetail(store, runId, superstep, opts));
}

/** One agent step's context, for the Context tab's diff: only that context is built. */
export async function loadContext(
  caseFile: vscode.Uri,
  runId: string,
  superstep: number,
  agentCallId: string,
): Promise<ContextView | { absent: string }> {
  const [r, { buildContextView }] = await Promise.all([caseFileReaders(), import("./viewModel.js")]);
  const opts = detailOptions();
  return r.read(caseFile.fsPath, (store) => buildContextView(store, runId, superstep, agentCallId, opts));
}

function detailOptions(): DetailOptions {
  const countTokens = loadTokenCounter();
  return countTokens
    ? // A message's share of the request: the count with it minus the count of an empty request.
      { countMessageTokens: (m: ChatMessage, model: string) => countTokens([m], model).count - countTokens([], model).count }
    : {};
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
