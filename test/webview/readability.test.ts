import * as assert from "node:assert/strict";
import type { Browser, Page } from "playwright-core";
import { MemoryStore } from "../../src/casefile/index";
import { buildInspectorViewModel, buildSuperstepDetail } from "../../src/extension/viewModel";
import type { InspectorViewModel } from "../../src/protocol/webview";
import { commitInvoiceRun, INVOICE_BRANCH, INVOICE_RUN } from "../fixtures/casefile/fixture";
import { commitRefundBranches } from "../fixtures/casefile/refundBranches";
import { THEME_NAMES, THEMES } from "./themes";
import type { Theme } from "./themes";
import { deliver, launchBrowser, openWebview, screenshot } from "./webviewHost";

/**
 * Panels that read right: in each of the four built-in themes (their real colours, ./themes.ts),
 * every status colour a person reads meets WCAG AA against what is actually behind it, computed
 * from the page's computed styles; and at a 1280 px window and in a narrow editor group no table
 * cell of the Proposal vs Commit or State tab hides part of its content (a long token may be
 * ellipsised only if its full text is on hover).
 */

const caseFile = { path: "/workspace/invoice.casefile", name: "invoice.casefile" };
const LONG_URL = "https://erp.example.com/api/v2/suppliers/SUP-0042/bank-accounts/DE89370400440532013000?include=history";

/** The invoice fixture, plus a state key holding a long URL and a long sentence, as real workflows have. */
function invoiceStore(): MemoryStore {
  const store = new MemoryStore();
  commitInvoiceRun(store);
  return store;
}

async function openInspector(browser: Browser, store: MemoryStore, model: InspectorViewModel, theme: Theme, width: number): Promise<Page> {
  const page = await openWebview(browser, {
    script: "media/inspector.js",
    styles: ["media/codicon.css", "media/inspector.css"],
    theme,
    width,
    onPost: async (p, m) => {
      if (m.type === "loadSuperstep") {
        const detail = buildSuperstepDetail(store, m.runId as string, m.superstep as number);
        // Real values are long: a URL in a fact and in the decision, the way the ERP returns them.
        for (const e of "entries" in detail.state ? detail.state.entries : [])
          if (e.key === "proposal") e.value = { ...(e.value as object), href: LONG_URL };
        for (const st of detail.steps) {
          if (!("absent" in st.decision)) {
            for (const row of st.decision.diff)
              row.after = { ...(row.after as object), note: "Approved under the standing rule for this supplier", href: LONG_URL };
          }
        }
        await deliver(p, { type: "superstep", requestId: m.requestId, detail });
      }
    },
  });
  await deliver(page, { type: "load", model });
  await page.waitForSelector(`body[data-loaded="${model.run.id}"]`);
  // The test's functions run in the page as tsx compiled them, with esbuild's name helper.
  await page.evaluate("window.__name = (f) => f");
  return page;
}

interface Measured {
  what: string;
  text: string;
  color: string;
  background: string;
  ratio: number;
}

/**
 * The contrast of each element matching `selector` with what is behind it: its colour (times the
 * opacity of it and its ancestors) painted over every background from the page down, in a canvas,
 * so any CSS colour syntax (color-mix, rgba, hex with alpha) is reduced to the pixels shown.
 */
function contrasts(page: Page, selector: string): Promise<Measured[]> {
  return page.$$eval(selector, (els) => {
    const canvas = document.createElement("canvas");
    canvas.width = canvas.height = 1;
    const g = canvas.getContext("2d", { willReadFrequently: true })!;
    const pixel = (): [number, number, number] => {
      const d = g.getImageData(0, 0, 1, 1).data;
      return [d[0]!, d[1]!, d[2]!];
    };
    const lum = ([r, gg, b]: [number, number, number]): number => {
      const c = [r, gg, b].map((v) => {
        const s = v / 255;
        return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
      });
      return 0.2126 * c[0]! + 0.7152 * c[1]! + 0.0722 * c[2]!;
    };
    const hex = (p: [number, number, number]): string => `#${p.map((v) => v.toString(16).padStart(2, "0")).join("")}`;
    return els
      .filter((e) => (e as HTMLElement).offsetParent !== null)
      .map((e) => {
        const chain: Element[] = [];
        for (let n: Element | null = e; n; n = n.parentElement) chain.unshift(n);
        g.globalAlpha = 1;
        g.fillStyle = "#ffffff";
        g.fillRect(0, 0, 1, 1);
        let opacity = 1;
        for (const n of chain) {
          const cs = getComputedStyle(n);
          opacity *= Number(cs.opacity);
          g.fillStyle = cs.backgroundColor;
          g.fillRect(0, 0, 1, 1);
        }
        const bg = pixel();
        g.globalAlpha = opacity;
        g.fillStyle = getComputedStyle(e).color;
        g.fillRect(0, 0, 1, 1);
        const fg = pixel();
        const [a, b] = [lum(fg), lum(bg)];
        return {
          what: `${e.tagName.toLowerCase()}.${Array.from(e.classList).join(".")}`,
          text: (e as HTMLElement).innerText.trim(),
          color: hex(fg),
          background: hex(bg),
          ratio: Math.round(((Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05)) * 100) / 100,
        };
      });
  });
}

/** The status texts a person reads: run and intent statuses, verdicts, step statuses, errors. */
const STATUS_TEXT = ".status, .verdict, .step-status, .run-error, .error-text, .diff-identical";

describe("Panels that read right (headless Chromium, the four built-in themes)", function () {
  let browser: Browser;
  before(async () => {
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
  });

  for (const theme of THEMES) {
    it(`every status colour meets WCAG AA (4.5:1) in ${THEME_NAMES[theme]}`, async () => {
      const seen: Measured[] = [];
      const store = invoiceStore();
      // The run's header in each status a run can have, with an error line.
      const base = buildInspectorViewModel(store, { caseFile, runId: INVOICE_RUN, canRun: { ok: true } });
      const page = await openInspector(browser, store, base, theme, 1280);
      for (const status of ["running", "paused", "waiting", "completed", "failed", "stopped", "needs_replanning", "superseded"]) {
        await deliver(page, {
          type: "load",
          model: { ...base, run: { ...base.run, status, error: { code: "EFFECT_CONFLICT", message: "the amount changed" } } },
        });
        await page.waitForFunction((s) => document.querySelector(".title .status")?.className.includes(`status-${s}`), status);
        seen.push(...(await contrasts(page, ".title .status, .run-error")));
      }
      await page.close();

      // Verdicts in the timeline (on the row background and on the selected row) and in the decision.
      for (const runId of [INVOICE_RUN, INVOICE_BRANCH]) {
        const p = await openInspector(
          browser,
          store,
          buildInspectorViewModel(store, { caseFile, runId, canRun: { ok: true } }),
          theme,
          1280,
        );
        await p.waitForSelector(".verdict-large");
        seen.push(...(await contrasts(p, STATUS_TEXT)));
        // Another row selected: the decision's verdict now on a plain row, the first row's on the selected one.
        await p.click(".timeline-row >> nth=0");
        await p.waitForSelector(".timeline-row.selected >> nth=0");
        await p.evaluate(() => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 50))));
        seen.push(...(await contrasts(p, STATUS_TEXT)));
        if (runId === INVOICE_BRANCH) await screenshot(p, `readability-branch-${theme}`);
        await p.close();
      }

      // Intents: done, needs replanning; their errors.
      const refunds = new MemoryStore();
      const runs = await commitRefundBranches(refunds);
      for (const runId of [runs.refused, runs.reused]) {
        const p = await openInspector(
          browser,
          refunds,
          buildInspectorViewModel(refunds, { caseFile, runId, canRun: { ok: true } }),
          theme,
          1280,
        );
        await p.click(".timeline-row:has(.superstep-number:text-is('#2'))");
        await p.click('.tab[data-tab="intents"]');
        await p.waitForSelector(".intent h3");
        seen.push(...(await contrasts(p, STATUS_TEXT)));
        await p.close();
      }

      const kinds = new Set(seen.map((m) => m.what.replace(/\.selected$/, "")));
      for (const must of [
        "span.verdict.verdict-accepted",
        "span.verdict.verdict-escalated",
        "span.status.status-failed",
        "span.status.status-waiting",
      ])
        assert.ok(
          [...kinds].some((k) => k.startsWith(must)),
          `measured ${must} (${[...kinds].join(", ")})`,
        );
      const failing = seen.filter((m) => m.ratio < 4.5);
      assert.deepEqual(
        failing.map((m) => `${m.what} "${m.text}" ${m.color} on ${m.background}: ${m.ratio}:1`),
        [],
        `${THEME_NAMES[theme]}: status text below 4.5:1`,
      );
      assert.ok(seen.length >= 20, `measured ${seen.length} status texts`);
    });
  }

  /** Cells whose content is wider than the cell shows, less ellipsised tokens that carry their full text on hover. */
  function clippedCells(page: Page, selector: string): Promise<string[]> {
    return page.$$eval(selector, (cells) => {
      const out: string[] = [];
      for (const cell of cells) {
        const boxes = [cell, ...Array.from(cell.querySelectorAll("*"))] as HTMLElement[];
        for (const b of boxes) {
          if (b.offsetParent === null) continue;
          const cs = getComputedStyle(b);
          if (b.scrollWidth <= b.clientWidth + 1) continue;
          if (cs.overflowX === "visible" && b !== cell) continue; // it overflows into its box, measured there
          if (cs.textOverflow === "ellipsis" && b.title === b.textContent) continue;
          out.push(`${b.tagName.toLowerCase()}.${b.className} ${b.scrollWidth}>${b.clientWidth}: ${(b.textContent ?? "").slice(0, 60)}`);
        }
        // And the cell stays inside its table's box (a column pushed out of a narrow panel is clipped too).
        const table = cell.closest("table")!;
        const r = cell.getBoundingClientRect();
        const t = table.getBoundingClientRect();
        if (r.right > t.right + 1 || t.right > document.documentElement.clientWidth + 1)
          out.push(`cell outside the panel: ${(cell.textContent ?? "").slice(0, 60)}`);
      }
      return out;
    });
  }

  for (const width of [1280, 480]) {
    it(`at ${width} px no cell of the state diff or the State tab clips its value`, async () => {
      const store = invoiceStore();
      const page = await openInspector(
        browser,
        store,
        buildInspectorViewModel(store, { caseFile, runId: INVOICE_RUN, canRun: { ok: true } }),
        "light",
        width,
      );
      await page.waitForSelector("table.diff tbody td");
      await screenshot(page, `readability-decision-${width}`);
      const after = await page.$eval("table.diff tbody td:nth-child(3)", (td) => td.getBoundingClientRect().width);
      assert.ok(after >= Math.min(320, width * 0.5), `the AFTER column is ${after} px wide at ${width} px`);
      assert.deepEqual(await clippedCells(page, "table.diff td"), []);
      assert.match(await page.$eval("table.diff", (t) => (t as HTMLElement).innerText), /"status": "approved"/);
      await page.click('.tab[data-tab="state"]');
      await page.waitForSelector("table.state tbody td");
      assert.deepEqual(await clippedCells(page, "table.state td"), []);
      // The URL is whole (on hover if not in the cell), not broken mid-word across lines.
      const url = await page.$$eval(
        "table.state td .json-token",
        (els, u) =>
          els
            .filter((e) => e.textContent === JSON.stringify(u))
            .map((e) => ({
              title: (e as HTMLElement).title,
              h: e.getBoundingClientRect().height,
              lh: parseFloat(getComputedStyle(e).lineHeight) || 16,
            })),
        LONG_URL,
      );
      assert.equal(url.length, 1, "the URL is one token");
      assert.equal(url[0]!.title, JSON.stringify(LONG_URL));
      assert.ok(url[0]!.h < url[0]!.lh * 1.5, `the URL keeps to one line (${url[0]!.h} px)`);
      await screenshot(page, `readability-state-${width}`);
      await page.close();
    });
  }
});
