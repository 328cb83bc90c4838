import * as assert from "node:assert/strict";
import type { Browser, Page } from "playwright-core";
import { MemoryStore } from "../../src/casefile/index";
import { buildInspectorViewModel } from "../../src/extension/viewModel";
import { commitInvoiceRun, INVOICE_BRANCH, INVOICE_RUN } from "../fixtures/casefile/fixture";
import { deliver, launchBrowser, openWebview } from "./webviewHost";

/**
 * The Run Inspector's `reveal` (sent when a failed eval case's "Open Step in Run Inspector" opens
 * it): the panel shows the named step of the run, on its Decision tab, whether the message comes
 * after the run is shown or before (then when that run loads). Headless Chromium, media/inspector.js.
 */

const caseFile = { path: "/workspace/invoice.casefile", name: "invoice.casefile" };

function model(runId: string) {
  const store = new MemoryStore();
  commitInvoiceRun(store);
  return buildInspectorViewModel(store, { caseFile, runId, canRun: { ok: true } });
}

async function open(browser: Browser): Promise<Page> {
  return openWebview(browser, { script: "media/inspector.js", styles: ["media/codicon.css", "media/inspector.css"] });
}

const shown = async (page: Page) => ({
  head: await page.$eval(".detail-head h2", (e) => (e as HTMLElement).innerText.trim()),
  step: await page.$eval(".step-button.selected", (e) => (e as HTMLElement).innerText.replace(/\s+/g, " ").trim()),
  tab: await page.$eval(".tab.active", (e) => (e as HTMLElement).dataset.tab),
});

describe("Run Inspector webview: reveal a step (headless Chromium)", function () {
  let browser: Browser;
  before(async () => {
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
  });

  it("selects the named step of the run shown, on the Decision tab", async () => {
    const page = await open(browser);
    await deliver(page, { type: "load", model: model(INVOICE_RUN) });
    await page.waitForSelector(`body[data-loaded="${INVOICE_RUN}"]`);
    assert.equal((await shown(page)).head, "Superstep 2", "it opens at the decision");
    await deliver(page, { type: "reveal", runId: INVOICE_RUN, superstep: 0, executor: "loadSupplier" });
    await page.waitForSelector('.detail-head h2:text-is("Superstep 0")');
    assert.deepEqual(await shown(page), { head: "Superstep 0", step: "loadSupplier loader", tab: "decision" });
    await page.close();
  });

  it("a reveal for a run not yet shown waits for that run; a step not in the run changes nothing", async () => {
    const page = await open(browser);
    await deliver(page, { type: "reveal", runId: INVOICE_RUN, superstep: 1, executor: "triage" });
    await deliver(page, { type: "load", model: model(INVOICE_RUN) });
    await page.waitForSelector(`body[data-loaded="${INVOICE_RUN}"]`);
    await page.waitForSelector('.detail-head h2:text-is("Superstep 1")');
    assert.deepEqual(await shown(page), { head: "Superstep 1", step: "triage agent", tab: "decision" });
    await deliver(page, { type: "reveal", runId: INVOICE_RUN, superstep: 9, executor: "nowhere" });
    await deliver(page, { type: "reveal", runId: INVOICE_BRANCH, superstep: 0, executor: "loadInvoice" });
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 50))));
    assert.equal((await shown(page)).head, "Superstep 1", "the selection stays");
    await page.close();
  });
});
