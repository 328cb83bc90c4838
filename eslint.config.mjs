// ESLint flat config: typescript-eslint's recommended rules over the sources, tests and examples.
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["dist/**", "media/**", "node_modules/**", ".vscode-test/**", "test-output/**", "examples/**/cases/**"] },
  ...tseslint.configs.recommended,
  {
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      // The engine's layering rule: only src/extension/ may import vscode.
      "no-restricted-imports": ["error", { paths: [{ name: "vscode", message: "only src/extension/ imports vscode (DESIGN.md, Layers)" }] }],
    },
  },
  {
    files: ["src/extension/**", "test/e2e/**"],
    rules: { "no-restricted-imports": "off" },
  },
  {
    // Lazy loading in a CommonJS bundle: these modules require heavy parts only when first used.
    files: ["**/*.mjs", "**/*.js", "bin/**", "src/casefile/sqlite.ts", "src/engine/tokens.ts"],
    rules: { "@typescript-eslint/no-require-imports": "off" },
  },
);
