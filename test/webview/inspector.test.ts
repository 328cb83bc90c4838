import * as assert from "node:assert/strict";
import type { Browser, Page } from "playwright-core";
import { MemoryStore } from "../../src/casefile/index";
import { countTokens } from "../../src/engine/tokens";
import type { InspectorViewModel } from "../../src/protocol/webview";
import type { ChatMessage } from "../../src/engine/records";
import { buildInspectorViewModel, buildSuperstepDetail } from "../../src/extension/viewModel";
import { commitInvoiceRun, INVOICE_BRANCH, INVOICE_RUN, invoiceBatches } from "../fixtures/casefile/fixture";
import { InspectorToHostSchema } from "../../src/protocol/webview";
import { AMOUNT_BRANCH, commitContextBranches, ORIGINAL_CALL, SAME_BRANCH, SAME_CALL } from "../fixtures/casefile/contextBranches";
import { commitRefundBranches } from "../fixtures/casefile/refundBranches";
import { hugeRun } from "./hugeRun";
import { cspViolations, deliver, launchBrowser, openWebview, posted, screenshot } from "./webviewHost";
import type { Theme } from "./webviewHost";

/**
 * The Run Inspector's bundle (media/inspector.js, built by `npm run build`) in headless Chromium,
 * fed view models built from the invoice fixture by the real view-model builder and store. The
 * tests read what a person sees and check what each action posts to the host.
 */

const caseFile = { path: "/workspace/invoice.casefile", name: "invoice.casefile" };

function invoiceStore(): MemoryStore {
  const store = new MemoryStore();
  commitInvoiceRun(store);
  return store;
}

function invoiceModel(runId: string, canRun: InspectorViewModel["canRun"] = { ok: true }, store = invoiceStore()): InspectorViewModel {
  return buildInspectorViewModel(store, { caseFile, runId, canRun });
}

const countMessageTokens = (m: ChatMessage, model: string): number => countTokens([m], model).count - countTokens([], model).count;

/**
 * Opens the inspector on a view model. With a store, the test plays the extension host: it answers
 * each `loadSuperstep` from the store with the real detail builder, as the panel does.
 */
async function openInspector(
  browser: Browser,
  model: InspectorViewModel,
  opts: { theme?: Theme; store?: MemoryStore } = {},
): Promise<Page> {
  const store = opts.store;
  const page = await openWebview(browser, {
    script: "media/inspector.js",
    styles: ["media/codicon.css", "media/inspector.css"],
    theme: opts.theme ?? "dark",
    ...(store
      ? {
          onPost: async (p: Page, m: { type: string; [k: string]: unknown }) => {
            if (m.type === "loadSuperstep") {
              const detail = buildSuperstepDetail(store, m.runId as string, m.superstep as number, { countMessageTokens });
              await deliver(p, { type: "superstep", requestId: m.requestId, detail });
            } else if (m.type === "loadContext") {
              // As the panel answers: the other step's context, read through its superstep's details.
              const detail = buildSuperstepDetail(store, m.runId as string, m.superstep as number, { countMessageTokens });
              const context = detail.steps.map((st) => st.context).find((c) => !("absent" in c) && c.agentCallId === m.agentCallId) ?? {
                absent: "not in the case file",
              };
              await deliver(p, { type: "context", requestId: m.requestId, context });
            }
          },
        }
      : {}),
  });
  await deliver(page, { type: "load", model });
  await page.waitForSelector(`body[data-loaded="${model.run.id}"]`);
  return page;
}

/** The invoice fixture's run (or branch) with the test answering for the host. */
async function openInvoice(browser: Browser, runId = INVOICE_RUN, theme: Theme = "dark"): Promise<Page> {
  const store = invoiceStore();
  return openInspector(browser, invoiceModel(runId, { ok: true }, store), { store, theme });
}

/** What the webview posted, less its requests for superstep details and contexts. */
async function actions(page: Page): Promise<{ type: string; [k: string]: unknown }[]> {
  return (await posted(page)).filter((m) => m.type !== "loadSuperstep" && m.type !== "loadContext" && m.type !== "painted");
}

/** The text as a person sees it (innerText: CSS text-transform applied), whitespace collapsed. */
const text = (page: Page, selector: string): Promise<string> =>
  page.$eval(selector, (e) => (e as HTMLElement).innerText.replace(/\s+/g, " ").trim());
const texts = (page: Page, selector: string): Promise<string[]> =>
  page.$$eval(selector, (els) => els.map((e) => (e as HTMLElement).innerText.replace(/\s+/g, " ").trim()));
const rowTexts = (page: Page): Promise<string[]> => texts(page, ".timeline-row");

async function selectSuperstep(page: Page, n: number): Promise<void> {
  await page.click(`.timeline-row:has(.superstep-number:text-is("#${n}"))`);
  await page.waitForSelector(`.detail-head h2:text-is("Superstep ${n}")`);
}

/**
 * Waits until the webview has asked for superstep `n` `times` times (a reload asks again) and the
 * frame after the answer has run: the re-render the reload causes is then on screen.
 */
async function settled(page: Page, n: number, times: number): Promise<void> {
  await page.waitForFunction(
    ([n, times]) =>
      (window as unknown as { __posted: { type: string; superstep?: number }[] }).__posted.filter(
        (m) => m.type === "loadSuperstep" && m.superstep === n,
      ).length >= times,
    [n, times] as const,
  );
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 50))));
}

async function openTab(page: Page, tab: "context" | "decision" | "state" | "intents"): Promise<void> {
  await page.click(`.tab[data-tab="${tab}"]`);
  await page.waitForSelector(`.tab-body.tab-${tab}`);
}

describe("Run Inspector webview (headless Chromium)", function () {
  let browser: Browser;

  before(async () => {
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
  });

  it("says ready before anything else and shows nothing invented before the host loads a run", async () => {
    const page = await openWebview(browser, { script: "media/inspector.js", styles: ["media/codicon.css", "media/inspector.css"] });
    assert.deepEqual(await posted(page), [{ type: "ready" }]);
    assert.equal(await page.$$eval(".timeline-row", (r) => r.length), 0);
    await page.close();
  });

  it("shows the run's supersteps in the timeline with their steps and verdicts", async () => {
    const page = await openInvoice(browser);
    assert.equal(await text(page, ".title strong"), "invoice");
    assert.equal(await text(page, ".title .status"), "COMPLETED");
    assert.deepEqual(await rowTexts(page), ["#0 loadInvoice loadSupplier", "#1 triage", "#2 decide accepted", "#3 postPayment"]);
    await page.close();
  });

  it("asks the host for a superstep's details when it is selected, and says it is reading them", async () => {
    const store = invoiceStore();
    const page = await openInspector(browser, invoiceModel(INVOICE_RUN, { ok: true }, store));
    await selectSuperstep(page, 1);
    assert.equal(await text(page, ".tab-body"), "Reading superstep 1 from the case file…");
    const requests = (await posted(page)).filter((m) => m.type === "loadSuperstep");
    const request = requests.pop();
    assert.deepEqual(request, { type: "loadSuperstep", requestId: request?.requestId, runId: INVOICE_RUN, superstep: 1 });
    assert.equal(typeof request?.requestId, "string", "a request the host's answer can name");
    await deliver(page, { type: "superstep", detail: buildSuperstepDetail(store, INVOICE_RUN, 1) });
    await page.waitForSelector(".proposal-json");
    assert.equal(await text(page, ".verdict-large"), "Accepted");
    await selectSuperstep(page, 0);
    await selectSuperstep(page, 1);
    assert.equal((await posted(page)).filter((m) => m.type === "loadSuperstep" && m.superstep === 1).length, 1, "asked once, then kept");

    // The case file changed (a run wrote to it): the host sends the run again. What the person
    // reads stays on screen while the superstep is asked for again, and the answer replaces it.
    await deliver(page, { type: "load", model: invoiceModel(INVOICE_RUN, { ok: true }, store) });
    await page.waitForFunction(() => document.querySelectorAll(".verdict-large").length === 1);
    assert.equal(await text(page, ".verdict-large"), "Accepted");
    assert.equal(await page.$$eval(".loading-detail", (els) => els.length), 0, "no blank 'Reading…' while the fresh detail comes");
    assert.equal(
      (await posted(page)).filter((m) => m.type === "loadSuperstep" && m.superstep === 1).length,
      2,
      "asked again after the reload",
    );
    await deliver(page, { type: "superstep", detail: buildSuperstepDetail(store, INVOICE_RUN, 1) });
    assert.equal(await text(page, ".verdict-large"), "Accepted");
    await page.close();
  });

  it("shows proposal vs commit side by side: proposal, each rule, the verdict and the state diff", async () => {
    const page = await openInvoice(browser);
    await selectSuperstep(page, 2);
    await openTab(page, "decision");
    await page.waitForSelector(".proposal-json");
    const proposal = JSON.parse(await page.$eval(".proposal-json", (e) => e.textContent ?? "")) as { action: string; facts: string[] };
    assert.equal(proposal.action, "approve");
    assert.deepEqual(proposal.facts, ["invoice", "supplier"]);
    assert.match(await text(page, ".proposal"), /by triage/);
    assert.equal(await text(page, ".verdict-large"), "Accepted");
    const rules = await page.$$eval(".rule", (els) =>
      els.map((e) => `${e.className.includes("ok") ? "ok" : "broken"} ${(e as HTMLElement).innerText.trim()}`),
    );
    assert.equal(rules.length, 3);
    assert.ok(
      rules.every((r) => r.startsWith("ok")),
      rules.join("\n"),
    );
    assert.match(rules[1]!, /iban-matches-supplier/);
    const diff = await texts(page, "table.diff tbody tr");
    assert.deepEqual(diff, ['decision (unset) { "status": "approved", "approvedAmount": 1840.5 }']);
    await screenshot(page, "inspector-decision-dark");
    await page.close();
  });

  it("shows a rejected proposal's broken rule and the escalation in a branch run", async () => {
    const page = await openInvoice(browser, INVOICE_BRANCH);
    assert.match(await text(page, ".header"), new RegExp(`branch of ${INVOICE_RUN} at checkpoint ${INVOICE_RUN}-cp1`));
    await openTab(page, "decision");
    await page.waitForSelector(".verdict-large");
    assert.equal(await text(page, ".verdict-large"), "Escalated");
    const broken = await texts(page, ".rule.broken");
    assert.deepEqual(broken, ["cites-known-facts creditScore is not a fact of record"]);
    assert.match(await text(page, ".proposal"), /no agent call linked/);
    await page.close();
  });

  it("switches tabs: context with per-message tokens and budget, state with provenance, intents", async () => {
    const page = await openInvoice(browser);
    await selectSuperstep(page, 1);
    await openTab(page, "context");
    await page.waitForSelector(".budget");
    assert.match(await text(page, ".budget"), /118 tokens of budget 2000 soft \/ 4000 hard · o200k_base/);
    const messages = await page.$$eval(".message", (els) =>
      els.map((e) => [".role", ".tokens", ".message-content"].map((s) => e.querySelector(s)!.textContent).join(" | ")),
    );
    assert.equal(messages.length, 2);
    assert.match(messages[0]!, /^system \| \d+ tokens \| You triage supplier invoices/);
    assert.match(messages[1]!, /^user \| \d+ tokens \| Invoice INV-1042/);
    await screenshot(page, "inspector-context-dark");

    await openTab(page, "state");
    await page.waitForSelector("table.state");
    assert.match(await text(page, ".tab-body p"), /marks compare with superstep 0\.$/);
    const state = await texts(page, "table.state tbody tr");
    assert.equal(state.length, 3);
    assert.match(
      state.find((r) => r.startsWith("invoice"))!,
      /fact of record from erp:invoices\/INV-1042 version etag-"a9f1"/,
    );
    assert.match(
      state.find((r) => r.startsWith("proposal"))!,
      /^proposal ?NEW \{ "action": "approve", .* \} v1 workflow state$/,
    );
    await screenshot(page, "inspector-state-dark");

    await selectSuperstep(page, 3);
    await openTab(page, "intents");
    await page.waitForSelector(".intent h3");
    assert.match(await text(page, ".intent h3"), /postPayment → bank:payments DONE/);
    assert.match(await text(page, ".intent"), /invoice:INV-1042:postPayment/);
    assert.deepEqual(await cspViolations(page), [], "nothing the panel's CSP would refuse (no eval, no inline style or script)");
    await page.close();
  });

  it("names the extracts a context was built with, and says when the working context was summarised", async () => {
    // The invoice fixture's agent call as the engine records it for a step that read an extract of
    // a long document and whose summarise hook shortened the context over its soft budget.
    const store = new MemoryStore();
    for (const b of invoiceBatches()) {
      for (const call of b.agentCalls ?? []) {
        call.extracts = [{ key: "priceTerms", from: "contract", source: "erp:agreements/FA-2026-07", sourceVersion: 'etag-"c3"' }];
        call.summarised = { tokensBefore: 5210, messagesBefore: 4, hashBefore: "sha256:77e0b1c2d3a4f5e6" };
      }
      store.commit(b);
    }
    const page = await openInspector(browser, invoiceModel(INVOICE_RUN, { ok: true }, store), { store });
    await selectSuperstep(page, 1);
    await openTab(page, "context");
    await page.waitForSelector(".extracts");
    assert.equal(await text(page, ".extracts"), 'Extracts used: priceTerms (extract of erp:agreements/FA-2026-07@etag-"c3")');
    assert.match(
      await text(page, ".summarised"),
      /^Working context summarised by the step: 5,210 tokens in 4 messages before \(hash sha256:77e0b1c2d3a4f5e6\); the case file keeps every record whole\.$/,
    );
    await screenshot(page, "inspector-context-extracts");
    assert.deepEqual(await cspViolations(page), []);
    await page.close();
  });

  it("says plainly where a step has nothing to show instead of inventing it", async () => {
    const page = await openInvoice(browser);
    await selectSuperstep(page, 0);
    await openTab(page, "context");
    await page.waitForSelector(".tab-body .absent");
    assert.equal(await text(page, ".tab-body .absent"), "Only agent steps give a model a context; this is a loader step.");
    await openTab(page, "decision");
    assert.match(await text(page, ".tab-body .absent"), /applies to agent and commit steps; this is a loader step/);
    await openTab(page, "intents");
    assert.match(await text(page, ".tab-body .absent"), /Only effect steps record intents/);
    await openTab(page, "state");
    assert.match(await text(page, ".tab-body p"), /^State after superstep 0\.$/, "nothing before the first checkpoint to compare with");
    // A superstep whose details the case file cannot give: the host says why, the panel shows it.
    await deliver(page, {
      type: "superstep",
      detail: {
        runId: INVOICE_RUN,
        superstep: 2,
        steps: [],
        state: { absent: "This superstep could not be read from the case file: torn record" },
        requests: [],
      },
    });
    await selectSuperstep(page, 2);
    await openTab(page, "decision");
    assert.equal(await text(page, ".tab-body .absent"), "This superstep could not be read from the case file: torn record");
    await page.close();
  });

  it("posts the right message for each action", async () => {
    const page = await openInvoice(browser);
    await selectSuperstep(page, 1);
    const stepId = `${INVOICE_RUN}-s1-triage`;
    await page.click('button[data-action="resume"]');
    await page.click('button[data-action="debug"]');
    await page.click('button[data-action="fork"]');
    await page.selectOption("select.replay-mode", "live");
    await page.click('button[data-action="replay"]');
    await page.selectOption("select.eval-format", "openai-jsonl");
    await page.click('button[data-action="export"]');
    const branchSelect = "select.branch-select";
    await page.selectOption(branchSelect, INVOICE_BRANCH);
    const messages = (await actions(page)).slice(1);
    assert.deepEqual(messages, [
      { type: "resumeFrom", runId: INVOICE_RUN, checkpointId: `${INVOICE_RUN}-cp1` },
      { type: "debugFromHere", runId: INVOICE_RUN, checkpointId: `${INVOICE_RUN}-cp1` },
      { type: "forkWithEditedState", runId: INVOICE_RUN, checkpointId: `${INVOICE_RUN}-cp1` },
      { type: "replayStep", runId: INVOICE_RUN, stepId, mode: "live" },
      { type: "exportStepAsEval", runId: INVOICE_RUN, stepId, format: "openai-jsonl" },
      { type: "selectRun", runId: INVOICE_BRANCH },
    ]);
    // The host's answer shows in the status line.
    await deliver(page, { type: "notice", level: "info", message: "Resumed as run r-2." });
    assert.match(await text(page, "#notice"), /Resumed as run r-2\./);
    await page.close();
  });

  it("shows a step-mode run's place with Continue, Step and Stop, and posts each as control", async () => {
    const page = await openInvoice(browser);
    assert.equal(await page.$$eval("#run-controls button", (b) => b.length), 0, "no controls while nothing runs");
    await deliver(page, { type: "runState", state: "paused", runId: "r-7", superstep: 2 });
    assert.equal(await text(page, "#run-controls .run-state"), "Paused r-7 before superstep 2");
    await page.click('button[data-control="step"]');
    await page.click('button[data-control="continue"]');
    await page.click('button[data-control="stop"]');
    assert.deepEqual((await actions(page)).slice(-3), [
      { type: "control", action: "step" },
      { type: "control", action: "continue" },
      { type: "control", action: "stop" },
    ]);
    await deliver(page, { type: "runState", state: "running", runId: "r-7", superstep: 3 });
    // window.postMessage is delivered after evaluate returns: wait for the bar to take the new state.
    await page.waitForSelector('#run-controls[data-state="running"]');
    assert.equal(await text(page, "#run-controls .run-state"), "Running r-7, at superstep 3");
    assert.deepEqual(await page.$$eval("#run-controls button:disabled", (b) => b.map((e) => e.getAttribute("data-control"))), [
      "continue",
      "step",
    ]);
    await screenshot(page, "inspector-step-controls");
    await deliver(page, { type: "runState", state: "idle" });
    assert.equal(await page.$$eval("#run-controls button", (b) => b.length), 0, "gone when the run ends");
    await page.close();
  });

  it("keeps the values of its selects and the keyboard focus when the host sends the run again", async () => {
    const store = invoiceStore();
    const page = await openInspector(browser, invoiceModel(INVOICE_RUN, { ok: true }, store), { store });
    await selectSuperstep(page, 1);
    await page.waitForSelector(".verdict-large, .tab-body .absent, .proposal-json");
    await page.selectOption("select.replay-mode", "live");
    await page.selectOption("select.eval-format", "promptfoo");
    await page.focus("select.replay-mode");
    // The case file changed on disk: the host sends the run again, then the superstep's details.
    await deliver(page, { type: "load", model: invoiceModel(INVOICE_RUN, { ok: true }, store) });
    await settled(page, 1, 2);
    assert.equal(await page.$eval("select.replay-mode", (e) => (e as HTMLSelectElement).value), "live");
    assert.equal(await page.$eval("select.eval-format", (e) => (e as HTMLSelectElement).value), "promptfoo");
    assert.equal(await page.evaluate(() => document.activeElement?.className), "replay-mode", "focus stays on the select");

    // Keyboard navigation in the timeline goes on where it was after a reload.
    await page.focus(".timeline-viewport");
    await page.keyboard.press("ArrowDown");
    await page.waitForSelector('.detail-head h2:text-is("Superstep 2")');
    await deliver(page, { type: "load", model: invoiceModel(INVOICE_RUN, { ok: true }, store) });
    await settled(page, 2, 2);
    assert.equal(await page.evaluate(() => document.activeElement?.className), "timeline-viewport", "focus stays on the timeline");
    await page.keyboard.press("ArrowDown");
    await page.waitForSelector('.detail-head h2:text-is("Superstep 3")');
    assert.equal(await page.$eval("select.replay-mode", (e) => (e as HTMLSelectElement).value), "live", "kept across supersteps");
    await page.close();
  });

  it("keeps keyboard focus and the choice in the context-diff picker when the host sends the run again", async () => {
    const store = new MemoryStore();
    commitContextBranches(store);
    const page = await openInspector(browser, invoiceModel(AMOUNT_BRANCH, { ok: true }, store), { store });
    await selectSuperstep(page, 1);
    await openTab(page, "context");
    await page.selectOption("select.compare-select", ORIGINAL_CALL);
    await page.waitForSelector(".context-diff");
    await page.focus("select.compare-select");
    await deliver(page, { type: "load", model: invoiceModel(AMOUNT_BRANCH, { ok: true }, store) });
    await settled(page, 1, 2);
    await page.waitForSelector(".context-diff");
    assert.equal(await page.$eval("select.compare-select", (e) => (e as HTMLSelectElement).value), ORIGINAL_CALL);
    assert.equal(await page.evaluate(() => document.activeElement?.className), "compare-select", "focus stays on the picker");
    await page.close();
  });

  it("keeps replay and export to agent steps, and says why elsewhere", async () => {
    const page = await openInvoice(browser);
    await selectSuperstep(page, 2);
    for (const action of ["replay", "export"]) {
      const b = await page.$(`button[data-action="${action}"]`);
      assert.equal(await b!.isDisabled(), true, `${action} disabled on a commit step`);
      assert.match((await b!.getAttribute("title")) ?? "", /Only agent steps/);
    }
    assert.equal(await page.isDisabled('button[data-action="resume"]'), false);
    await page.close();
  });

  it("in Restricted Mode disables what runs workflow code, with the reason, and still inspects", async () => {
    const reason = "Casefile does not run workflow code in Restricted Mode.";
    const page = await openInspector(browser, invoiceModel(INVOICE_RUN, { ok: false, reason }));
    assert.match(await text(page, ".banner"), /Restricted Mode\. Casefile does not run workflow code/);
    await selectSuperstep(page, 1);
    // Export too: it loads the workflow file (its proposal schema and rules), which is workflow code.
    for (const action of ["resume", "debug", "fork", "replay", "export"]) {
      assert.equal(await page.isDisabled(`button[data-action="${action}"]`), true, `${action} disabled`);
      assert.equal(await page.getAttribute(`button[data-action="${action}"]`, "title"), reason);
    }
    assert.equal(await page.isDisabled("button.show-graph"), true, "the Workflow Graph button is disabled (describing runs the workflow)");
    await page.click('button[data-action="resume"]', { force: true });
    assert.deepEqual(await actions(page), [{ type: "ready" }], "a disabled action posts nothing");
    // The banner's way out is a link to VS Code's Workspace Trust editor.
    await page.click(".banner a.manage-trust");
    assert.deepEqual(
      await actions(page),
      [{ type: "ready" }, { type: "manageTrust" }],
      "the link asks the host to open Manage Workspace Trust",
    );
    await page.close();
  });

  it("drops a malformed or hostile message from the host and keeps working", async () => {
    const page = await openInspector(browser, invoiceModel(INVOICE_RUN));
    const warnings: string[] = [];
    page.on("console", (m) => {
      if (m.type() === "warning") warnings.push(m.text());
    });
    // The rows' text content: innerText depends on layout, which a loaded machine may not have done yet.
    const rowContent = () => page.$$eval(".timeline-row", (els) => els.map((e) => e.textContent));
    const before = await rowContent();
    assert.equal(before.length, 4);
    await deliver(page, { type: "load", model: { v: 1, run: "<img src=x onerror=alert(1)>" } });
    await deliver(page, { type: "evil", html: "<script>alert(1)</script>" });
    await deliver(page, "not even an object");
    await deliver(page, { type: "notice", level: "info", message: "<b>still here</b>" });
    await page.waitForSelector("#notice.visible");
    assert.deepEqual(await rowContent(), before);
    // Console events reach the test asynchronously; give a loaded machine a moment.
    const dropped = () => warnings.filter((w) => w.includes("dropped a malformed message")).length;
    for (let i = 0; i < 50 && dropped() < 3; i++) await new Promise((r) => setTimeout(r, 100));
    assert.equal(dropped(), 3);
    // Text from the host is shown as text, never parsed as HTML.
    assert.match(await text(page, "#notice"), /<b>still here<\/b>/);
    assert.deepEqual((page as Page & { errors: string[] }).errors, []);
    await page.close();
  });

  it("paints a 10,000-superstep run quickly and scrolls it with only the rows in view in the DOM", async function () {
    this.timeout(120_000);
    const store = new MemoryStore();
    const runId = "run-10k";
    const batches = hugeRun(runId, 10_000);
    const t0 = performance.now();
    for (const b of batches) store.commit(b);
    const tStore = performance.now();
    const model = buildInspectorViewModel(store, { caseFile, canRun: { ok: true } });
    const tModel = performance.now();
    const page = await openWebview(browser, { script: "media/inspector.js", styles: ["media/codicon.css", "media/inspector.css"] });
    // Handed over as a JSON string: the page parses it and posts it to itself, as VS Code delivers it.
    const payload = JSON.stringify({ type: "load", model });
    const tDeliver = performance.now();
    await page.evaluate((json) => window.postMessage(JSON.parse(json), "*"), payload);
    await page.waitForSelector(`body[data-loaded="${runId}"]`);
    const tPainted = performance.now();
    const inPage = Number(await page.getAttribute("body", "data-paint-ms"));
    const parseMs = Number(await page.getAttribute("body", "data-parse-ms"));
    console.log(
      `      10,000 supersteps: store ${(tStore - t0).toFixed(0)} ms, view model ${(tModel - tStore).toFixed(0)} ms (${(JSON.stringify(model).length / 1e6).toFixed(1)} MB JSON), ` +
        `load message to first painted frame ${inPage.toFixed(0)} ms in the page (of which schema parse ${parseMs.toFixed(0)} ms), ${(tPainted - tDeliver).toFixed(0)} ms seen from the test (transfer included)`,
    );
    const rows = await page.$$eval(".timeline-row", (r) => r.length);
    assert.ok(rows > 10 && rows < 80, `only the rows in view exist (${rows})`);
    assert.equal(await text(page, ".pane-title"), "SUPERSTEPS 10000");
    await screenshot(page, "inspector-10k-top");

    await page.focus(".timeline-viewport");
    await page.keyboard.press("End");
    await page.waitForSelector('.detail-head h2:text-is("Superstep 9999")');
    const last = await rowTexts(page);
    assert.equal(last[last.length - 1], "#9999 work");
    assert.ok(
      (await page.$$eval(".timeline-row", (r) => r.length)) < 80,
      'expected: (await page.$$eval(".timeline-row", (r) => r.length)) < 80',
    );
    const box = (await (await page.$(".timeline-viewport"))!.boundingBox())!;
    await page.mouse.move(box.x + 50, box.y + 50);
    const tScroll = performance.now();
    for (let i = 0; i < 20; i++) await page.mouse.wheel(0, -3000);
    await page.waitForFunction(() => document.querySelector(".timeline-viewport")!.scrollTop < 9000 * 30);
    console.log(`      scrolled 60,000 px in 20 wheel steps in ${(performance.now() - tScroll).toFixed(0)} ms`);
    await screenshot(page, "inspector-10k-end");
    await page.close();
  });

  it("stacks proposal above commit in a narrow panel and keeps them side by side in a wide one", async () => {
    const page = await openInvoice(browser);
    await selectSuperstep(page, 2);
    await openTab(page, "decision");
    await page.waitForSelector(".column.commit");
    const boxes = async (): Promise<{ proposal: { x: number; y: number }; commit: { x: number; y: number } }> => ({
      proposal: (await (await page.$(".column.proposal"))!.boundingBox())!,
      commit: (await (await page.$(".column.commit"))!.boundingBox())!,
    });
    const wide = await boxes();
    assert.equal(wide.proposal.y, wide.commit.y);
    assert.ok(wide.commit.x > wide.proposal.x, "expected: wide.commit.x > wide.proposal.x");
    await page.setViewportSize({ width: 720, height: 900 });
    const narrow = await boxes();
    assert.ok(narrow.commit.y > narrow.proposal.y, "commit below proposal");
    await screenshot(page, "inspector-decision-narrow");
    await openTab(page, "state");
    await page.waitForSelector("table.state");
    const table = (await (await page.$("table.state"))!.boundingBox())!;
    const pane = (await (await page.$(".detail"))!.boundingBox())!;
    assert.ok(table.x + table.width <= pane.x + pane.width, "the state table fits the narrow panel");
    await screenshot(page, "inspector-state-narrow");
    await page.close();
  });

  describe("the Context tab's diff", () => {
    async function openBranches(runId: string, theme: Theme = "dark"): Promise<Page> {
      const store = new MemoryStore();
      commitContextBranches(store);
      const page = await openInspector(browser, invoiceModel(runId, { ok: true }, store), { store, theme });
      await selectSuperstep(page, 1);
      await openTab(page, "context");
      await page.waitForSelector("select.compare-select");
      return page;
    }
    const options = (page: Page): Promise<string[][]> =>
      page.$$eval("select.compare-select optgroup", (groups) =>
        groups.map((g) => [g.getAttribute("label")!, ...Array.from(g.querySelectorAll("option"), (o) => o.textContent!)]),
      );

    it("lists this executor in the other branches and this run's other agent steps", async () => {
      const page = await openBranches(AMOUNT_BRANCH);
      assert.deepEqual(await options(page), [
        [
          "The same executor in other branches",
          `${INVOICE_RUN} (parent run) · superstep 1 · triage`,
          `${SAME_BRANCH} (sibling branch) · superstep 1 · triage`,
        ],
        ["Other agent steps in this run", `${AMOUNT_BRANCH} · superstep 2 · review`],
      ]);
      assert.equal(await page.$$eval(".messages .message", (m) => m.length), 2, "this context's messages until one is picked");
      await page.close();
    });

    for (const theme of ["dark", "light", "hc"] as const) {
      it(`asks the host for the chosen context and marks what changed, message by message (${theme})`, async () => {
        const page = await openBranches(AMOUNT_BRANCH, theme);
        await page.selectOption("select.compare-select", ORIGINAL_CALL);
        await page.waitForSelector(".context-diff");
        const requests = (await posted(page)).filter((m) => m.type === "loadContext");
        assert.equal(requests.length, 1);
        assert.deepEqual(InspectorToHostSchema.parse(requests[0]), {
          type: "loadContext",
          requestId: requests[0]!.requestId,
          runId: INVOICE_RUN,
          superstep: 1,
          agentCallId: ORIGINAL_CALL,
        });
        assert.deepEqual(await texts(page, "table.diff-sides tbody tr"), [
          `− ${INVOICE_RUN} (parent run) · superstep 1 · triage sha256:3c1f9be0a4d27e55 118 gpt-4o-mini`,
          "+ this step sha256:9d02e1c7b35a4f10 134 (+16) gpt-4o-mini",
        ]);
        assert.equal(
          await text(page, ".diff-verdict"),
          "1 changed · 0 only in this step · 0 only in the other · 1 the same (of 2 messages here, 2 there)",
        );
        assert.deepEqual(await page.$$eval(".diff-messages .message", (els) => els.map((e) => (e as HTMLElement).dataset.change)), [
          "same",
          "changed",
        ]);
        assert.deepEqual(await texts(page, ".diff-messages del.diff-removed"), ["1840.50"]);
        assert.deepEqual(await texts(page, ".diff-messages ins.diff-added"), [
          "18405.00",
          "Amount above the auto-approval limit of 10000.00 EUR: yes",
        ]);
        assert.match(await text(page, ".diff-messages .diff-changed .tokens"), /^\d+ → \d+ tokens \(\+\d+\)$/);
        const added = await page.$eval("ins.diff-added", (e) => getComputedStyle(e).backgroundColor);
        const removed = await page.$eval("del.diff-removed", (e) => getComputedStyle(e).backgroundColor);
        assert.notEqual(added, removed, "added and removed text are told apart");
        assert.notEqual(added, "rgba(0, 0, 0, 0)");
        await screenshot(page, `inspector-context-diff-${theme}`);
        // Back to this context alone; choosing the same one again asks nothing more of the host.
        await page.selectOption("select.compare-select", "");
        await page.waitForSelector(".messages .message-content");
        await page.selectOption("select.compare-select", ORIGINAL_CALL);
        await page.waitForSelector(".context-diff");
        assert.equal((await posted(page)).filter((m) => m.type === "loadContext").length, 1);
        assert.deepEqual(await cspViolations(page), []);
        assert.deepEqual((page as Page & { errors: string[] }).errors, []);
        await page.close();
      });
    }

    it("says plainly when the two contexts are the same", async () => {
      const page = await openBranches(INVOICE_RUN);
      assert.deepEqual(await options(page), [
        [
          "The same executor in other branches",
          `${AMOUNT_BRANCH} (branch of this run) · superstep 1 · triage`,
          `${SAME_BRANCH} (branch of this run) · superstep 1 · triage · same context`,
        ],
      ]);
      await page.selectOption("select.compare-select", SAME_CALL);
      await page.waitForSelector(".diff-identical");
      assert.equal(await text(page, ".diff-identical"), "Same context: both requests have hash sha256:3c1f9be0a4d27e55.");
      assert.equal(await page.$$eval(".diff-messages", (m) => m.length), 0);
      await screenshot(page, "inspector-context-same");
      await page.close();
    });

    it("drops an answer to a request it did not make, and one that does not parse", async () => {
      const page = await openBranches(AMOUNT_BRANCH);
      const warnings: string[] = [];
      page.on("console", (m) => warnings.push(m.text()));
      await deliver(page, { type: "context", requestId: "context-99", context: { absent: "made up" } });
      await deliver(page, { type: "context", requestId: "context-1", context: { messages: "<img src=x onerror=alert(1)>" } });
      for (let i = 0; i < 50 && warnings.length < 2; i++) await new Promise((r) => setTimeout(r, 100));
      assert.equal(warnings.filter((w) => /did not make|malformed/.test(w)).length, 2, warnings.join("\n"));
      assert.equal(await page.$$eval(".context-diff", (d) => d.length), 0);
      await page.close();
    });
  });

  describe("a branch reaching an effect another run of the case holds", () => {
    async function openRefund(
      which: "reused" | "refused",
    ): Promise<{ page: Page; runs: Awaited<ReturnType<typeof commitRefundBranches>> }> {
      const store = new MemoryStore();
      const runs = await commitRefundBranches(store);
      assert.deepEqual(runs.posted, [{ order: "O-7", amount: 60, currency: "EUR" }], "one refund reached the bank");
      const page = await openInspector(browser, buildInspectorViewModel(store, { caseFile, runId: runs[which], canRun: { ok: true } }), {
        store,
      });
      await selectSuperstep(page, 2);
      await openTab(page, "intents");
      await page.waitForSelector(".intent h3");
      return { page, runs };
    }

    it("a refused intent shows both intents side by side, the differing field marked, and the run's error names it", async () => {
      const { page, runs } = await openRefund("refused");
      assert.match(await text(page, ".title .status"), /NEEDS REPLANNING/);
      assert.match(
        await text(page, ".run-error"),
        new RegExp(`EFFECT_CONFLICT: .*payload\\.amount: 60 \\(run ${runs.root}\\) vs 25 \\(this branch\\)`),
      );
      assert.match(await text(page, ".intent h3"), /refund → bank:refunds NEEDS REPLANNING/);
      assert.match(
        await text(page, ".conflict .error-text"),
        new RegExp(
          `Not acted, not adopted: key ${runs.root}:refund:2 is held by run ${runs.root}'s done intent, which differs in 1 field\\.`,
        ),
      );
      assert.deepEqual(await texts(page, ".conflict-sides thead th"), ["FIELD", "EXISTING (DONE)", "PROPOSED (THIS RUN)"]);
      assert.deepEqual(await texts(page, ".conflict-sides tr.differs"), ["payload.amount 60 25"], "only the amount is marked");
      assert.deepEqual(await texts(page, ".conflict-sides tbody tr:not(.differs)"), [
        "action refund refund",
        "target bank:refunds bank:refunds",
        "payload.order O-7 O-7",
        "payload.currency EUR EUR",
        "reliesOn.orderTotal 80 80",
      ]);
      assert.match(await text(page, ".conflict"), /existing reference: \{"id":"RF-1"\}/);
      assert.equal(await page.$$eval(".intent .reused", (e) => e.length), 0);
      assert.deepEqual(await cspViolations(page), []);
      await screenshot(page, "inspector-intent-conflict");
      await page.close();
    });

    it("a reused intent says from which run's intent its reference came", async () => {
      const { page, runs } = await openRefund("reused");
      assert.match(await text(page, ".intent h3"), /refund → bank:refunds DONE/);
      assert.equal(
        await text(page, ".intent .reused"),
        `Reused the reference of run ${runs.root}'s intent ${runs.root}:refund:2: the same action, target, payload and relied-on values under the same key; not acted again.`,
      );
      assert.match(
        await text(page, ".intent .kv"),
        new RegExp(`idempotency key ${runs.root}:refund:2 record ${runs.root}:refund:2@${runs.reused}`),
      );
      assert.equal(await page.$$eval(".conflict", (e) => e.length), 0);
      await screenshot(page, "inspector-intent-reused");
      await page.close();
    });
  });

  for (const theme of ["light", "hc"] as const) {
    it(`renders in the ${theme === "hc" ? "high-contrast" : theme} theme with the theme's colours`, async () => {
      const page = await openInvoice(browser, INVOICE_RUN, theme);
      await selectSuperstep(page, 2);
      await openTab(page, "decision");
      await page.waitForSelector(".verdict-large");
      const bg = await page.$eval("body", (b) => getComputedStyle(b).backgroundColor);
      assert.equal(bg, theme === "light" ? "rgb(255, 255, 255)" : "rgb(0, 0, 0)");
      const iconFont = await page.$eval(".verdict-large .codicon", (e) => getComputedStyle(e).fontFamily);
      assert.match(iconFont, /codicon/);
      await screenshot(page, `inspector-decision-${theme}`);
      await page.close();
    });
  }
});
