import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { suiteConfig } from "./config";

/**
 * Handshake with the harness for what only the browser can see: a webview's DOM. A test writes
 * `<name>.request.json` into the exchange dir; the harness (which drives Chromium) finds the frame
 * showing `waitFor`, reads the text of each selector, performs the clicks, reads again, and writes
 * `<name>.answer.json`. Under @vscode/test-electron there is no browser harness: `askBrowser`
 * returns undefined and the tests that need it say so in their title's outcome.
 */

export interface InspectorDomRequest {
  name: string;
  waitFor: string;
  read: Record<string, string>;
  /** An element whose data-* attributes to return (`dataset`), read with the texts: timings the page records. */
  readDataset?: string;
  /** Return the frame's resource timings (what it fetched, when each fetch ended, ms after the page's start). */
  readResources?: boolean;
  /**
   * Tree rows to open, in order, before the clicks: each is waited for (up to 20 s), clicked only
   * when it shows collapsed (aria-expanded="false"; VS Code may have opened it itself), and waited
   * for until it shows expanded.
   */
  expand?: string[];
  click?: string[];
  /** Posted to the extension as if the webview's script had sent them (after the clicks). */
  postRaw?: unknown[];
  clickAfterRaw?: string[];
  /** Typed on the page's keyboard after the clicks (into whatever has focus: the Debug Console's input, say), each then `press`ed. */
  keys?: { type?: string; press?: string }[];
  /** Waited for (up to 20 s each) after the clicks, before reading: what the host's answers show. */
  waitAfterClicks?: string[];
  readAfterClicks?: Record<string, string>;
}

export interface BrowserChecks {
  found: boolean;
  texts: Record<string, string[]>;
  dataset?: Record<string, string>;
  resources?: { name: string; startTime: number; responseEnd: number }[];
  after?: Record<string, string[]>;
  /** What the webview frame's CSP refused since it loaded (directive and blocked URI). */
  cspViolations?: string[];
  error?: string;
}

export function browserAvailable(): boolean {
  return process.env.CASEFILE_E2E_EXCHANGE !== undefined;
}

const NO_HARNESS = "needs the browser harness (CASEFILE_E2E_EXCHANGE is not set: run `npm run test:e2e`)";

/**
 * `it` for a test that reads a webview's DOM. Without the browser harness (@vscode/test-electron)
 * the test is still registered under its own name and fails saying why: a test that cannot run
 * never passes by not running, in CI or anywhere else.
 */
export function itWithBrowser(title: string, fn: () => Promise<void>): void {
  if (browserAvailable()) {
    it(title, fn);
    return;
  }
  it(`${title} [${NO_HARNESS}]`, () => {
    throw new Error(`"${title}" ${NO_HARNESS}: a test that cannot run fails`);
  });
}

/**
 * For a test whose browser-side half cannot run without the harness: fails in CI, and elsewhere
 * says loudly on the extension host's console which check was left out.
 */
export function browserCheckLeftOut(what: string): void {
  if (process.env.CI) throw new Error(`${what} ${NO_HARNESS}; in CI a check that cannot run fails`);
  console.warn(`SKIPPED CHECK: ${what} ${NO_HARNESS}`);
}

export async function askBrowser(request: InspectorDomRequest, timeoutMs = 90_000): Promise<BrowserChecks> {
  const dir = suiteConfig().exchangeDir;
  const answer = path.join(dir, `${request.name}.answer.json`);
  // Written whole, then renamed into place: the harness polls the folder and must never read half of it.
  const requestFile = path.join(dir, `${request.name}.request.json`);
  writeFileSync(`${requestFile}.tmp`, JSON.stringify(request));
  renameSync(`${requestFile}.tmp`, requestFile);
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (existsSync(answer)) {
      try {
        return JSON.parse(readFileSync(answer, "utf8")) as BrowserChecks;
      } catch {
        /* being written */
      }
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`the harness did not answer ${request.name} within ${timeoutMs / 1000} s`);
}
