import { execFile } from "node:child_process";
import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";

export const root = path.resolve(__dirname, "../..");
export const cliPath = path.join(root, "bin", "casefile.js");
export const runnerPath = path.join(root, "dist", "runner.js");

export function tempDir(prefix = "casefile-test-"): string {
  return mkdtempSync(path.join(os.tmpdir(), prefix));
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the built CLI as a user would, in a child process (asynchronously, so servers in this process keep answering). */
export async function runCli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliResult> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [cliPath, ...args], {
      env: { ...process.env, ...env },
      encoding: "utf8",
    });
    return { code: 0, stdout, stderr };
  } catch (e) {
    const err = e as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof err.code === "number" ? err.code : -1, stdout: err.stdout ?? "", stderr: err.stderr ?? "" };
  }
}
