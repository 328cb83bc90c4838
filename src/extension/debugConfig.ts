import * as path from "node:path";
import * as vscode from "vscode";
import type { Json } from "../engine/records";
import { askWorkflowInput } from "./inputForm";
import { RUN_MARK } from "./launchTask";
import { providerFromSettingValues } from "./modelSettings";
import { caseFileFor, findWorkflowFiles } from "./runCommands";
import { budgetFromSettings, otelFromSettings } from "./runSessions";
import { canRunWorkflowCode, warnRestricted } from "./trust";

/**
 * The `casefile` debug type's configurations. VS Code calls `provideDebugConfigurations` to fill
 * a new launch.json (Initial) and to list "Casefile" entries in Run and Debug's dropdown
 * (Dynamic); `resolveDebugConfiguration` on every start, first with the configuration as written
 * (empty for F5 with no launch.json: a workflow file in the editor is debugged, asking for its
 * input), then `resolveDebugConfigurationWithSubstitutedVariables` once `${file}` and the like are
 * replaced: there relative paths become absolute and the editor's settings fill what the
 * configuration leaves out, so the adapter (src/debug/, no `vscode`) gets launch arguments that
 * stand on their own, as `casefile dap` gets them from any client.
 */

export const DEBUG_TYPE = "casefile";

export class CasefileConfigurationProvider implements vscode.DebugConfigurationProvider {
  constructor(
    private readonly extension: vscode.ExtensionContext,
    private readonly log: vscode.LogOutputChannel,
  ) {}

  /** Called by VS Code for a new launch.json (Initial) and for the Run and Debug dropdown (Dynamic). */
  async provideDebugConfigurations(folder: vscode.WorkspaceFolder | undefined): Promise<vscode.DebugConfiguration[]> {
    const files = (await findWorkflowFiles()).filter(
      (f) => !folder || vscode.workspace.getWorkspaceFolder(f)?.uri.fsPath === folder.uri.fsPath,
    );
    if (files.length === 0)
      return [{ type: DEBUG_TYPE, request: "launch", name: "Debug workflow", workflow: "${file}", stopOnEntry: true }];
    return files.map((f) => ({
      type: DEBUG_TYPE,
      request: "launch",
      name: `Debug ${vscode.workspace.asRelativePath(f, false)}`,
      workflow: folder ? `\${workspaceFolder}/${path.relative(folder.uri.fsPath, f.fsPath).split(path.sep).join("/")}` : f.fsPath,
      stopOnEntry: true,
    }));
  }

  /**
   * Called by VS Code before variables are substituted. Restricted Mode stops here, with the
   * reason. F5 with no launch.json arrives empty: the workflow is the editor's file (or one
   * picked); a new run with no input asks for it.
   */
  async resolveDebugConfiguration(
    _folder: vscode.WorkspaceFolder | undefined,
    config: vscode.DebugConfiguration,
  ): Promise<vscode.DebugConfiguration | undefined> {
    const trust = canRunWorkflowCode();
    if (!trust.ok) {
      this.log.info("debug session refused: workspace is in Restricted Mode");
      void warnRestricted(trust.reason);
      return undefined;
    }
    // F5 with no launch.json: VS Code passes nothing (or only the type picked in "Select debugger").
    const unwritten = !config.request && !config.name;
    const resolved: vscode.DebugConfiguration = { ...config, type: DEBUG_TYPE };
    if (!resolved.workflow && !resolved.resumeFrom) {
      const workflow = await workflowToDebug();
      if (!workflow) {
        void vscode.window.showInformationMessage("Open a workflow file (one that calls defineWorkflow) to debug it.");
        return undefined;
      }
      resolved.workflow = workflow.fsPath;
    }
    // Unwritten, it runs to the file's first breakpoint, or pauses before the first superstep when it has none.
    if (unwritten) resolved.stopOnEntry ??= !hasBreakpointIn(String(resolved.workflow));
    resolved.name ??= resolved.resumeFrom
      ? `Debug from ${String((resolved.resumeFrom as { checkpoint?: unknown }).checkpoint)}`
      : `Debug ${path.basename(String(resolved.workflow))}`;
    resolved.request ??= "launch";
    return resolved;
  }

  /** Called by VS Code with `${...}` replaced: paths made absolute, defaults from the settings, the input asked for. */
  async resolveDebugConfigurationWithSubstitutedVariables(
    folder: vscode.WorkspaceFolder | undefined,
    config: vscode.DebugConfiguration,
  ): Promise<vscode.DebugConfiguration | undefined> {
    const base = folder?.uri.fsPath ?? (typeof config.workflow === "string" ? path.dirname(config.workflow) : process.cwd());
    const abs = (p: unknown): string | undefined => (typeof p === "string" && p ? path.resolve(base, p) : undefined);
    const out: vscode.DebugConfiguration = { ...config };
    if (out.workflow) out.workflow = abs(out.workflow);
    // Run or Step through this configuration (launchTask.ts): the run's input and case come with it, not from here.
    if (typeof out[RUN_MARK] === "string") return out;
    if (out.inputFile) out.inputFile = abs(out.inputFile);
    if (out.caseFile) out.caseFile = abs(out.caseFile);
    if (out.resumeFrom && typeof out.resumeFrom === "object") {
      const r = out.resumeFrom as { caseFile?: string; checkpoint?: string };
      out.resumeFrom = { ...r, ...(r.caseFile ? { caseFile: abs(r.caseFile) } : {}) };
    }
    if (!out.resumeFrom && out.workflow && !out.caseFile) out.caseFile = caseFileFor(vscode.Uri.file(out.workflow));

    // A new run needs an input: the one written in the configuration, or asked for now.
    if (!out.resumeFrom && out.input === undefined && out.inputFile === undefined) {
      const input = await this.askInput(vscode.Uri.file(out.workflow));
      if (input === undefined) return undefined; // the person dismissed the box: no session
      out.input = input;
    }

    const provider = providerOf(out.provider);
    if (provider) out.provider = provider;
    else delete out.provider; // the runner's default: the scripted model
    if (out.tokenBudget === undefined) {
      const budget = budgetFromSettings(this.log);
      if (budget) out.tokenBudget = budget.hard;
    } else if (out.tokenBudget === 0) delete out.tokenBudget;
    if (out.otel === undefined) {
      const otel = otelFromSettings();
      if (otel) out.otel = otel;
    }
    // Breakpoints in executor code need js-debug attached to the runner: on unless turned off.
    out.debugExecutorCode ??= vscode.workspace.isTrusted;
    return out;
  }

  /** The run's input, from the input form Run and Step use too (inputForm.ts): kept inputs first, then the form or JSON. */
  private async askInput(workflow: vscode.Uri): Promise<Json | undefined> {
    return askWorkflowInput(this.extension, this.log, workflow, `Input for ${path.basename(workflow.fsPath)}`);
  }
}

function hasBreakpointIn(file: string): boolean {
  return vscode.debug.breakpoints.some(
    (b) => b.enabled && b instanceof vscode.SourceBreakpoint && path.resolve(b.location.uri.fsPath) === path.resolve(file),
  );
}

/** The workflow F5 debugs: the editor's file when it is a workflow, else one picked from the workspace. */
async function workflowToDebug(): Promise<vscode.Uri | undefined> {
  const doc = vscode.window.activeTextEditor?.document;
  if (doc && /\.[cm]?ts$/.test(doc.uri.fsPath) && doc.getText().includes("defineWorkflow(")) return doc.uri;
  const files = await findWorkflowFiles();
  if (files.length <= 1) return files[0];
  const picked = await vscode.window.showQuickPick(
    files.map((uri) => ({ label: path.basename(uri.fsPath), description: vscode.workspace.asRelativePath(uri), uri })),
    { title: "Debug Workflow", placeHolder: "Workflow file" },
  );
  return picked?.uri;
}

/**
 * The configuration's `provider` as the adapter takes it: a provider name (launch.json) becomes
 * the provider with the casefile.* settings' base URL and model, an object is passed as written,
 * and none means the casefile.provider setting.
 */
function providerOf(value: unknown): unknown {
  if (value !== undefined && typeof value !== "string") return value;
  const config = vscode.workspace.getConfiguration("casefile");
  return providerFromSettingValues({
    provider: typeof value === "string" ? value : config.get<string>("provider", "scripted"),
    baseUrl: config.get<string>("baseUrl", ""),
    model: config.get<string>("model", ""),
    azureApiVersion: config.get<string>("azureApiVersion", "2024-10-21"),
  });
}
