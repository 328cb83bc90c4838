import * as path from "node:path";

/**
 * What the harness tells the suite, through the extension host's environment (code-server and
 * VS Code pass their environment on to it). Read by the suite index and by tests.
 */
export interface SuiteConfig {
  mode: "trusted" | "restricted" | "newcomer";
  /** Where the suite writes its SuiteResult as JSON. */
  resultFile: string;
  /** The workspace folder the harness prepared, holding the fixture case file. */
  workspace: string;
  /** A directory for handshakes with the harness (browser-side checks). */
  exchangeDir: string;
}

export function suiteConfig(): SuiteConfig {
  const given = process.env.CASEFILE_E2E_MODE;
  const mode = given === "restricted" || given === "newcomer" ? given : "trusted";
  const resultFile = process.env.CASEFILE_E2E_RESULT ?? path.join(__dirname, "result.json");
  return {
    mode,
    resultFile,
    workspace: process.env.CASEFILE_E2E_WORKSPACE ?? "",
    exchangeDir: process.env.CASEFILE_E2E_EXCHANGE ?? path.dirname(resultFile),
  };
}
