import * as path from "node:path";
import * as vscode from "vscode";
import type { Json } from "../engine/records";
import type { ActionResult } from "./runCommands";
import { replayStep, resumeFrom } from "./runCommands";
import type { RunSessions } from "./runSessions";
import { canRunWorkflowCode, warnRestricted } from "./trust";

/**
 * Fork with edited state: the checkpoint's state opens as JSON in an editor (a file in the
 * extension's storage, not the workspace); each save forks a branch with the changed keys as a
 * patch. The runner validates the patch against the workflow's state schemas; when it refuses,
 * its error is shown as a diagnostic on the key at fault, in the editor and the Problems panel.
 */
export class ForkEditor implements vscode.Disposable {
  private readonly diagnostics = vscode.languages.createDiagnosticCollection("casefile-fork");
  private readonly open = new Map<string, { caseFile: vscode.Uri; checkpointId: string; original: Record<string, Json> }>();
  /** Files holding an agent step's context for an edited replay: file path -> the step. */
  private readonly replays = new Map<string, { caseFile: vscode.Uri; agentCallId: string }>();
  private readonly disposables: vscode.Disposable[] = [];
  /** The outcome of the last save of each fork file: read by the e2e suite. */
  readonly lastOutcome = new Map<string, ActionResult>();

  constructor(
    private readonly extension: vscode.ExtensionContext,
    private readonly sessions: RunSessions,
    private readonly log: vscode.LogOutputChannel,
  ) {
    this.disposables.push(
      this.diagnostics,
      vscode.workspace.onDidSaveTextDocument((doc) => void this.saved(doc)),
    );
  }

  /** Called by the inspector's "Fork with edited state" and the forkWithEditedState command. */
  async edit(caseFile: vscode.Uri, checkpointId: string): Promise<ActionResult & { file?: string }> {
    const trust = canRunWorkflowCode();
    if (!trust.ok) {
      void warnRestricted(trust.reason);
      return trust;
    }
    const { openCaseFile } = await import("../casefile/index.js");
    const store = await openCaseFile(caseFile.fsPath, { readOnly: true });
    let state: Record<string, Json>;
    try {
      const checkpoint = store.getCheckpoint(checkpointId);
      if (!checkpoint) return { ok: false, reason: `No checkpoint ${checkpointId} in ${path.basename(caseFile.fsPath)}.` };
      state = store.readValues(checkpoint.keys);
    } finally {
      store.close();
    }
    const dir = vscode.Uri.joinPath(this.extension.globalStorageUri, "forks");
    await vscode.workspace.fs.createDirectory(dir);
    const file = vscode.Uri.joinPath(dir, `${checkpointId.replace(/[^\w.-]+/g, "_")}.state.json`);
    await vscode.workspace.fs.writeFile(file, Buffer.from(JSON.stringify(state, null, 2) + "\n"));
    this.open.set(file.fsPath, { caseFile, checkpointId, original: state });
    this.diagnostics.delete(file);
    await vscode.window.showTextDocument(file, { preview: false });
    const message = `State at ${checkpointId} opened for editing: save to fork a branch with your changes.`;
    void vscode.window.showInformationMessage(message);
    return { ok: true, message, file: file.fsPath };
  }

  /**
   * Replay (edited): the step's recorded context opens as JSON messages; each save replays the
   * step with the saved messages instead of the context built from state. Called by the inspector's
   * Replay step (edited) and the replayStep command.
   */
  async editReplay(caseFile: vscode.Uri, agentCallId: string): Promise<ActionResult & { file?: string }> {
    const trust = canRunWorkflowCode();
    if (!trust.ok) {
      void warnRestricted(trust.reason);
      return trust;
    }
    const { openCaseFile } = await import("../casefile/index.js");
    const store = await openCaseFile(caseFile.fsPath, { readOnly: true });
    let messages: unknown;
    try {
      const call = store.getAgentCall(agentCallId);
      if (!call) return { ok: false, reason: `No agent step ${agentCallId} in ${path.basename(caseFile.fsPath)}.` };
      messages = call.request.messages;
    } finally {
      store.close();
    }
    const dir = vscode.Uri.joinPath(this.extension.globalStorageUri, "replays");
    await vscode.workspace.fs.createDirectory(dir);
    const file = vscode.Uri.joinPath(dir, `${agentCallId.replace(/[^\w.-]+/g, "_")}.messages.json`);
    await vscode.workspace.fs.writeFile(file, Buffer.from(JSON.stringify(messages, null, 2) + "\n"));
    this.replays.set(file.fsPath, { caseFile, agentCallId });
    this.diagnostics.delete(file);
    await vscode.window.showTextDocument(file, { preview: false });
    const message = `Context of ${agentCallId} opened for editing: save to replay the step with it.`;
    void vscode.window.showInformationMessage(message);
    return { ok: true, message, file: file.fsPath };
  }

  /** Called on save of an edited-replay file: replays the step with the saved messages. */
  private async replaySaved(doc: vscode.TextDocument, replay: { caseFile: vscode.Uri; agentCallId: string }): Promise<void> {
    const { ChatMessageSchema } = await import("../protocol/runner.js");
    let parsed: ReturnType<typeof ChatMessageSchema.array>["_output"];
    try {
      const result = ChatMessageSchema.array().safeParse(JSON.parse(doc.getText()));
      if (!result.success) throw new Error(`${result.error.issues[0]?.path.join(".") || "(root)"}: ${result.error.issues[0]?.message}`);
      parsed = result.data;
    } catch (e) {
      this.show(doc, [
        new vscode.Diagnostic(new vscode.Range(0, 0, 0, 1), `Messages are a JSON array of {role, content}: ${(e as Error).message}`),
      ]);
      this.lastOutcome.set(doc.uri.fsPath, { ok: false, reason: (e as Error).message });
      return;
    }
    this.diagnostics.delete(doc.uri);
    const result = await replayStep(this.sessions, this.log, replay.caseFile, replay.agentCallId, "edited", parsed);
    this.lastOutcome.set(doc.uri.fsPath, result);
  }

  /** Called by VS Code when any document is saved; acts only on the fork and replay files it opened. */
  private async saved(doc: vscode.TextDocument): Promise<void> {
    const replay = this.replays.get(doc.uri.fsPath);
    if (replay) return this.replaySaved(doc, replay);
    const fork = this.open.get(doc.uri.fsPath);
    if (!fork) return;
    let edited: unknown;
    try {
      edited = JSON.parse(doc.getText());
    } catch (e) {
      this.show(doc, [new vscode.Diagnostic(new vscode.Range(0, 0, 0, 1), `Not JSON: ${(e as Error).message}`)]);
      this.lastOutcome.set(doc.uri.fsPath, { ok: false, reason: "not JSON" });
      return;
    }
    if (typeof edited !== "object" || edited === null || Array.isArray(edited)) {
      this.show(doc, [new vscode.Diagnostic(new vscode.Range(0, 0, 0, 1), "The state is an object of keys.")]);
      return;
    }
    const patch: Record<string, Json> = {};
    for (const [key, value] of Object.entries(edited as Record<string, Json>)) {
      if (JSON.stringify(value) !== JSON.stringify(fork.original[key])) patch[key] = value;
    }
    if (Object.keys(patch).length === 0) {
      void vscode.window.showInformationMessage("No key changed: nothing to fork.");
      return;
    }
    const result = await resumeFrom(this.sessions, this.log, fork.caseFile, fork.checkpointId, patch);
    this.lastOutcome.set(doc.uri.fsPath, result);
    if (result.ok) {
      this.diagnostics.delete(doc.uri);
      void vscode.window.showInformationMessage(`Forked: ${result.message}`);
      return;
    }
    // Put the error on the key it names (or the first changed key), where the person typed it.
    const named = Object.keys(patch).find((k) => result.reason.includes(`"${k}"`) || result.reason.includes(k)) ?? Object.keys(patch)[0]!;
    const at = doc.getText().indexOf(`"${named}"`);
    const start = at >= 0 ? doc.positionAt(at) : new vscode.Position(0, 0);
    const range = new vscode.Range(start, start.translate(0, named.length + 2));
    const diagnostic = new vscode.Diagnostic(range, result.reason, vscode.DiagnosticSeverity.Error);
    diagnostic.source = "casefile";
    this.show(doc, [diagnostic]);
    void vscode.window.showErrorMessage(`The edited state was refused: ${result.reason}`);
  }

  private show(doc: vscode.TextDocument, diagnostics: vscode.Diagnostic[]): void {
    this.diagnostics.set(doc.uri, diagnostics);
  }

  /** The diagnostics on a fork file: read by the e2e suite. */
  diagnosticsOf(uri: vscode.Uri): readonly vscode.Diagnostic[] {
    return this.diagnostics.get(uri) ?? [];
  }

  dispose(): void {
    for (const d of this.disposables.splice(0)) d.dispose();
  }
}
