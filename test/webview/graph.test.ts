import * as assert from "node:assert/strict";
import * as path from "node:path";
import type { Browser, Page } from "playwright-core";
import { loadWorkflow } from "../../src/runner/bundle";
import type { GraphViewModel } from "../../src/protocol/graph";
import { graphViewModel } from "../../src/protocol/graph";
import { cspViolations, deliver, launchBrowser, openWebview, posted, ROOT, screenshot } from "./webviewHost";
import type { Theme } from "./webviewHost";

/**
 * The Workflow Graph's bundle (media/graph.js, built by `npm run build`) in headless Chromium, fed
 * the invoice example's real graph: the workflow file is bundled and built by the runner's loader,
 * and its `workflow.graph` becomes the view model as the panel's host builds it.
 */

const INVOICE = path.join(ROOT, "examples/invoice/workflow.ts");

async function invoiceModel(live: GraphViewModel["live"] = null): Promise<GraphViewModel> {
  const { workflow } = await loadWorkflow(INVOICE);
  return graphViewModel({ name: workflow.name, version: workflow.version, file: "examples/invoice/workflow.ts" }, workflow.graph, live);
}

async function openGraph(
  browser: Browser,
  model: GraphViewModel,
  theme: Theme = "dark",
  size: { width?: number; height?: number } = {},
): Promise<Page> {
  const page = await openWebview(browser, { script: "media/graph.js", styles: ["media/codicon.css", "media/graph.css"], theme, ...size });
  await deliver(page, { type: "load", model });
  await page.waitForSelector(`body[data-loaded="${model.workflow.name}"]`);
  return page;
}

const text = (page: Page, selector: string): Promise<string> =>
  page.$eval(selector, (e) => (e as HTMLElement).innerText.replace(/\s+/g, " ").trim());

interface Box {
  x: number;
  y: number;
  w: number;
  h: number;
}
const box = (page: Page, executor: string): Promise<Box> =>
  page.$eval(`.node[data-executor="${executor}"]`, (e) => {
    const r = e.getBoundingClientRect();
    return { x: r.x, y: r.y, w: r.width, h: r.height };
  });
const overlap = (a: Box, b: Box): boolean => a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;

describe("Workflow Graph webview (headless Chromium)", function () {
  let browser: Browser;
  let model: GraphViewModel;

  before(async () => {
    browser = await launchBrowser();
    model = await invoiceModel();
  });
  after(async () => {
    await browser?.close();
  });

  it("says ready first, then lays out every executor of the invoice workflow without overlaps, edges following the flow", async () => {
    const page = await openGraph(browser, model);
    assert.deepEqual((await posted(page))[0], { type: "ready" });
    const ids = await page.$$eval(".node", (els) => els.map((e) => (e as HTMLElement).dataset.executor));
    assert.deepEqual(ids.sort(), model.executors.map((e) => e.id).sort());
    assert.ok(ids.length >= 5, `the invoice workflow has ${ids.length} executors`);
    const boxes = await Promise.all(model.executors.map((e) => box(page, e.id)));
    for (let i = 0; i < boxes.length; i++)
      for (let j = i + 1; j < boxes.length; j++)
        assert.ok(!overlap(boxes[i]!, boxes[j]!), `${model.executors[i]!.id} overlaps ${model.executors[j]!.id}`);
    // Layered top to bottom: the start executor is above whatever it leads to.
    const load = await box(page, "load");
    const variance = await box(page, "variance");
    assert.ok(load.y + load.h <= variance.y, "load sits above variance");
    const pairs = model.edges.reduce((n, e) => n + e.from.length * e.to.length, 0);
    assert.equal(await page.$$eval("path.edge", (els) => els.length), pairs);
    assert.deepEqual(await cspViolations(page), []);
    assert.deepEqual((page as Page & { errors: string[] }).errors, []);
    await screenshot(page, "graph-invoice-dark");
  });

  it("tells kinds apart (codicon and kind class) and shows each key's owner", async () => {
    const page = await openGraph(browser, model);
    for (const ex of model.executors) {
      const kind = await page.$eval(`.node[data-executor="${ex.id}"]`, (e) => (e as HTMLElement).dataset.kind);
      assert.equal(kind, ex.kind);
    }
    assert.match(await text(page, '.node[data-executor="propose"]'), /propose agent/);
    assert.equal(await page.$$eval('.node[data-executor="propose"] .codicon-sparkle', (e) => e.length), 1);
    assert.equal(await page.$$eval('.node[data-executor="load"] .codicon-cloud-download', (e) => e.length), 1);
    // Shapes differ: an agent's corners are rounder than a code step's.
    const radius = (id: string): Promise<string> =>
      page.$eval(`.node[data-executor="${id}"]`, (e) => getComputedStyle(e).borderTopLeftRadius);
    assert.notEqual(await radius("propose"), await radius("variance"));
    assert.match(await text(page, '.node[data-executor="load"]'), /owns invoice, po/);
    assert.equal(await text(page, '.keys tr[data-key="variance"]'), "variance state variance");
    assert.equal(await text(page, '.keys tr[data-key="invoice"]'), "invoice fact load");
    // An extract from a long document has no owner: the engine makes it from its fact.
    assert.equal(await text(page, '.keys tr[data-key="priceTerms"]'), "priceTerms extract the engine, from contract");
    for (const k of model.keys) {
      const row = await text(page, `.keys tr[data-key="${k.key}"]`);
      assert.ok(row.endsWith(k.owner ?? (k.extractOf ? `the engine, from ${k.extractOf}` : "no owner (input only)")), `${k.key}: ${row}`);
    }
  });

  it("labels conditional edges and draws them dashed", async () => {
    const page = await openGraph(browser, model);
    const conditional = model.edges.filter((e) => e.conditional);
    assert.ok(conditional.length > 0, "the invoice workflow has conditional edges");
    const labels = await page.$$eval(".edge-label.conditional", (els) => els.map((e) => (e as HTMLElement).innerText.trim()));
    const expected = conditional.flatMap((e) => e.from.flatMap(() => e.to.map(() => e.label ?? "when …")));
    assert.deepEqual(labels.sort(), expected.sort());
    const dashes = await page.$$eval("path.edge.conditional", (els) => els.map((e) => getComputedStyle(e).strokeDasharray));
    assert.equal(dashes.length, expected.length);
    for (const d of dashes) assert.notEqual(d, "none");
  });

  it("highlights the running superstep's executors and follows live updates", async () => {
    const page = await openGraph(browser, model);
    assert.equal(await text(page, "#live"), "No run in progress");
    assert.equal(await page.$$eval(".node.running", (e) => e.length), 0);
    await deliver(page, { type: "live", live: { source: "runner", runId: "r1", superstep: 1, executors: ["variance"] } });
    assert.deepEqual(await page.$$eval(".node.running", (els) => els.map((e) => (e as HTMLElement).dataset.executor)), ["variance"]);
    assert.equal(await text(page, "#live"), "Superstep 1 running: variance");
    await screenshot(page, "graph-invoice-running");
    await deliver(page, { type: "live", live: { source: "checkpoint", runId: "r1", superstep: 2, executors: ["propose"] } });
    assert.deepEqual(await page.$$eval(".node.running", (els) => els.map((e) => (e as HTMLElement).dataset.executor)), ["propose"]);
    assert.equal(await text(page, "#live"), "Latest checkpoint (superstep 2) of run r1: pending propose");
    // Several executors in one superstep, all highlighted; a finished run's checkpoint has none pending.
    await deliver(page, { type: "live", live: { source: "runner", runId: "r1", superstep: 3, executors: ["variance", "propose"] } });
    assert.deepEqual((await page.$$eval(".node.running", (els) => els.map((e) => (e as HTMLElement).dataset.executor))).sort(), [
      "propose",
      "variance",
    ]);
    await deliver(page, { type: "live", live: { source: "checkpoint", runId: "r1", superstep: 5, executors: [] } });
    assert.equal(await page.$$eval(".node.running", (e) => e.length), 0);
    assert.equal(await text(page, "#live"), "Latest checkpoint (superstep 5) of run r1: pending nothing (the run has finished)");
    // No case file and no run: nothing highlighted.
    await deliver(page, { type: "live", live: null });
    assert.equal(await page.$$eval(".node.running", (e) => e.length), 0);
    assert.equal(await text(page, "#live"), "No run in progress");
  });

  it("posts revealExecutor when a node is clicked or activated from the keyboard", async () => {
    const page = await openGraph(browser, model);
    await page.click('.node[data-executor="propose"]');
    await page.focus('.node[data-executor="variance"]');
    await page.keyboard.press("Enter");
    const messages = (await posted(page)).filter((m) => m.type !== "ready");
    assert.deepEqual(messages, [
      { type: "revealExecutor", executor: "propose" },
      { type: "revealExecutor", executor: "variance" },
    ]);
  });

  it("drops a malformed or hostile message and keeps the graph", async () => {
    const page = await openGraph(browser, model);
    const before = await page.$$eval(".node", (e) => e.length);
    await deliver(page, { type: "load", model: { ...model, executors: "<img src=x onerror=alert(1)>" } });
    await deliver(page, { type: "live", live: { source: "runner", runId: "r", superstep: -1, executors: [] } });
    await deliver(page, { type: "eval", code: "alert(1)" });
    assert.equal(await page.$$eval(".node", (e) => e.length), before);
    assert.equal(await page.$$eval("img", (e) => e.length), 0);
    assert.equal(await text(page, "#live"), "No run in progress");
    assert.deepEqual(await cspViolations(page), []);
  });

  it("opens fitted to a narrow panel beside an editor, zooms in and out, and goes back to fit", async () => {
    const page = await openGraph(browser, model, "dark", { width: 520, height: 560 });
    const fitted = async (): Promise<{ stage: Box; view: Box; zoom: number; level: string }> =>
      page.evaluate(() => {
        const b = document.getElementById("stage")!.getBoundingClientRect();
        const scroller = document.getElementById("scroller")!;
        return {
          stage: { x: b.x, y: b.y, w: b.width, h: b.height },
          view: { x: 0, y: 0, w: scroller.clientWidth, h: scroller.clientHeight },
          zoom: Number(document.body.dataset.zoom),
          level: document.getElementById("zoom-level")!.textContent ?? "",
        };
      });
    const f = await fitted();
    assert.ok(f.zoom < 1, `a graph taller than a narrow panel is scaled down to fit (zoom ${f.zoom})`);
    assert.ok(f.stage.w <= f.view.w && f.stage.h <= f.view.h, `the whole graph is in view: ${JSON.stringify(f)}`);
    assert.match(f.level, /^\d+% \(fit\)$/, "the header says the scale and that it is fitted");
    const before = await box(page, "propose");
    await page.click('.zoom-button[data-zoom="in"]');
    const bigger = await box(page, "propose");
    assert.ok(bigger.w > before.w * 1.2, `Zoom in makes a node larger (${before.w} -> ${bigger.w})`);
    await page.click('.zoom-button[data-zoom="actual"]');
    assert.equal(await page.$eval("#zoom-level", (e) => e.textContent), "100%", "100% shows the graph at its size");
    await page.keyboard.press("0");
    assert.equal((await fitted()).zoom, f.zoom, "0 (or Fit) goes back to the fitted scale");
    await screenshot(page, "graph-invoice-narrow-fit");
    await page.close();
  });

  for (const theme of ["light", "hc"] as const) {
    it(`renders in the ${theme} theme`, async () => {
      const page = await openGraph(
        browser,
        await invoiceModel({ source: "checkpoint", runId: "r1", superstep: 2, executors: ["propose"] }),
        theme,
      );
      assert.equal(await page.$$eval(".node", (e) => e.length), model.executors.length);
      const fg = await page.$eval(".node-name", (e) => getComputedStyle(e).color);
      const bg = await page.$eval("body", (e) => getComputedStyle(e).backgroundColor);
      assert.notEqual(fg, bg);
      await screenshot(page, `graph-invoice-${theme}`);
    });
  }
});
