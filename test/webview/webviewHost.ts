import { mkdirSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { pathToFileURL } from "node:url";
import { chromium } from "playwright-core";
import type { Browser, Page } from "playwright-core";
import { bodyClass, themeCss } from "./themes";
import type { Theme } from "./themes";

/**
 * Loads a built webview bundle (media/*.js) into a page of Debian's headless Chromium, the way
 * VS Code hosts it: a CSP as strict as the panel's (default-src 'none', scripts by nonce only),
 * the theme's CSS variables on :root (real values, from ./themes), a `vscode-<theme>` class on body, and `acquireVsCodeApi()`
 * provided by the host. CSP violations are collected in `window.__csp`. Here the host's API is a recorder: what the webview
 * posts lands in `window.__posted`, in order, for the test to read.
 */

export const ROOT = path.resolve(__dirname, "../..");
export const SHOTS = path.join(ROOT, "test-output", "webview");
const CHROMIUM = "/usr/bin/chromium";
const ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

export type { Theme } from "./themes";
const NONCE = "dGVzdC1ub25jZS1mb3ItdGhlLXBhZ2U=";

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: ARGS, headless: true });
}

export async function openWebview(
  browser: Browser,
  opts: {
    script: string;
    styles: string[];
    theme?: Theme;
    width?: number;
    height?: number;
    /** Plays the extension host: called with each message the webview posts, after it is recorded. */
    onPost?: (page: Page, message: { type: string; [k: string]: unknown }) => Promise<void>;
  },
): Promise<Page> {
  const theme = opts.theme ?? "dark";
  const dir = path.join(ROOT, "test-output", "webview", "host");
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${path.basename(opts.script, ".js")}-${theme}.html`);
  const url = (p: string): string => pathToFileURL(path.join(ROOT, p)).toString();
  const themeFile = path.join(dir, `theme-${theme}.css`);
  writeFileSync(themeFile, themeCss(theme));
  writeFileSync(
    file,
    `<!DOCTYPE html>
<html lang="en"><head><meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src file:; font-src file:; img-src file:; script-src 'nonce-${NONCE}'">
<link rel="stylesheet" href="${pathToFileURL(themeFile).toString()}">
${["media/base.css", ...opts.styles].map((s) => `<link rel="stylesheet" href="${url(s)}">`).join("\n")}
<script nonce="${NONCE}">
  window.__csp = [];
  document.addEventListener("securitypolicyviolation", (e) => window.__csp.push(e.violatedDirective + " " + e.blockedURI));
  window.__posted = [];
  window.__state = undefined;
  window.acquireVsCodeApi = () => ({
    postMessage: (m) => {
      window.__posted.push(JSON.parse(JSON.stringify(m)));
      if (window.__onPost) window.__onPost(JSON.parse(JSON.stringify(m)));
    },
    getState: () => window.__state,
    setState: (s) => { window.__state = s; },
  });
</script>
</head>
<body class="${bodyClass(theme)}">
<div id="app" class="app"></div>
<script nonce="${NONCE}" src="${url(opts.script)}"></script>
</body></html>`,
  );
  const page = await browser.newPage({ viewport: { width: opts.width ?? 1280, height: opts.height ?? 800 } });
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(e.message));
  const onPost = opts.onPost;
  if (onPost) await page.exposeFunction("__onPost", (m: { type: string }) => onPost(page, m));
  (page as Page & { errors: string[] }).errors = errors;
  await page.goto(pathToFileURL(file).toString());
  await page.waitForFunction(() => (window as unknown as { __posted: unknown[] }).__posted.length > 0);
  return page;
}

/** What the page's CSP has refused so far (directive and blocked URI). */
export function cspViolations(page: Page): Promise<string[]> {
  return page.evaluate(() => (window as unknown as { __csp: string[] }).__csp);
}

/** What the webview has posted so far. */
export function posted(page: Page): Promise<{ type: string; [k: string]: unknown }[]> {
  return page.evaluate(() => (window as unknown as { __posted: { type: string }[] }).__posted);
}

/** Delivers a message as VS Code does: a `message` event on the webview's window. */
export async function deliver(page: Page, message: unknown): Promise<void> {
  await page.evaluate((m) => window.postMessage(m, "*"), message);
}

export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(SHOTS, { recursive: true });
  const file = path.join(SHOTS, `${name}.png`);
  await page.screenshot({ path: file });
  return file;
}
