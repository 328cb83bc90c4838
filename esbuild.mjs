// Builds every target: the extension host entry, the runner child process, the CLI, the
// runtime that workflow bundles import, and the browser bundles of the webviews (into media/).
// Usage: node esbuild.mjs [--production] [--watch]
import * as esbuild from "esbuild";
import { copyFileSync, existsSync, mkdirSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

const production = process.argv.includes("--production");
const watch = process.argv.includes("--watch");
const require = createRequire(import.meta.url);

const node = {
  bundle: true,
  platform: "node",
  target: "node18",
  format: "cjs",
  sourcemap: !production,
  minify: production,
  logLevel: "warning",
  // esbuild is loaded at run time by the runner to bundle user workflows; it ships its own
  // platform binary and cannot be bundled.
  external: ["vscode", "esbuild"],
};

// The extension host entry stays small: it registers commands, views, the custom editor and the
// CodeLens, and nothing heavy. Each module it (or a lazy module) loads with `import()` on first use
// is a bundle of its own beside it, `require`d at that moment: compiling one big file cost the
// activation far more than running it (zod alone is ~460 KB minified). zod is one shared bundle.
// A static import of a lazy module from the entry fails the build: it would load on activation.
const ENTRY = "src/extension/extension.ts";
const lazyModules = {
  "src/casefile/index.ts": "ext-casefile",
  "src/extension/viewModel.ts": "ext-viewModel",
  "src/extension/inspectorPanel.ts": "ext-inspectorPanel",
  "src/extension/graphPanel.ts": "ext-graphPanel",
  "src/extension/experimentPanel.ts": "ext-experimentPanel",
  "src/runner/client.ts": "ext-runnerClient",
  "src/runner/describe.ts": "ext-describeClient",
  "src/protocol/runner.ts": "ext-runnerProtocol",
  "src/protocol/exportEval.ts": "ext-exportEval",
  // The Testing view's eval case tree (zod, yaml) and eval --json's schema: when the view first lists or runs cases.
  "src/extension/evalTestTree.ts": "ext-evalTestTree",
  "src/protocol/evalRun.ts": "ext-evalRun",
  "src/protocol/cases.ts": "ext-casesProtocol",
  "src/authoring/scaffold.ts": "ext-scaffold",
  // The debug adapter (src/debug/) with the runner client and the case-file reader: when a session starts.
  "src/extension/debugAdapter.ts": "ext-debugAdapter",
  zod: "ext-zod",
};
const lazyByPath = new Map(Object.entries(lazyModules).map(([m, out]) => [m === "zod" ? m : path.resolve(m), out]));

/** Resolves imports of lazy modules (other than the bundle's own) to `require("./<bundle>.js")`. */
function lazyChunks(self) {
  return {
    name: "lazy-chunks",
    setup(build) {
      build.onResolve({ filter: /^(\.\.?\/|zod$)/ }, async (args) => {
        if (args.pluginData?.lazyChunks) return undefined;
        let key = args.path;
        if (key !== "zod") {
          const r = await build.resolve(args.path, {
            kind: args.kind,
            importer: args.importer,
            resolveDir: args.resolveDir,
            pluginData: { lazyChunks: true },
          });
          if (r.errors.length > 0) return undefined;
          key = r.path;
        }
        const out = lazyByPath.get(key);
        if (!out || out === self) return undefined;
        if (self === "extension" && args.kind !== "dynamic-import") {
          return {
            errors: [
              { text: `${args.path} is loaded lazily (its own bundle): import it with import(), not statically, from ${args.importer}` },
            ],
          };
        }
        return { path: `./${out}.js`, external: true };
      });
    },
  };
}
/**
 * zod's error messages in 60-odd languages (`z.locales`, over half of zod's bundle) are a bundle
 * of their own, dist/vendor-zod-locales.js, required the first time one is asked for: ext-zod.js
 * gets, in place of zod's locales index, a module with the same names as getters. Every process
 * that loads zod (CLI, runner, extension) compiled and initialised them all before. English,
 * zod's default, stays in ext-zod.js (zod requires it directly).
 */
const ZOD_LOCALES = path.join(path.dirname(require.resolve("zod")), "v4", "locales", "index.cjs");
const zodLocalesPlugin = {
  name: "zod-locales",
  setup(build) {
    build.onResolve({ filter: /\/locales\/index\.cjs$/ }, (args) =>
      path.resolve(args.resolveDir, args.path) === ZOD_LOCALES ? { path: ZOD_LOCALES, namespace: "zod-locales" } : undefined,
    );
    build.onResolve({ filter: /^\.\/vendor-zod-locales\.js$/ }, (args) => ({ path: args.path, external: true }));
    build.onLoad({ filter: /.*/, namespace: "zod-locales" }, () => {
      const names = Object.keys(require(ZOD_LOCALES));
      const contents = [
        `let all;`,
        `const load = () => all || (all = require("./vendor-zod-locales.js"));`,
        `Object.defineProperty(exports, "__esModule", { value: true });`,
        `for (const name of ${JSON.stringify(names)}) Object.defineProperty(exports, name, { enumerable: true, get: () => load()[name] });`,
      ].join("\n");
      return { contents, loader: "js" };
    });
  },
};

// External `import()` becomes `require()`: the extension host loads CommonJS.
const extensionSide = (self) => ({ ...node, supported: { "dynamic-import": false }, plugins: [lazyChunks(self)] });

// The CLI, the runner and the describe process: their own code is one bundle each, in which a
// module reached by `import()` (each CLI command, src/cli/main.ts) is initialised only when first
// used; the big third-party parts are bundles of their own beside them, `require`d when the
// module importing them is initialised. So `casefile --help` compiles none of them, `inspect`
// only zod, and no command that calls no model loads the OpenAI client. zod is the extension's
// bundle, shared. The tokenizer's rank tables are no JavaScript at all (writeRankTables, below).
const vendorChunks = {
  zod: "ext-zod",
  yaml: "vendor-yaml",
  openai: "vendor-openai",
};
const vendorChunksPlugin = {
  name: "vendor-chunks",
  setup(build) {
    build.onResolve({ filter: /^(zod|yaml|openai)$/ }, (args) =>
      Object.hasOwn(vendorChunks, args.path) ? { path: `./${vendorChunks[args.path]}.js`, external: true } : undefined,
    );
    // gpt-tokenizer's ranks as JavaScript: only src/engine/tokens.ts run from source reads them.
    build.onResolve({ filter: /^gpt-tokenizer\/cjs\/bpeRanks\// }, (args) => ({ path: args.path, external: true }));
  },
};
// The OpenTelemetry SDK with the module that drives it (src/otel/export.ts) is one bundle of its
// own, dist/otel-export.js: only a run with tracing on, or `export-otel`, requires it.
const OTEL_EXPORT = path.resolve("src/otel/export.ts");
const otelChunkPlugin = {
  name: "otel-chunk",
  setup(build) {
    build.onResolve({ filter: /\/export$/ }, (args) =>
      path.resolve(args.resolveDir, `${args.path}.ts`) === OTEL_EXPORT ? { path: "./otel-export.js", external: true } : undefined,
    );
  },
};
const nodeSplit = { ...node, plugins: [vendorChunksPlugin, otelChunkPlugin] };

/**
 * The tokenizer's rank tables in the binary form src/engine/tokens.ts reads (dist/<name>.ranks,
 * src/engine/rankTable.ts), built from the installed package's own ranks by that module's
 * buildRankTable, bundled here for the build to run.
 */
async function writeRankTables() {
  const built = await esbuild.build({
    entryPoints: ["src/engine/rankTable.ts"],
    bundle: true,
    platform: "node",
    format: "cjs",
    write: false,
  });
  const mod = { exports: {} };
  new Function("module", "exports", built.outputFiles[0].text)(mod, mod.exports);
  for (const name of ["o200k_base", "cl100k_base"]) {
    writeFileSync(`dist/${name}.ranks`, mod.exports.buildRankTable(require(`gpt-tokenizer/cjs/bpeRanks/${name}`).default));
  }
}

const browser = {
  bundle: true,
  platform: "browser",
  target: "es2022",
  format: "iife",
  sourcemap: !production,
  minify: production,
  logLevel: "warning",
  loader: { ".css": "text", ".ttf": "dataurl" },
};

const targets = [
  { ...extensionSide("extension"), entryPoints: [ENTRY], outfile: "dist/extension.js" },
  ...Object.entries(lazyModules).map(([m, out]) =>
    m === "zod"
      ? {
          ...extensionSide(out),
          plugins: [lazyChunks(out), zodLocalesPlugin],
          entryPoints: [require.resolve("zod")],
          outfile: `dist/${out}.js`,
        }
      : { ...extensionSide(out), entryPoints: [m], outfile: `dist/${out}.js` },
  ),
  { ...node, entryPoints: [ZOD_LOCALES], outfile: "dist/vendor-zod-locales.js" },
  { ...nodeSplit, entryPoints: ["src/runner/runnerMain.ts"], outfile: "dist/runner.js" },
  // Bundles and builds one workflow file, reports its graph or problems (Workflow Graph, diagnostics).
  { ...nodeSplit, entryPoints: ["src/runner/describeMain.ts"], outfile: "dist/describe.js" },
  { ...nodeSplit, entryPoints: ["src/cli/main.ts"], outfile: "dist/cli.js" },
  { ...node, entryPoints: ["src/engine/index.ts"], outfile: "dist/runtime.js" },
  // The tokenizer: the extension loads this bundle only when a Run Inspector opens
  // (src/extension/caseFiles.ts); it reads the rank table it counts with (dist/<name>.ranks)
  // on first count.
  { ...nodeSplit, entryPoints: ["src/engine/tokens.ts"], outfile: "dist/tokenCounter.js" },
  { ...node, entryPoints: ["src/otel/export.ts"], outfile: "dist/otel-export.js" },
  // node-postgres, for the Postgres store's connection thread (src/pgstore/syncClient.ts requires
  // it by path at run time, so it is no import esbuild could follow): a bundle of its own, so the
  // .vsix needs no node_modules/pg. pg-native is pg's optional native binding, never used.
  { ...node, entryPoints: [require.resolve("pg")], outfile: "dist/vendor-pg.js", external: [...node.external, "pg-native"] },
  // The vendor bundles of the CLI, the runner and tokenCounter.js (zod's is ext-zod.js, above).
  ...Object.entries(vendorChunks)
    .filter(([, out]) => out.startsWith("vendor-"))
    .map(([m, out]) => ({ ...node, entryPoints: [require.resolve(m)], outfile: `dist/${out}.js` })),
  { ...browser, entryPoints: ["src/webview/inspector.ts"], outfile: "media/inspector.js" },
  { ...browser, entryPoints: ["src/webview/graph.ts"], outfile: "media/graph.js" },
  { ...browser, entryPoints: ["src/webview/experiment.ts"], outfile: "media/experiment.js" },
].filter((t) => existsSync(t.entryPoints[0]));

mkdirSync("dist", { recursive: true });
// sql.js finds its wasm next to the bundle that loads it (see src/casefile/sqlite.ts).
copyFileSync(path.join(path.dirname(require.resolve("sql.js")), "sql-wasm.wasm"), "dist/sql-wasm.wasm");
// The webviews' icon font, served from media/ (their only local resource root).
const codicons = path.join(path.dirname(require.resolve("@vscode/codicons/package.json")), "dist");
for (const f of ["codicon.css", "codicon.ttf"]) copyFileSync(path.join(codicons, f), path.join("media", f));

await writeRankTables();
if (watch) {
  for (const t of targets) await (await esbuild.context(t)).watch();
  console.log(`watching ${targets.length} targets`);
} else {
  await Promise.all(targets.map((t) => esbuild.build(t)));
}
