import { existsSync, readFileSync, rmSync } from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import { parseEnvFile } from "./workflowInputs";

/**
 * What a workflow's launch configuration starts first, for the Workflows view's Run and Step:
 * the same `preLaunchTask` and `envFile` F5 uses (examples/.vscode/launch.json: the "ERP
 * stand-in" task, which picks a free port and writes `ERP_URL=...` to examples/.erp/erp.env once
 * it listens). Run does not go through a debug session (the casefile adapter has no noDebug
 * mode yet): it starts the task if it is not running, waits for the env file, and gives the runner
 * that environment. A workflow with no casefile launch configuration starts nothing.
 */

interface LaunchNeeds {
  name: string;
  preLaunchTask?: string;
  envFile?: string;
}

/** The first casefile launch configuration of the workflow's folder that runs this workflow file. */
export function launchNeedsOf(workflow: vscode.Uri): LaunchNeeds | undefined {
  const folder = vscode.workspace.getWorkspaceFolder(workflow);
  if (!folder) return undefined;
  const configs = vscode.workspace.getConfiguration("launch", folder).get<Record<string, unknown>[]>("configurations", []);
  const sub = (v: unknown): string | undefined =>
    typeof v === "string" ? path.resolve(folder.uri.fsPath, v.replace(/\$\{workspaceFolder\}/g, folder.uri.fsPath)) : undefined;
  const mine = configs.find((c) => c.type === "casefile" && sub(c.workflow) === path.resolve(workflow.fsPath));
  if (!mine) return undefined;
  return {
    name: String(mine.name),
    ...(typeof mine.preLaunchTask === "string" ? { preLaunchTask: mine.preLaunchTask } : {}),
    ...(sub(mine.envFile) ? { envFile: sub(mine.envFile) } : {}),
  };
}

/**
 * Starts the configuration's preLaunchTask unless it runs already, then waits (up to `timeoutMs`)
 * for its env file; the environment the runner gets on top of the editor's. Refuses with a
 * sentence when the task is not found, ends before it is ready, or the file does not appear.
 */
export async function prepareLaunch(
  workflow: vscode.Uri,
  log: vscode.LogOutputChannel,
  timeoutMs = 60_000,
): Promise<{ ok: true; env: Record<string, string> } | { ok: false; reason: string }> {
  const needs = launchNeedsOf(workflow);
  if (!needs) return { ok: true, env: {} };
  if (needs.preLaunchTask) {
    const running = vscode.tasks.taskExecutions.find((e) => e.task.name === needs.preLaunchTask);
    if (!running) {
      const task = (await vscode.tasks.fetchTasks()).find((t) => t.name === needs.preLaunchTask);
      if (!task)
        return {
          ok: false,
          reason: `The launch configuration "${needs.name}" names the task "${needs.preLaunchTask}", which tasks.json does not define.`,
        };
      // A file left by an earlier run of the task names an address nobody listens on any more.
      if (needs.envFile) rmSync(needs.envFile, { force: true });
      log.info(`run: starting task "${task.name}" (preLaunchTask of "${needs.name}")`);
      let ended = false;
      const sub = vscode.tasks.onDidEndTask((e) => {
        if (e.execution.task.name === task.name) ended = true;
      });
      try {
        await vscode.tasks.executeTask(task);
        if (needs.envFile) {
          const t0 = Date.now();
          while (!existsSync(needs.envFile)) {
            if (ended) return { ok: false, reason: `The task "${task.name}" ended before it was ready: see its terminal.` };
            if (Date.now() - t0 > timeoutMs)
              return {
                ok: false,
                reason: `The task "${task.name}" did not write ${path.basename(needs.envFile)} within ${timeoutMs / 1000} s: see its terminal.`,
              };
            await new Promise((r) => setTimeout(r, 100));
          }
          log.info(`run: task "${task.name}" ready after ${Date.now() - t0} ms`);
        }
      } finally {
        sub.dispose();
      }
    }
  }
  if (!needs.envFile) return { ok: true, env: {} };
  if (!existsSync(needs.envFile))
    return {
      ok: false,
      reason: `${needs.envFile} does not exist: start the task that writes it (${needs.preLaunchTask ?? "none named"}).`,
    };
  return { ok: true, env: parseEnvFile(readFileSync(needs.envFile, "utf8")) };
}
