import * as assert from "node:assert/strict";
import type { Browser, Page } from "playwright-core";
import { MemoryStore } from "../../src/casefile/index";
import { buildInspectorViewModel } from "../../src/extension/viewModel";
import { commitInvoiceRun, INVOICE_RUN } from "../fixtures/casefile/fixture";
import { deliver, launchBrowser, openWebview } from "./webviewHost";

/**
 * The Run Inspector's notice line (media/inspector.js in headless Chromium): a notice says what
 * happened or why not, and goes once it is stale (a run started or ended, the run moved on) or
 * when the person dismisses it.
 */

const caseFile = { path: "/workspace/invoice.casefile", name: "invoice.casefile" };

async function open(browser: Browser): Promise<{ page: Page; store: MemoryStore }> {
  const store = new MemoryStore();
  commitInvoiceRun(store);
  const page = await openWebview(browser, { script: "media/inspector.js", styles: ["media/codicon.css", "media/inspector.css"] });
  await deliver(page, { type: "load", model: buildInspectorViewModel(store, { caseFile, runId: INVOICE_RUN, canRun: { ok: true } }) });
  await page.waitForSelector(`body[data-loaded="${INVOICE_RUN}"]`);
  return { page, store };
}

const visible = (page: Page): Promise<boolean> => page.$eval("#notice", (e) => e.classList.contains("visible"));

describe("Run Inspector notices (headless Chromium)", function () {
  let browser: Browser;
  before(async () => {
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
  });

  it("clears a warning once a run starts, and on Dismiss", async () => {
    const { page } = await open(browser);
    await deliver(page, { type: "notice", level: "warning", message: "No workflow is running." });
    await page.waitForSelector("#notice.visible.warning");
    await page.waitForTimeout(1100); // older than the load-and-outcome pair an action sends together
    await deliver(page, { type: "runState", state: "running", runId: "run-2" });
    await page.waitForSelector("#run-controls[data-state=running]");
    assert.equal(await visible(page), false, "'No workflow is running.' goes once one runs");

    await deliver(page, { type: "notice", level: "error", message: "Cannot show this case file: locked" });
    await page.waitForSelector("#notice.visible.error");
    await page.click("#notice .notice-close");
    assert.equal(await visible(page), false, "Dismiss hides the notice");
    await page.close();
  });

  it("keeps an action's outcome when the case file's reload arrives right after it", async () => {
    const { page, store } = await open(browser);
    const run = store.getRun(INVOICE_RUN)!;
    store.commit({ runs: [{ ...run, status: "completed", updatedAt: "2026-12-01T10:00:00.000Z" }] });
    await deliver(page, { type: "notice", level: "info", message: "Run run-1 completed." });
    await page.waitForSelector("#notice.visible.info");
    await deliver(page, { type: "load", model: buildInspectorViewModel(store, { caseFile, runId: INVOICE_RUN, canRun: { ok: true } }) });
    await page.waitForSelector("header .status-completed");
    assert.equal(await visible(page), true, "the outcome stays through the reload its own run caused");
    await page.close();
  });
});
