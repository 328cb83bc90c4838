import * as path from "node:path";
import * as vscode from "vscode";

/**
 * How an Experiment panel gets opened (light: part of the extension's entry bundle; the panel
 * and zod load only when one opens). casefile.openExperiment takes
 *   - a results file's Uri (`*.experiment.json`: the path the CLI prints, the Explorer, "Open With");
 *   - an eval case file's Uri or a Testing view item (anything with a `uri`): the results files
 *     beside that case that ran it, the newest first, opened on that case;
 *   - nothing: a pick of the workspace's results files.
 */

export const EXPERIMENT_GLOB = "**/*.experiment.json";

export type OpenResult = { ok: true; message?: string } | { ok: false; reason: string };

export async function openExperiment(extension: vscode.ExtensionContext, log: vscode.LogOutputChannel, arg: unknown): Promise<OpenResult> {
  const uri = arg instanceof vscode.Uri ? arg : hasUri(arg) ? arg.uri : undefined;
  let target: { file: vscode.Uri; focus?: string } | undefined;
  if (uri && uri.fsPath.endsWith(".experiment.json")) target = { file: uri };
  else if (uri) target = await resultsFor(uri);
  else target = await pick(await vscode.workspace.findFiles(EXPERIMENT_GLOB, "**/node_modules/**"), "Open Experiment");
  if (!target) {
    const reason = uri
      ? `No experiment results (*.experiment.json) beside ${path.basename(uri.fsPath)} ran it: run \`casefile experiment ${vscode.workspace.asRelativePath(path.dirname(uri.fsPath))} --variant NAME=SPEC ...\`.`
      : "No experiment results file chosen.";
    if (uri) void vscode.window.showInformationMessage(reason);
    return { ok: false, reason };
  }
  const { ExperimentPanel } = await import("./experimentPanel.js");
  const panel = await ExperimentPanel.show(extension.extensionUri, log, target.file, target.focus);
  return { ok: true, message: panel.panel.title };
}

function hasUri(value: unknown): value is { uri: vscode.Uri } {
  return typeof value === "object" && value !== null && (value as { uri?: unknown }).uri instanceof vscode.Uri;
}

/** The results files in the case file's folder whose cases include it, newest first, with the id of its (first) case there. */
async function resultsFor(caseFile: vscode.Uri): Promise<{ file: vscode.Uri; focus?: string } | undefined> {
  const dir = vscode.Uri.file(path.dirname(caseFile.fsPath));
  let entries: [string, vscode.FileType][];
  try {
    entries = await vscode.workspace.fs.readDirectory(dir);
  } catch {
    return undefined;
  }
  const found: { file: vscode.Uri; focus: string; mtime: number }[] = [];
  for (const [name] of entries.filter(([n, t]) => t === vscode.FileType.File && n.endsWith(".experiment.json"))) {
    const file = vscode.Uri.joinPath(dir, name);
    try {
      // Only which cases it holds: the panel parses the whole file with its schema.
      const data = JSON.parse(new TextDecoder().decode(await vscode.workspace.fs.readFile(file))) as {
        cases?: { id?: unknown; file?: unknown }[];
      };
      const c = (data.cases ?? []).find((x) => typeof x.file === "string" && path.resolve(dir.fsPath, x.file) === caseFile.fsPath);
      if (c && typeof c.id === "string") found.push({ file, focus: c.id, mtime: (await vscode.workspace.fs.stat(file)).mtime });
    } catch {
      // Not JSON or unreadable: not one of ours to offer.
    }
  }
  found.sort((a, b) => b.mtime - a.mtime);
  if (found.length <= 1) return found[0];
  const chosen = await pick(
    found.map((f) => f.file),
    `Experiments that ran ${path.basename(caseFile.fsPath)}`,
  );
  return chosen && found.find((f) => f.file.toString() === chosen.file.toString());
}

async function pick(files: vscode.Uri[], title: string): Promise<{ file: vscode.Uri } | undefined> {
  if (files.length === 0) return undefined;
  if (files.length === 1) return { file: files[0]! };
  const picked = await vscode.window.showQuickPick(
    files.map((uri) => ({ label: path.basename(uri.fsPath, ".experiment.json"), description: vscode.workspace.asRelativePath(uri), uri })),
    { title, placeHolder: "Experiment results file" },
  );
  return picked && { file: picked.uri };
}

/**
 * "Open With… > Experiment" on a results file (a custom editor of priority "option": JSON stays
 * the default editor). Like the case file's editor (authoring.ts), it hands the file to the panel
 * and closes its own tab: the panel is the one place a results file is shown.
 */
export class ExperimentEditor implements vscode.CustomReadonlyEditorProvider {
  static readonly viewType = "casefile.experiment";

  openCustomDocument(uri: vscode.Uri): vscode.CustomDocument {
    return { uri, dispose: () => undefined };
  }

  /** Called by VS Code when the person opens a results file with this editor. */
  async resolveCustomEditor(document: vscode.CustomDocument, panel: vscode.WebviewPanel): Promise<void> {
    panel.webview.options = { enableScripts: false, localResourceRoots: [] };
    panel.webview.html = `<!DOCTYPE html><html><head><meta http-equiv="Content-Security-Policy" content="default-src 'none'"></head><body><p>Opening the Experiment panel…</p></body></html>`;
    await vscode.commands.executeCommand("casefile.openExperiment", document.uri);
    panel.dispose();
  }
}
