import { fork } from "node:child_process";
import * as vscode from "vscode";

/**
 * Runs the bundled CLI (dist/cli.js) in a child process: its exit code, stdout and stderr
 * interleaved (`out`), and stdout alone. `opts.onLine` gets each stdout line as it arrives (the
 * Testing view's `eval --json`); `opts.cancel` kills the child; `opts.env` replaces the editor's
 * environment.
 */
export function runCli(
  extension: vscode.ExtensionContext,
  args: string[],
  cwd: string,
  opts: { env?: NodeJS.ProcessEnv; onLine?: (line: string) => void; cancel?: vscode.CancellationToken } = {},
): Promise<{ code: number | null; out: string; stdout: string }> {
  const cli = vscode.Uri.joinPath(extension.extensionUri, "dist", "cli.js").fsPath;
  return new Promise((resolve) => {
    const child = fork(cli, args, { silent: true, execArgv: [], cwd, ...(opts.env ? { env: opts.env } : {}) });
    const cancelled = opts.cancel?.onCancellationRequested(() => child.kill());
    let text = "";
    let stdout = "";
    let partial = "";
    child.stdout?.on("data", (d: Buffer) => {
      text += d.toString("utf8");
      stdout += d.toString("utf8");
      if (!opts.onLine) return;
      const lines = (partial + d.toString("utf8")).split("\n");
      partial = lines.pop()!;
      for (const line of lines) if (line.trim() !== "") opts.onLine(line);
    });
    child.stderr?.on("data", (d: Buffer) => (text += d.toString("utf8")));
    child.on("exit", (c) => {
      cancelled?.dispose();
      if (opts.onLine && partial.trim() !== "") opts.onLine(partial);
      resolve({ code: c, out: text, stdout });
    });
    child.on("error", (e) => {
      cancelled?.dispose();
      resolve({ code: -1, out: e.message, stdout });
    });
  });
}

/**
 * Confirm, edit or delete a business rule in a case file (the Rules view's actions), through the
 * CLI's `rules` command: one implementation of the rule book's changes and their history.
 * Changing a rule book runs no workflow code, so it is allowed in Restricted Mode.
 */
