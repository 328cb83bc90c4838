import * as assert from "node:assert/strict";
import type { Browser, Page } from "playwright-core";
import { MemoryStore } from "../../src/casefile/index";
import { buildInspectorViewModel, buildOpeningViewModel, buildSuperstepDetail } from "../../src/extension/viewModel";
import { OPENING_ROWS } from "../../src/extension/viewModel/timeline";
import { ROW_HEIGHT } from "../../src/webview/timelineWindow";
import { LONG_RUN, longRun } from "../fixtures/casefile/longRun";
import { deliver, launchBrowser, openWebview, posted } from "./webviewHost";

/**
 * The Run Inspector's first paint of a long run: the host sends the run's opening part (its last
 * supersteps, down to its decision) first and the whole timeline after. The page paints the
 * decision from the opening part, and when the whole timeline arrives keeps the person's
 * selection and the rows in view on the same supersteps. Headless Chromium, media/inspector.js.
 */

const caseFile = { path: "/workspace/long.casefile", name: "long.casefile" };
const N = 2000;

const superstepsAsked = async (page: Page, n: number): Promise<number> =>
  (await posted(page)).filter((m) => m.type === "loadSuperstep" && m.superstep === n).length;
const count = (page: Page): Promise<string> => page.$eval(".pane-title .count", (e) => (e as HTMLElement).innerText.trim());
const selectedRow = (page: Page): Promise<string> =>
  page.$eval(".timeline-row.selected .superstep-number", (e) => (e as HTMLElement).innerText.trim());
const head = (page: Page): Promise<string> => page.$eval(".detail-head h2", (e) => (e as HTMLElement).innerText.trim());
/** The superstep number of the row at the timeline's top edge. */
const topRow = (page: Page): Promise<string> =>
  page.$eval(
    ".timeline-viewport",
    (vp, h) => {
      const i = Math.floor((vp as HTMLElement).scrollTop / h);
      return (vp.querySelector(`.timeline-row[data-index="${i}"] .superstep-number`) as HTMLElement | null)?.innerText.trim() ?? "none";
    },
    ROW_HEIGHT,
  );

describe("Run Inspector webview: a long run's opening part, then the whole timeline (headless Chromium)", function () {
  let browser: Browser;
  before(async () => {
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
  });

  it("paints the run's decision from the opening part, and merges the whole timeline keeping the selection and the rows in view", async () => {
    const store = new MemoryStore();
    store.commit(longRun(N));
    const opts = { caseFile, canRun: { ok: true } } as const;
    const opening = buildOpeningViewModel(store, opts);
    assert.ok(opening?.partial, "the fixture's run is long enough to open from its last supersteps");
    const page = await openWebview(browser, { script: "media/inspector.js", styles: ["media/codicon.css", "media/inspector.css"] });
    // The host answers superstep requests as the panel does.
    await page.exposeFunction("__detail", (n: number) => buildSuperstepDetail(store, LONG_RUN, n));
    await page.evaluate(() => {
      const w = window as unknown as { __posted: { type: string; requestId?: string; superstep?: number }[] };
      const push = w.__posted.push.bind(w.__posted);
      w.__posted.push = (...ms) => {
        for (const m of ms)
          if (m.type === "loadSuperstep")
            void (window as unknown as { __detail: (n: number) => Promise<unknown> })
              .__detail(m.superstep!)
              .then((detail) => window.postMessage({ type: "superstep", requestId: m.requestId, detail }, "*"));
        return push(...ms);
      };
    });

    await deliver(page, { type: "load", model: opening });
    await page.waitForSelector(`body[data-loaded="${LONG_RUN}"]`);
    // Superstep N failed with no commit; N - 1 holds the run's last verdict.
    assert.equal(await head(page), `Superstep ${N - 1}`, "the first paint shows the run's decision, from the opening part");
    assert.equal(await count(page), `${OPENING_ROWS}+`, "the timeline says earlier supersteps are still coming");
    assert.equal(await selectedRow(page), `#${N - 1}`, "the timeline opens with the decision's row in view, selected");
    const firstShown = N + 1 - OPENING_ROWS;
    const scrollTo = async (row: number): Promise<void> => {
      await page.$eval(".timeline-viewport", (vp, top) => ((vp as HTMLElement).scrollTop = top), row * ROW_HEIGHT);
      await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 50))));
    };
    await scrollTo(OPENING_ROWS - 10);

    // The person picks another superstep and scrolls a little while the rest is on its way.
    await page.click(`.timeline-row[data-index="${OPENING_ROWS - 5}"]`);
    await page.waitForSelector(`.detail-head h2:text-is("Superstep ${firstShown + OPENING_ROWS - 5}")`);
    await scrollTo(30);
    assert.equal(await topRow(page), `#${firstShown + 30}`, "scrolled to a row of the opening part");

    await deliver(page, { type: "load", model: buildInspectorViewModel(store, opts) });
    await page.waitForFunction((n) => document.querySelector(".pane-title .count")?.textContent === String(n), N + 1);
    const picked = firstShown + OPENING_ROWS - 5;
    assert.equal(await selectedRow(page), `#${picked}`, "the superstep the person picked stays selected");
    assert.equal(await head(page), `Superstep ${picked}`, "and its details stay shown");
    assert.equal(await topRow(page), `#${firstShown + 30}`, "the same rows stay in view: the earlier ones arrived above them");
    assert.equal(await superstepsAsked(page, picked), 1, "the details read for the opening part are not asked for again");
    await page.close();
  });

  it("a step to reveal that lies before the opening part is selected once the whole timeline arrives", async () => {
    const store = new MemoryStore();
    store.commit(longRun(N));
    const opts = { caseFile, canRun: { ok: true } } as const;
    const page = await openWebview(browser, { script: "media/inspector.js", styles: ["media/codicon.css", "media/inspector.css"] });
    await deliver(page, { type: "load", model: buildOpeningViewModel(store, opts) });
    await page.waitForSelector(`body[data-loaded="${LONG_RUN}"]`);
    await deliver(page, { type: "reveal", runId: LONG_RUN, superstep: 7, executor: "commit" });
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 50))));
    assert.equal(await head(page), `Superstep ${N - 1}`, "not in the opening part: the selection stays for now");
    await deliver(page, { type: "load", model: buildInspectorViewModel(store, opts) });
    await page.waitForSelector('.detail-head h2:text-is("Superstep 7")');
    assert.equal(await selectedRow(page), "#7", "selected, its row in view, once the whole timeline is there");
    await page.close();
  });
});
