import path from "node:path";
import { CasefileDebugSession } from "./session";

/**
 * `casefile dap`: the Casefile debug adapter on stdin/stdout, for any DAP client (nvim-dap,
 * Emacs dap-mode, the tests). The same session class the extension runs inline. The runner is
 * dist/runner.js beside the CLI's bundle. Resolves when the client disconnects.
 */
export function serveStdio(opts: { runnerPath?: string; env?: NodeJS.ProcessEnv } = {}): Promise<number> {
  const session = new CasefileDebugSession({
    runnerPath: opts.runnerPath ?? path.join(__dirname, "runner.js"),
    env: opts.env ?? process.env,
  });
  return new Promise((resolve) => {
    // stdout carries the protocol: nothing else may write there.
    process.on("SIGTERM", () => session.shutdown());
    process.stdin.on("end", () => resolve(0));
    session.start(process.stdin, process.stdout);
  });
}
