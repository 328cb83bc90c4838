// ESLint flat config: typescript-eslint's recommended rules over the sources, tests and examples,
// and the layering of src/ (DESIGN.md, Layers), checked per folder.
import tseslint from "typescript-eslint";

/**
 * The layering rules. Each folder gets a list of forbidden import specifiers (regular
 * expressions, matched against the text in the quotes) with the reason a reader sees. Relative
 * imports are matched by the layer folder they reach: `^(\.\./)+casefile(/|$)` is
 * `../casefile/...` from `src/engine/` and `../../casefile/...` from `src/engine/providers/`.
 * The same lists feed two rules: `no-restricted-imports` (import and export declarations,
 * `import type` included) and `no-restricted-syntax` (`import()`, `require()`,
 * `import x = require()` and `typeof import()` types, which the first rule does not see).
 * test/unit/lint/layering.test.ts breaks each rule on purpose and sees it fail.
 */
const pkg = (...names) => `^(${names.map((n) => n.replace(/[.]/g, "\\.")).join("|")})(/|$)`;
const layer = (...names) => `^(\\.\\./)+(${names.join("|")})(/|$)`;

const VSCODE = { regex: pkg("vscode"), message: "only src/extension/ imports vscode, types included (DESIGN.md, Layers)" };

/** The packages webview code may import: they run in the panel's browser. */
const BROWSER_PACKAGES = ["zod", "diff", "@dagrejs/dagre"];

const LAYERS = {
  "src/engine/**": [
    VSCODE,
    { regex: pkg("sql.js", "pg"), message: "engine holds no storage: sql.js and pg belong to the stores (src/casefile/ and beside it)" },
    {
      regex: layer("casefile", "runner", "cli", "debug", "extension", "webview", "authoring"),
      message: "engine is the bottom layer: it imports no store, runner, cli, debug, extension or webview code (DESIGN.md, Layers)",
    },
  ],
  "src/casefile/**": [
    VSCODE,
    {
      regex: layer("runner", "cli", "debug", "extension", "webview", "authoring"),
      message:
        "casefile (the stores) imports only engine and protocol: no runner, cli, debug, extension or webview code (DESIGN.md, Layers)",
    },
  ],
  "src/pgstore/**": [
    VSCODE,
    { regex: pkg("sql.js"), message: "the Postgres store holds no sql.js: the case file is src/casefile/" },
    {
      regex: layer("casefile", "runner", "cli", "debug", "extension", "webview", "authoring"),
      message:
        "pgstore (a store beside casefile) imports only engine and protocol: no case-file, runner, cli, debug, extension or webview code (DESIGN.md, Layers)",
    },
  ],
  "src/{runner,cli,debug}/**": [
    VSCODE,
    {
      regex: layer("extension", "webview"),
      message: "runner, cli and debug are glue below the editor: no extension or webview code (DESIGN.md, Layers)",
    },
  ],
  // Runs as OpenTelemetry traces: reads the engine's records and types, sends with the SDK; the
  // CLI and the runner call it. No store, runner, cli, debug, extension or webview code.
  "src/otel/**": [
    VSCODE,
    { regex: pkg("sql.js", "pg"), message: "otel reads records through the engine's store interface: no sql.js or pg" },
    {
      regex: layer("casefile", "pgstore", "runner", "cli", "debug", "extension", "webview", "authoring"),
      message: "otel imports only engine and protocol code: no store, runner, cli, debug, extension or webview code (DESIGN.md, Layers)",
    },
  ],
  "src/webview/**": [
    {
      // Anything but ./, ../protocol/ (or ../webview/) and the browser packages: Node builtins
      // (node:fs, fs, path...), vscode, sql.js and every other layer included.
      regex: `^(?!\\./|(\\.\\./)+(?!\\.\\./)(protocol|webview)/|${BROWSER_PACKAGES.map((p) => `${p}(/|$)`).join("|")})`,
      message: `webview code runs in the panel's browser: it imports only its own modules, ../protocol/ and the browser packages ${BROWSER_PACKAGES.join(", ")} (eslint.config.mjs), no Node builtins`,
    },
  ],
  // A panel's own modules in a subfolder (src/webview/inspector/*): ../ is still the webview,
  // ../../protocol/ the schemas. Listed after src/webview/** so it replaces that list for them.
  "src/webview/*/**": [
    {
      regex: `^(?!\\./|\\.\\./(?!\\.\\./)|\\.\\./\\.\\./(protocol|webview)/|${BROWSER_PACKAGES.map((p) => `${p}(/|$)`).join("|")})`,
      message: `webview code runs in the panel's browser: it imports only its own modules, ../../protocol/ and the browser packages ${BROWSER_PACKAGES.join(", ")} (eslint.config.mjs), no Node builtins`,
    },
  ],
  "src/protocol/**": [
    {
      regex: "^(?!\\./|zod(/|$))",
      message: "protocol holds only zod schemas: it imports zod and its own modules, nothing else (DESIGN.md, Layers)",
    },
  ],
};

/** `no-restricted-imports` and `no-restricted-syntax` settings for one folder's list. */
function restrict(rules) {
  const selector = (re) => {
    const lit = `/${re.replace(/\//g, "\\/")}/`;
    return [
      `ImportExpression[source.value=${lit}]`,
      `CallExpression[callee.name="require"][arguments.0.value=${lit}]`,
      `TSExternalModuleReference[expression.value=${lit}]`,
      `TSImportType[source.value=${lit}]`,
    ];
  };
  return {
    "no-restricted-imports": ["error", { patterns: rules.map(({ regex, message }) => ({ regex, message, caseSensitive: true })) }],
    "no-restricted-syntax": ["error", ...rules.flatMap(({ regex, message }) => selector(regex).map((s) => ({ selector: s, message })))],
  };
}

/**
 * Tests: every assert.ok has a message. Without one, a failing assert.ok makes Node re-read the
 * test's source to describe the expression (a failing effects suite took 929 s to report it).
 */
const ASSERT_OK_MESSAGE = {
  selector: "CallExpression[callee.object.name='assert'][callee.property.name='ok'][arguments.length<2]",
  message: "give assert.ok a message (what was expected, and what was there): without one Node re-reads the source file to build it",
};

export default tseslint.config(
  { ignores: ["dist/**", "media/**", "node_modules/**", ".vscode-test/**", "test-output/**", "examples/**/cases/**", ".stryker-tmp/**", "reports/**"] },
  ...tseslint.configs.recommended,
  {
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      // Everywhere (tests, examples, src/authoring...): only src/extension/ may import vscode.
      ...restrict([VSCODE]),
    },
  },
  // Per layer: a later block replaces a rule's options, so each list carries VSCODE itself.
  ...Object.entries(LAYERS).map(([files, rules]) => ({ files: [files], rules: restrict(rules) })),
  {
    files: ["test/**"],
    rules: { "no-restricted-syntax": [...restrict([VSCODE])["no-restricted-syntax"], ASSERT_OK_MESSAGE] },
  },
  {
    files: ["src/extension/**"],
    rules: { "no-restricted-imports": "off", "no-restricted-syntax": "off" },
  },
  {
    files: ["test/e2e/**"],
    rules: { "no-restricted-imports": "off", "no-restricted-syntax": ["error", ASSERT_OK_MESSAGE] },
  },
  {
    // Lazy loading in a CommonJS bundle: these modules require heavy parts only when first used.
    files: [
      "**/*.mjs",
      "**/*.js",
      "bin/**",
      "src/casefile/sqlite.ts",
      "src/engine/tokens.ts",
      "src/engine/providers/openai.ts",
      "src/cli/main.ts",
      "src/otel/trace.ts",
    ],
    rules: { "@typescript-eslint/no-require-imports": "off" },
  },
);
