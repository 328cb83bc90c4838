import assert from "node:assert/strict";
import path from "node:path";
import { ESLint } from "eslint";

/**
 * The layering of src/ (DESIGN.md, Layers) is enforced by eslint.config.mjs. Each case here breaks
 * one rule on purpose, in a file placed in the layer it concerns, and sees `npm run lint` refuse
 * it; the clean imports beside them show the rules refuse only what they should.
 */

const root = path.resolve(__dirname, "../../..");

describe("lint: the layering of src/ is enforced per folder", function () {
  this.timeout(120_000);
  let eslint: ESLint;
  before(() => {
    eslint = new ESLint({ cwd: root });
  });

  /** The ids of the rules that refused `code` as the file `filePath` (relative to the repository). */
  async function refusals(filePath: string, code: string): Promise<{ rule: string | null; message: string }[]> {
    const [result] = await eslint.lintText(code + "\n", { filePath: path.join(root, filePath) });
    return result!.messages.filter((m) => m.severity === 2).map((m) => ({ rule: m.ruleId, message: m.message }));
  }

  // The file name under each layer is made up: lintText lints the text as if it lived there.
  const refused: [file: string, code: string, says: RegExp][] = [
    // engine: no storage, no vscode, nothing from the layers above it
    ["src/engine/x.ts", `import initSqlJs from "sql.js";`, /engine holds no storage/],
    ["src/engine/x.ts", `import { Pool } from "pg";`, /engine holds no storage/],
    ["src/engine/x.ts", `import * as vscode from "vscode";`, /only src\/extension\/ imports vscode/],
    ["src/engine/x.ts", `import type * as vscode from "vscode";`, /only src\/extension\/ imports vscode/],
    ["src/engine/x.ts", `import { openCaseFile } from "../casefile/index";`, /engine is the bottom layer/],
    ["src/engine/x.ts", `import { runSession } from "../runner/session";`, /engine is the bottom layer/],
    ["src/engine/x.ts", `import { main } from "../cli/main";`, /engine is the bottom layer/],
    ["src/engine/x.ts", `import { activate } from "../extension/extension";`, /engine is the bottom layer/],
    ["src/engine/x.ts", `import { render } from "../webview/inspector";`, /engine is the bottom layer/],
    ["src/engine/x.ts", `import { Session } from "../debug/session";`, /engine is the bottom layer/],
    ["src/engine/x.ts", `export { openCaseFile } from "../casefile/index";`, /engine is the bottom layer/],
    ["src/engine/providers/x.ts", `import type { SqlJsStore } from "../../casefile/sqlJsStore";`, /engine is the bottom layer/],
    // casefile: no runner, cli, extension, webview, vscode
    ["src/casefile/x.ts", `import { runSession } from "../runner/session";`, /casefile \(the stores\)/],
    ["src/casefile/x.ts", `import { parseOptions } from "../cli/args";`, /casefile \(the stores\)/],
    ["src/casefile/x.ts", `import { activate } from "../extension/extension";`, /casefile \(the stores\)/],
    ["src/casefile/x.ts", `import { render } from "../webview/inspector";`, /casefile \(the stores\)/],
    ["src/casefile/x.ts", `import * as vscode from "vscode";`, /only src\/extension\/ imports vscode/],
    // pgstore: a store beside casefile, no case-file code, no sql.js, no runner, cli, vscode
    ["src/pgstore/x.ts", `import { SqlJsStore } from "../casefile/sqlJsStore";`, /pgstore \(a store beside casefile\)/],
    ["src/pgstore/x.ts", `import { runSession } from "../runner/session";`, /pgstore \(a store beside casefile\)/],
    ["src/pgstore/x.ts", `import initSqlJs from "sql.js";`, /holds no sql\.js/],
    ["src/pgstore/x.ts", `import * as vscode from "vscode";`, /only src\/extension\/ imports vscode/],
    // runner and cli: no vscode, no extension or webview code
    ["src/runner/x.ts", `import * as vscode from "vscode";`, /only src\/extension\/ imports vscode/],
    ["src/runner/x.ts", `import { activate } from "../extension/extension";`, /glue below the editor/],
    ["src/cli/x.ts", `import type { Uri } from "vscode";`, /only src\/extension\/ imports vscode/],
    ["src/cli/x.ts", `import { render } from "../webview/inspector";`, /glue below the editor/],
    // otel: the engine's records and the SDK; no store, runner, cli, extension or vscode
    ["src/otel/x.ts", `import { openCaseFile } from "../casefile/index";`, /otel imports only engine and protocol code/],
    ["src/otel/x.ts", `import { PostgresStore } from "../pgstore/index";`, /otel imports only engine and protocol code/],
    ["src/otel/x.ts", `import { runSession } from "../runner/session";`, /otel imports only engine and protocol code/],
    ["src/otel/x.ts", `import { activate } from "../extension/extension";`, /otel imports only engine and protocol code/],
    ["src/otel/x.ts", `import initSqlJs from "sql.js";`, /otel reads records through the engine's store interface/],
    ["src/otel/x.ts", `import * as vscode from "vscode";`, /only src\/extension\/ imports vscode/],
    // webview: browser code, only protocol and browser packages
    ["src/webview/x.ts", `import { readFileSync } from "node:fs";`, /runs in the panel's browser/],
    ["src/webview/x.ts", `import fs from "fs";`, /runs in the panel's browser/],
    ["src/webview/x.ts", `import path from "path";`, /runs in the panel's browser/],
    ["src/webview/x.ts", `import type { Json } from "../engine/records";`, /runs in the panel's browser/],
    ["src/webview/x.ts", `import { openCaseFile } from "../casefile/index";`, /runs in the panel's browser/],
    ["src/webview/x.ts", `import * as vscode from "vscode";`, /runs in the panel's browser/],
    ["src/webview/x.ts", `import initSqlJs from "sql.js";`, /runs in the panel's browser/],
    // a panel's modules in a subfolder: ../ is still the webview, but no further out
    ["src/webview/inspector/x.ts", `import { readFileSync } from "node:fs";`, /runs in the panel's browser/],
    ["src/webview/inspector/x.ts", `import { openCaseFile } from "../../casefile/index";`, /runs in the panel's browser/],
    ["src/webview/inspector/x.ts", `import type { Json } from "../../engine/records";`, /runs in the panel's browser/],
    // protocol: zod and itself
    ["src/protocol/x.ts", `import type { Json } from "../engine/records";`, /protocol holds only zod schemas/],
    ["src/protocol/x.ts", `import YAML from "yaml";`, /protocol holds only zod schemas/],
    ["src/protocol/x.ts", `import path from "node:path";`, /protocol holds only zod schemas/],
    // and vscode nowhere but src/extension/, tests included
    ["test/unit/engine/x.test.ts", `import * as vscode from "vscode";`, /only src\/extension\/ imports vscode/],
  ];

  for (const [file, code, says] of refused) {
    it(`refuses in ${file}: ${code}`, async () => {
      const found = await refusals(file, code);
      assert.ok(
        found.some((f) => f.rule === "no-restricted-imports" && says.test(f.message)),
        `expected no-restricted-imports saying ${says}, got ${JSON.stringify(found)}`,
      );
    });
  }

  // import(), require() and import = require(), which no-restricted-imports does not see.
  const refusedDynamic: [file: string, code: string, says: RegExp][] = [
    ["src/engine/x.ts", `export const load = () => import("../casefile/index.js");`, /engine is the bottom layer/],
    ["src/engine/x.ts", `export const sql = require("sql.js");`, /engine holds no storage/],
    ["src/engine/x.ts", `import vscode = require("vscode");\nexport const v = vscode;`, /only src\/extension\/ imports vscode/],
    ["src/cli/x.ts", `export type Api = typeof import("vscode");`, /only src\/extension\/ imports vscode/],
    ["src/webview/x.ts", `export const load = () => import("node:fs");`, /runs in the panel's browser/],
  ];

  for (const [file, code, says] of refusedDynamic) {
    it(`refuses in ${file}: ${code.split("\n")[0]}`, async () => {
      const found = await refusals(file, code);
      assert.ok(
        found.some((f) => f.rule === "no-restricted-syntax" && says.test(f.message)),
        `expected no-restricted-syntax saying ${says}, got ${JSON.stringify(found)}`,
      );
    });
  }

  const allowed: [file: string, code: string][] = [
    ["src/engine/x.ts", `import { z } from "zod";\nimport { CasefileError } from "./errors";\nexport { z, CasefileError };`],
    ["src/engine/providers/x.ts", `import type { ProviderConfig } from "../../protocol/runner";\nexport type P = ProviderConfig;`],
    [
      "src/casefile/x.ts",
      `import initSqlJs from "sql.js";\nimport fs from "node:fs";\nimport type { CaseStore } from "../engine/store";\nexport type S = CaseStore;\nexport { initSqlJs, fs };`,
    ],
    ["src/runner/x.ts", `import { openCaseFile } from "../casefile/index";\nexport { openCaseFile };`],
    [
      "src/cli/x.ts",
      `import { runSession } from "../runner/session";\nexport const load = () => import("../casefile/index.js");\nexport { runSession };`,
    ],
    [
      "src/webview/x.ts",
      `import { z } from "zod";\nimport { diffWords } from "diff";\nimport dagre from "@dagrejs/dagre";\nimport { HostMessageSchema } from "../protocol/webview";\nimport { diffContexts } from "./contextDiff";\nexport { z, diffWords, dagre, HostMessageSchema, diffContexts };`,
    ],
    [
      "src/webview/inspector/x.ts",
      `import { el } from "../dom";\nimport { HostMessageSchema } from "../../protocol/webview";\nimport { z } from "zod";\nexport { el, HostMessageSchema, z };`,
    ],
    [
      "src/otel/x.ts",
      `import { trace } from "@opentelemetry/api";\nimport type { CaseStore } from "../engine/store";\nimport type { OtelConfig } from "../protocol/runner";\nexport type S = CaseStore | OtelConfig;\nexport { trace };`,
    ],
    ["src/protocol/x.ts", `import { z } from "zod";\nimport { TimelineSchema } from "./timeline";\nexport { z, TimelineSchema };`],
    [
      "src/extension/x.ts",
      `import * as vscode from "vscode";\nimport type { Uri } from "vscode";\nimport { openCaseFile } from "../casefile/index";\nexport type U = Uri;\nexport { vscode, openCaseFile };`,
    ],
  ];

  for (const [file, code] of allowed) {
    it(`allows in ${file}: ${code.split("\n")[0]}`, async () => {
      assert.deepEqual(await refusals(file, code), []);
    });
  }
});
