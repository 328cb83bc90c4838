/**
 * `npm run bench:inspector`: how long the Run Inspector takes to paint a 10,000-superstep run in
 * headless Chromium (target: under 500 ms), side by side with an earlier version of its webview.
 *
 *   before  the webview and protocol at BENCH_BASE (default d5fefde: the timeline sent as one
 *           object per superstep), built here from `git archive` into test-output/bench/;
 *   after   the working tree's webview and protocol (the timeline as columns).
 * Both are built with the same esbuild options (the production ones) and fed the same run: the
 * after model from the view-model builder, the before model the same rows in the old shape. Pages
 * alternate in one browser; the medians and their ratio are printed. Timings come from the page
 * itself (`data-paint-ms`: from the load message's arrival to the end of the frame that shows it;
 * `data-parse-ms`: the schema parse within it; `data-render-ms`: parse and building the DOM; the
 * rest is the browser's layout and first frame). BENCH_SAMPLES sets the sample count.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, rmSync } from "node:fs";
import * as path from "node:path";
import * as esbuild from "esbuild";
import { MemoryStore } from "../../src/casefile/index";
import { buildInspectorViewModel } from "../../src/extension/viewModel";
import { TimelineRows, TimelineSchema } from "../../src/protocol/webview";
import { hugeRun } from "../webview/hugeRun";
import { launchBrowser, openWebview } from "../webview/webviewHost";

const ROOT = path.resolve(__dirname, "../..");
const BASE = process.env.BENCH_BASE ?? "d5fefde";
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 9);
const OUT = path.join(ROOT, "test-output", "bench", "inspector-paint");
const SUPERSTEPS = 10_000;

async function bundle(root: string, outfile: string): Promise<void> {
  await esbuild.build({
    entryPoints: [path.join(root, "src/webview/inspector.ts")],
    outfile,
    bundle: true,
    platform: "browser",
    target: "es2022",
    format: "iife",
    minify: true,
    logLevel: "warning",
    nodePaths: [path.join(ROOT, "node_modules")],
  });
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

async function main(): Promise<void> {
  rmSync(OUT, { recursive: true, force: true });
  const baseSrc = path.join(OUT, "base");
  mkdirSync(baseSrc, { recursive: true });
  const tar = execFileSync("git", ["archive", BASE, "src/webview", "src/protocol"], { cwd: ROOT, maxBuffer: 64 << 20 });
  execFileSync("tar", ["-x", "-C", baseSrc], { input: tar });
  await bundle(baseSrc, path.join(OUT, "inspector-before.js"));
  await bundle(ROOT, path.join(OUT, "inspector-after.js"));

  const store = new MemoryStore();
  for (const b of hugeRun("run-10k", SUPERSTEPS)) store.commit(b);
  const after = buildInspectorViewModel(store, { caseFile: { path: "/w/bulk.casefile", name: "bulk.casefile" }, canRun: { ok: true } });
  const { timeline, ...rest } = after;
  const before = { ...rest, supersteps: new TimelineRows(TimelineSchema.parse(timeline)).all() };
  const variants = {
    before: { script: path.relative(ROOT, path.join(OUT, "inspector-before.js")), json: JSON.stringify({ type: "load", model: before }) },
    after: { script: path.relative(ROOT, path.join(OUT, "inspector-after.js")), json: JSON.stringify({ type: "load", model: after }) },
  };
  console.log(
    `${SUPERSTEPS.toLocaleString("en-US")} supersteps; load message as JSON: before ${(variants.before.json.length / 1e6).toFixed(2)} MB, after ${(variants.after.json.length / 1e6).toFixed(2)} MB; ${SAMPLES} samples each, alternating`,
  );

  const browser = await launchBrowser();
  const empty = (): Record<"paint" | "parse" | "render", number[]> => ({ paint: [], parse: [], render: [] });
  const results = { before: empty(), after: empty() };
  try {
    for (let i = 0; i < SAMPLES + 1; i++) {
      for (const name of i % 2 ? (["after", "before"] as const) : (["before", "after"] as const)) {
        const v = variants[name];
        const page = await openWebview(browser, { script: v.script, styles: ["media/codicon.css", "media/inspector.css"] });
        // As VS Code delivers it: a structured clone posted to the page's window.
        await page.evaluate((json) => window.postMessage(JSON.parse(json), "*"), v.json);
        await page.waitForSelector('body[data-loaded="run-10k"]', { timeout: 60_000 });
        const paint = Number(await page.getAttribute("body", "data-paint-ms"));
        const parse = Number(await page.getAttribute("body", "data-parse-ms"));
        const render = Number(await page.getAttribute("body", "data-render-ms"));
        await page.close();
        if (i === 0) continue; // warm-up: the first page of each pays for the browser's caches
        results[name].paint.push(paint);
        results[name].parse.push(parse);
        results[name].render.push(render);
      }
    }
  } finally {
    await browser.close();
  }
  const row = (name: "before" | "after"): string =>
    `${name.padEnd(7)} paint median ${median(results[name].paint).toFixed(0).padStart(5)} ms (min ${Math.min(...results[name].paint).toFixed(0)}, max ${Math.max(...results[name].paint).toFixed(0)}), ` +
    `of which schema parse ${median(results[name].parse).toFixed(0).padStart(4)} ms, parse + DOM built ${median(results[name].render) ? `${median(results[name].render).toFixed(0).padStart(4)} ms` : "not reported"} (medians)`;
  console.log(row("before"));
  console.log(row("after"));
  const ratio = (k: "paint" | "parse"): string => (median(results.before[k]) / median(results.after[k])).toFixed(1);
  console.log(`ratio before/after: paint ${ratio("paint")}x, schema parse ${ratio("parse")}x (target: after paint under 500 ms)`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
