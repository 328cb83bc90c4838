import * as assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { mergeTsconfig, parseJsonc, workflowFileName, workflowTemplate } from "../../src/authoring/scaffold";
import { describeInChild } from "../../src/runner/describe";

/**
 * "Casefile: New Workflow" writes the template and a tsconfig.json mapping "casefile" and "zod" to
 * the extension's declarations (dist/types, from `node build/types.mjs`). Here the scaffold goes
 * into a folder outside the repo with no node_modules, and the real `tsc --noEmit` checks it.
 */

const ROOT = path.resolve(__dirname, "../..");
const TYPES = path.join(ROOT, "dist/types");
const TSC = path.join(ROOT, "node_modules/typescript/bin/tsc");

function tsc(dir: string): { ok: boolean; output: string } {
  try {
    return { ok: true, output: execFileSync(process.execPath, [TSC, "--noEmit", "-p", dir], { encoding: "utf8" }) };
  } catch (e) {
    const err = e as { stdout?: string; stderr?: string };
    return { ok: false, output: `${err.stdout ?? ""}${err.stderr ?? ""}` };
  }
}

function scaffold(existingTsconfig?: string): { dir: string; file: string } {
  const dir = mkdtempSync(path.join(tmpdir(), "casefile-scaffold-"));
  const file = path.join(dir, workflowFileName("Credit Check"));
  writeFileSync(file, workflowTemplate("credit-check"));
  if (existingTsconfig) writeFileSync(path.join(dir, "tsconfig.json"), existingTsconfig);
  const existing = existsSync(path.join(dir, "tsconfig.json")) ? readFileSync(path.join(dir, "tsconfig.json"), "utf8") : undefined;
  writeFileSync(path.join(dir, "tsconfig.json"), mergeTsconfig(existing, TYPES));
  return { dir, file };
}

describe("New Workflow scaffold", function () {
  this.timeout(120000);

  before(function () {
    if (!existsSync(path.join(TYPES, "casefile/engine/index.d.ts"))) execFileSync(process.execPath, ["build/types.mjs"], { cwd: ROOT });
  });

  it("type-checks with tsc --noEmit in a folder outside the repo with no node_modules", () => {
    const { dir, file } = scaffold();
    assert.equal(path.basename(file), "credit-check.ts");
    assert.ok(!existsSync(path.join(dir, "node_modules")), 'expected: !existsSync(path.join(dir, "node_modules"))');
    assert.ok(!dir.startsWith(ROOT), "expected: !dir.startsWith(ROOT)");
    const r = tsc(dir);
    assert.ok(r.ok, r.output);
  });

  it("the declarations are real: a wrong write is a type error naming the key's type", () => {
    const { dir, file } = scaffold();
    writeFileSync(
      file,
      readFileSync(file, "utf8").replace('ctx.write("excess", { amount, pct });', 'ctx.write("excess", { amount: "lots", pct });'),
    );
    const r = tsc(dir);
    assert.equal(r.ok, false);
    assert.match(r.output, /credit-check\.ts\(\d+,\d+\): error TS2322: Type 'string' is not assignable to type 'number'/);
  });

  it("merges into an existing tsconfig.json with comments, keeping its other settings", () => {
    const { dir } = scaffold(`{
  // mine
  "compilerOptions": { "target": "ES2020", "paths": { "lib/*": ["./lib/*"] }, },
  "include": ["*.ts"],
}`);
    const merged = parseJsonc(readFileSync(path.join(dir, "tsconfig.json"), "utf8")) as {
      compilerOptions: { target: string; paths: Record<string, string[]> };
      include: string[];
    };
    assert.equal(merged.compilerOptions.target, "ES2020");
    assert.deepEqual(merged.include, ["*.ts"]);
    assert.deepEqual(merged.compilerOptions.paths["lib/*"], ["./lib/*"]);
    assert.deepEqual(merged.compilerOptions.paths.casefile, [`${TYPES.replace(/\\/g, "/")}/casefile/engine/index.d.ts`]);
    const r = tsc(dir);
    assert.ok(r.ok, r.output);
  });

  it("the template builds as a workflow (the runner's describe finds no problem)", async () => {
    const { file } = scaffold();
    const d = await describeInChild(path.join(ROOT, "dist/describe.js"), file);
    assert.ok(d.ok, JSON.stringify(d));
    assert.deepEqual(
      d.graph.executors.map((e) => e.kind),
      ["loader", "code", "agent", "commit", "request", "code"],
    );
  });

  it("examples/ carries New Workflow's tsconfig (casefile and zod from dist/types) and type-checks with it", () => {
    const file = path.join(ROOT, "examples/tsconfig.json");
    const text = readFileSync(file, "utf8");
    const own = parseJsonc(text) as { compilerOptions: Record<string, unknown> };
    const written = parseJsonc(mergeTsconfig(text, "../dist/types")) as { compilerOptions: Record<string, unknown> };
    assert.deepEqual(own.compilerOptions, written.compilerOptions, "New Workflow's merge into examples/tsconfig.json changes nothing");
    const r = tsc(path.join(ROOT, "examples"));
    assert.ok(r.ok, `examples/ has problems:\n${r.output}`);
  });
});
