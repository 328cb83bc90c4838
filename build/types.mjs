// Emits the runtime's type declarations for workflow authors into dist/types/: the declarations of
// src/engine/index.ts (what `import ... from "casefile"` gives a workflow) and zod's own .d.ts
// files. A scaffolded workflow folder's tsconfig.json maps "casefile" and "zod" to these
// (src/extension/scaffold.ts), so a workflow type-checks with no npm install.
// Usage: node build/types.mjs
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(import.meta.url);
const out = "dist/types";
rmSync(out, { recursive: true, force: true });
execFileSync(
  process.execPath,
  [
    require.resolve("typescript/bin/tsc"),
    "src/engine/index.ts",
    "--declaration",
    "--emitDeclarationOnly",
    "--outDir",
    `${out}/casefile`,
    "--rootDir",
    "src",
    "--target",
    "ES2022",
    "--module",
    "Node16",
    "--moduleResolution",
    "Node16",
    "--strict",
    "--skipLibCheck",
    "--esModuleInterop",
    "--resolveJsonModule",
    "--types",
    "node",
  ],
  { stdio: "inherit" },
);
const zod = path.dirname(require.resolve("zod/package.json"));
function copyDts(from, to) {
  for (const e of readdirSync(from, { withFileTypes: true })) {
    if (e.isDirectory() && e.name !== "src" && e.name !== "node_modules") copyDts(path.join(from, e.name), path.join(to, e.name));
    else if (e.isFile() && (e.name.endsWith(".d.ts") || e.name === "LICENSE")) {
      mkdirSync(to, { recursive: true });
      copyFileSync(path.join(from, e.name), path.join(to, e.name));
    }
  }
}
copyDts(zod, `${out}/zod`);
console.log(`types: ${out}/casefile (runtime declarations), ${out}/zod (zod's declarations)`);
