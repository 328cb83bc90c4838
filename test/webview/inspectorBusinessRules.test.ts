import * as assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import { openCaseFile, type SqlJsStore } from "../../src/casefile/index";
import { main } from "../../src/cli/main";
import { buildInspectorViewModel, buildSuperstepDetail } from "../../src/extension/viewModel";
import { deliver, launchBrowser, openWebview, screenshot } from "./webviewHost";

/**
 * The Run Inspector's decision shows which business rules a verdict used: a pallet invoice run
 * through the CLI with a rule book (40 cartons per pallet, which a commit rule reads, and a second rule
 * only `apply` reads), the case file reopened from disk, the real view-model builder, the real bundle.
 */

describe("Run Inspector: the business rules a verdict used (headless Chromium)", function () {
  this.timeout(60_000);
  let browser: Browser;
  let dir: string;
  let store: SqlJsStore;
  const ids: string[] = [];

  before(async () => {
    browser = await launchBrowser();
    dir = mkdtempSync(path.join(os.tmpdir(), "casefile-inspector-rules-"));
    const book = path.join(dir, "book.casefile");
    const env = { USER: "tester", CASEFILE_RULES: book };
    const cli = async (args: string[]): Promise<string> => {
      const out: string[] = [];
      const err: string[] = [];
      const code = await main(args, { out: (l) => out.push(l), err: (l) => err.push(l), env });
      assert.equal(code, 0, `casefile ${args.join(" ")}: ${err.join("\n")}`);
      return out.join("\n");
    };
    for (const [statement, value] of [
      ["Supplier 3 invoices per pallet of 40 cartons", '{"cartonsPerPallet":40}'],
      ["Invoices over 10 pallets need a second look", '{"maxPallets":10}'],
    ] as const) {
      const id = /added (rule-[0-9a-f]+)/.exec(
        await cli(["rules", book, "add", "--statement", statement, "--value", value, "--by", "ana"]),
      )![1]!;
      await cli(["rules", book, "confirm", id, "--by", "maria"]);
      ids.push(id);
    }
    const caseFile = path.join(dir, "pallets.casefile");
    await cli(["run", path.resolve(__dirname, "../fixtures/rules/pallets.ts"), "--case-file", caseFile]);
    store = await openCaseFile(caseFile, { readOnly: true });
  });
  after(async () => {
    store?.close();
    await browser?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function openDecision(): Promise<Page> {
    const run = store.listRuns()[0]!;
    const page = await openWebview(browser, {
      script: "media/inspector.js",
      styles: ["media/codicon.css", "media/inspector.css"],
      theme: "dark",
      onPost: async (p: Page, m: { type: string; [k: string]: unknown }) => {
        if (m.type === "loadSuperstep")
          await deliver(p, {
            type: "superstep",
            requestId: m.requestId,
            detail: buildSuperstepDetail(store, m.runId as string, m.superstep as number),
          });
      },
    });
    const model = buildInspectorViewModel(store, {
      caseFile: { path: "/workspace/pallets.casefile", name: "pallets.casefile" },
      runId: run.id,
      canRun: { ok: true },
    });
    await deliver(page, { type: "load", model });
    await page.waitForSelector(`body[data-loaded="${run.id}"]`);
    const decide = store.listVerdicts(run.id)[0]!.superstep;
    await page.click(`.timeline-row:has(.superstep-number:text-is("#${decide}"))`);
    await page.waitForSelector(`.detail-head h2:text-is("Superstep ${decide}")`);
    await page.click('.tab[data-tab="decision"]');
    await page.waitForSelector(".business-rules");
    return page;
  }

  it("lists the rules the commit step was given, each marked used and named with the commit rule (or apply) that read it", async () => {
    const page = await openDecision();
    const heading = await page.$eval(".business-rules h4", (e) => (e as HTMLElement).innerText.trim());
    assert.equal(heading, "BUSINESS RULES (2, AS RECORDED WITH THE AGENT CALL IT JUDGED)", "the heading says how many and from where");
    const rows = await page.$$eval(".business-rule", (els) =>
      els.map((e) => ({ used: e.classList.contains("used"), text: (e as HTMLElement).innerText.replace(/\s+/g, " ").trim() })),
    );
    const [perPallet, maxPallets] = ids.map((id) => rows.find((r) => r.text.includes(id)));
    assert.ok(perPallet && maxPallets, `both rules are listed: ${JSON.stringify(rows)}`);
    assert.equal(perPallet.used, true, "the carton rule is marked used");
    assert.match(
      perPallet.text,
      /Supplier 3 invoices per pallet of 40 cartons \{ ?"cartonsPerPallet": ?40 ?\} used by perPalletRuleKnown, apply; confirmed by maria at /,
    );
    // The fixture's apply maps over every rule's value to find the carton count, so it read this one too.
    assert.equal(maxPallets.used, true, "the rule only apply read is marked used");
    assert.match(maxPallets.text, /Invoices over 10 pallets need a second look .* used by apply; confirmed by maria/);
    await screenshot(page, "inspector-business-rules");
    await page.close();
  });
});
