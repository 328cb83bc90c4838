import * as assert from "node:assert/strict";
import type { Browser, Page } from "playwright-core";
import { MemoryStore } from "../../src/casefile/index";
import { Engine } from "../../src/engine/engine";
import { isCasefileError } from "../../src/engine/errors";
import type { Json } from "../../src/engine/records";
import { defineWorkflow, request, z } from "../../src/engine/index";
import { buildInspectorViewModel, buildSuperstepDetail } from "../../src/extension/viewModel";
import type { InspectorViewModel } from "../../src/protocol/webview";
import { deliver, launchBrowser, openWebview, posted, screenshot } from "./webviewHost";

/**
 * A person answers a request in the Run Inspector (media/inspector.js in headless Chromium). The
 * test plays the extension host with the real engine and store: the page's answer goes to
 * `Engine.respond`, so it is checked by the request step's own answer schema, as the runner does.
 */

const caseFile = { path: "/workspace/cases/PAY-7.casefile", name: "PAY-7.casefile" };

/** A reject needs a reason: the request's answer schema says so, and the page learns it only by being refused. */
const Answer = z
  .object({ decision: z.enum(["approve", "reject"]), comment: z.string().optional() })
  .refine((a) => a.decision !== "reject" || (a.comment ?? "").length > 0, { message: "a reject needs a comment", path: ["comment"] });

const workflow = defineWorkflow({
  name: "payment",
  version: 1,
  state: { decision: z.string() },
  executors: {
    ask: request({
      owns: ["decision"],
      answer: Answer,
      prompt: () => ({ title: "Pay 1,240.00 EUR to ACME?", detail: "The amount is 9% over the order.", options: ["approve", "reject"] }),
      onAnswer: (a: z.infer<typeof Answer>, ctx) => ctx.write("decision", `${a.decision}: ${a.comment ?? ""}`),
    }),
  },
  edges: [],
  start: "ask",
});

async function waitingRun(): Promise<{ store: MemoryStore; runId: string }> {
  const store = new MemoryStore();
  const r = await new Engine(workflow, store).run();
  assert.equal(r.status, "waiting", "the fixture run waits for a person");
  return { store, runId: r.runId };
}

const model = (store: MemoryStore, runId: string, canRun: InspectorViewModel["canRun"] = { ok: true }): InspectorViewModel =>
  buildInspectorViewModel(store, { caseFile, runId, canRun });

/** Opens the page as the panel does; answers its reads and its answers from the store and the engine. */
async function open(browser: Browser, store: MemoryStore, runId: string, canRun?: InspectorViewModel["canRun"]): Promise<Page> {
  const page = await openWebview(browser, {
    script: "media/inspector.js",
    styles: ["media/codicon.css", "media/inspector.css"],
    theme: "light",
    onPost: async (p, m) => {
      if (m.type === "loadSuperstep") {
        await deliver(p, {
          type: "superstep",
          requestId: m.requestId,
          detail: buildSuperstepDetail(store, m.runId as string, m.superstep as number),
        });
      } else if (m.type === "answerRequest") {
        try {
          const r = await new Engine(workflow, store).respond(m.request as string, m.answer as Json, { by: "dana" });
          await deliver(p, { type: "answered", requestId: m.requestId, outcome: { ok: true, message: `Run ${r.runId} ${r.status}.` } });
          await deliver(p, { type: "load", model: model(store, r.runId) });
        } catch (e) {
          const reason = isCasefileError(e) ? `${e.code}: ${e.message}` : String(e);
          await deliver(p, { type: "answered", requestId: m.requestId, outcome: { ok: false, reason } });
        }
      }
    },
  });
  await deliver(page, { type: "load", model: model(store, runId, canRun) });
  await page.waitForSelector(`body[data-loaded="${runId}"]`);
  return page;
}

const text = (page: Page, selector: string): Promise<string> =>
  page.$eval(selector, (e) => (e as HTMLElement).innerText.replace(/\s+/g, " ").trim());

describe("Run Inspector: answering a person's request (headless Chromium)", function () {
  let browser: Browser;
  before(async () => {
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
  });

  it("opens on the waiting request: prompt, options as buttons, a comment box; a bad answer is refused in place", async () => {
    const { store, runId } = await waitingRun();
    const page = await open(browser, store, runId);
    await page.waitForSelector(".request-card.request-waiting");
    assert.match(await text(page, ".request-card h3"), /Pay 1,240\.00 EUR to ACME\?/, "the prompt's title is the card's heading");
    assert.match(await text(page, ".request-detail"), /9% over the order/, "the prompt's detail is shown");
    const options = await page.$$eval(".request-option", (b) => b.map((x) => (x as HTMLElement).innerText.trim()));
    assert.deepEqual(options, ["approve", "reject"], "each option is a button, in the prompt's order");
    assert.ok(await page.$("textarea.request-comment"), "a comment box sits beside the buttons");

    // Reject with no comment: the answer schema refuses it, and the refusal is shown on the card.
    await page.click('.request-option[data-option="reject"]');
    await page.waitForSelector(".request-refusal");
    assert.match(await text(page, ".request-refusal"), /INVALID_ANSWER.*a reject needs a comment/, "the schema's own message is shown");
    assert.equal(store.getRun(runId)!.status, "waiting", "a refused answer leaves the run waiting");
    assert.ok(await page.$(".request-card.request-waiting"), "the request can still be answered");
    await screenshot(page, "request-refused-light");

    // With a comment, the same click is taken: the run goes on, and the card says who, what and when.
    await page.fill("textarea.request-comment", "Price list is out of date; ask for a credit note");
    await page.click('.request-option[data-option="reject"]');
    await page.waitForFunction(() => !document.querySelector(".request-card.request-waiting"));
    const sent = (await posted(page)).filter((m) => m.type === "answerRequest").map((m) => m.answer);
    assert.deepEqual(
      sent,
      [{ decision: "reject" }, { decision: "reject", comment: "Price list is out of date; ask for a credit note" }],
      "each click sends the option with the comment typed",
    );
    await page.waitForSelector("header .status-completed");
    const label = await page.$$eval(".step-status", (e) => e.map((x) => (x as HTMLElement).innerText.trim()));
    assert.ok(label.includes("waited") && !label.includes("waiting"), `the request step reads "waited" once answered: ${label.join(", ")}`);
    const decision = store.latestCheckpoint(runId)!.keys.decision;
    assert.ok(decision, "the answer reached the request step (it wrote its decision)");
    await page.close();
  });

  it("shows who answered, what and when in the superstep where the answer arrived", async () => {
    const { store, runId } = await waitingRun();
    const id = store.latestCheckpoint(runId)!.waiting[0]!.id;
    await new Engine(workflow, store).respond(id, { decision: "approve", comment: "within tolerance" }, { by: "dana" });
    const page = await open(browser, store, runId);
    const rows = await page.$$eval(".timeline-row", (r) => r.length);
    let found = "";
    for (let i = 0; i < rows && !found; i++) {
      await page.click(`.timeline-row >> nth=${i}`);
      await page.waitForFunction(() => !document.querySelector(".loading-detail"));
      const card = await page.$(".request-answered .answered-by");
      if (card && (await page.$(".request-card h3"))) {
        const where = await text(page, ".request-card .muted");
        if (!/asked by ask \(request/.test(where)) found = await text(page, ".request-answered");
      }
    }
    assert.match(found, /Answered by dana: approve at \d{4}-\d\d-\d\dT/, "the answering superstep names who, what and when");
    assert.match(found, /within tolerance/, "the comment is shown");
    await page.close();
  });

  it("in Restricted Mode shows the request with its buttons disabled and the reason", async () => {
    const { store, runId } = await waitingRun();
    const reason = "Casefile does not run workflow code in Restricted Mode.";
    const page = await open(browser, store, runId, { ok: false, reason });
    await page.waitForSelector(".request-card.request-waiting");
    const disabled = await page.$$eval(".request-option", (b) =>
      b.map((x) => (x as HTMLButtonElement).disabled && x.getAttribute("title")),
    );
    assert.deepEqual(disabled, [reason, reason], "each option is disabled and says why");
    await page.close();
  });
});
