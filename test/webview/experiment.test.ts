import * as assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import type { Browser, Page } from "playwright-core";
import { parseExperimentResults, type ExperimentResults } from "../../src/protocol/experiment";
import { cspViolations, deliver, launchBrowser, openWebview, posted, ROOT, screenshot } from "./webviewHost";
import type { Theme } from "./webviewHost";

/**
 * The Experiment panel's bundle (media/experiment.js, built by `npm run build`) in headless
 * Chromium, fed a results file `casefile experiment` wrote over the invoice example's two exported
 * cases with two workflow versions (v1, the example; v2, test/fixtures/workflows/invoiceV2.ts,
 * which tolerates 10% and says so in its system message): v2 accepts the 9% approval that v1
 * escalates, a regression against the baseline v1.
 */

const FIXTURE = path.join(ROOT, "test/fixtures/experiment/v1-vs-v2.experiment.json");

function results(): ExperimentResults {
  const parsed = parseExperimentResults(readFileSync(FIXTURE, "utf8"));
  assert.ok(parsed.ok, `the fixture parses: ${parsed.ok ? "" : parsed.error}`);
  return parsed.value;
}

async function openPanel(browser: Browser, r: ExperimentResults, theme: Theme = "dark"): Promise<Page> {
  const page = await openWebview(browser, { script: "media/experiment.js", styles: ["media/codicon.css", "media/experiment.css"], theme });
  await deliver(page, { type: "load", file: "evals/v1-vs-v2.experiment.json", results: r });
  await page.waitForSelector('body[data-loaded="evals/v1-vs-v2.experiment.json"]');
  return page;
}

const text = (page: Page, selector: string): Promise<string> =>
  page.$eval(selector, (e) => (e as HTMLElement).innerText.replace(/\s+/g, " ").trim());

describe("Experiment panel webview (headless Chromium)", function () {
  let browser: Browser;
  let r: ExperimentResults;
  let escalated: string;
  let accepted: string;

  before(async () => {
    browser = await launchBrowser();
    r = results();
    escalated = r.cases.find((c) => c.expected.verdict === "escalated")!.id;
    accepted = r.cases.find((c) => c.expected.verdict === "accepted")!.id;
  });
  after(async () => {
    await browser?.close();
  });

  it("says ready first, then shows the totals per variant and the case x variant matrix with the regression marked", async () => {
    const page = await openPanel(browser, r);
    assert.deepEqual((await posted(page))[0], { type: "ready" });
    assert.match(
      await text(page, '#totals tr[data-variant="v1"]'),
      /^v1 \(baseline\) 100% 2\/2 628 0 ms recorded answer, workflow .*workflow\.ts$/,
    );
    assert.match(await text(page, '#totals tr[data-variant="v2"]'), /^v2 50% 1\/2 650 0 ms/);
    const cell = (c: string, v: string) => `#matrix tr[data-case="${c}"] td[data-variant="${v}"]`;
    assert.equal(await text(page, cell(escalated, "v1")), "PASS approve_variance / escalated 314 tokens · 0 ms");
    assert.equal(await text(page, cell(escalated, "v2")), "FAIL regression approve_variance / accepted 325 tokens · 0 ms");
    assert.equal(await text(page, cell(accepted, "v2")), "PASS approve_variance / accepted 325 tokens · 0 ms");
    assert.equal(await page.$$eval("#matrix td.regression", (e) => e.length), 1, "one regressed cell");
    assert.match(
      await page.$eval(cell(escalated, "v2"), (e) => (e as HTMLElement).title),
      /^every rule passed\nworkflow v1 -> v2\n/,
      "the verdict's reason and the notes on hover",
    );
    assert.match(await page.$eval(cell(escalated, "v1"), (e) => (e as HTMLElement).title), /exceeds the 5% tolerance/);
    assert.deepEqual(await cspViolations(page), []);
    assert.deepEqual((page as Page & { errors: string[] }).errors, []);
    await screenshot(page, "experiment-invoice-dark");
  });

  it("diffs the chosen case's context between two variants: v2's system message adds its tolerance; same variant twice is the same context", async () => {
    const page = await openPanel(browser, r);
    // Opened on the regression: the baseline against the variant that failed.
    assert.equal(await page.$eval('select[data-role="before"]', (e) => (e as HTMLSelectElement).value), "v1");
    assert.equal(await page.$eval('select[data-role="after"]', (e) => (e as HTMLSelectElement).value), "v2");
    assert.equal(await page.$eval("select.case-select", (e) => (e as HTMLSelectElement).value), escalated);
    assert.match(await text(page, "#diff .diff-verdict"), /^1 of 2 messages differ\.$/);
    assert.deepEqual(await page.$$eval("#diff .message", (els) => els.map((e) => (e as HTMLElement).dataset.change)), ["changed", "same"]);
    assert.deepEqual(await page.$$eval("#diff .message ins.diff-added", (els) => els.map((e) => e.textContent)), [
      "Variances up to 10% may be approved. ",
    ]);
    await screenshot(page, "experiment-invoice-diff");

    // The same variant on both sides.
    await page.selectOption('select[data-role="after"]', "v1");
    assert.match(await text(page, "#diff .diff-verdict"), /^Same context under both: hash sha256:/);
    assert.equal(await page.$$eval("#diff .message", (e) => e.length), 0);
    assert.equal(await page.$eval('select[data-role="after"]', (e) => (e as HTMLSelectElement).value), "v1", "the select keeps its value");

    // Another case from the matrix: its row is selected and its contexts compared.
    await page.click(`#matrix tr[data-case="${accepted}"] button.case`);
    assert.equal(await page.$eval("select.case-select", (e) => (e as HTMLSelectElement).value), accepted);
    assert.equal(await page.$$eval(`#matrix tr.selected[data-case="${accepted}"]`, (e) => e.length), 1);
  });

  it("asks the host to open a case's eval file; a malformed message from the host changes nothing", async () => {
    const page = await openPanel(browser, r);
    await page.click(`#matrix tr[data-case="${escalated}"] button.icon-button`);
    assert.deepEqual((await posted(page)).at(-1), { type: "openCase", case: escalated });
    const before = await text(page, "#matrix");
    await deliver(page, { type: "load", file: "x", results: { ...r, v: 2 } });
    await deliver(page, { type: "nonsense" });
    assert.equal(await text(page, "#matrix"), before, "the panel keeps what it shows");
    await deliver(page, { type: "notice", level: "error", message: "The results file changed and no longer parses." });
    assert.equal(await text(page, ".notice"), "The results file changed and no longer parses.");
  });

  it("reads in the light and high-contrast themes", async () => {
    for (const theme of ["light", "hc"] as Theme[]) {
      const page = await openPanel(browser, r, theme);
      assert.equal(await page.$$eval("#matrix td.cell", (e) => e.length), 4, `${theme}: 2 cases x 2 variants`);
      await screenshot(page, `experiment-invoice-${theme}`);
      await page.close();
    }
  });
});
