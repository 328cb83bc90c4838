/**
 * The debug adapter layer: a DAP session (`@vscode/debugadapter`) over workflow runs, below the
 * editor (no `vscode` import). The extension runs it inline:
 * `new vscode.DebugAdapterInlineImplementation(new CasefileDebugSession({ runnerPath, env }))`;
 * `casefile dap` serves it on stdio (debugAdapter.ts).
 */
export { CasefileDebugSession, type CasefileDebugSessionOptions } from "./session";
export { INSPECTOR_EVENT, EXCEPTION_FILTERS, LaunchArgumentsSchema, type InspectorEvent, type LaunchArguments } from "../protocol/debug";
