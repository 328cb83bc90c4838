import * as assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describeInChild } from "../../src/runner/describe";

/**
 * The describe child process (dist/describe.js, built by `npm run build`): it bundles and builds a
 * workflow file and reports its graph, its validation problems, or where bundling failed.
 */

const ROOT = path.resolve(__dirname, "../..");
const DESCRIBE = path.join(ROOT, "dist/describe.js");

describe("describe child process", function () {
  this.timeout(60000);
  const dir = mkdtempSync(path.join(tmpdir(), "casefile-describe-"));

  it("reports the invoice example's graph", async () => {
    const d = await describeInChild(DESCRIBE, path.join(ROOT, "examples/invoice/workflow.ts"));
    assert.ok(d.ok, JSON.stringify(d));
    assert.equal(d.name, "invoice-variance");
    assert.equal(d.graph.start, "load");
    assert.deepEqual(
      d.graph.executors.map((e) => `${e.id}:${e.kind}`),
      ["load:loader", "variance:code", "propose:agent", "decide:commit", "review:request", "settle:code"],
    );
    assert.equal(d.graph.keys.find((k) => k.key === "invoice")?.owner, "load");
    assert.ok(
      d.graph.edges.some((e) => e.conditional && e.label === "escalated"),
      `no conditional edge labelled escalated among ${JSON.stringify(d.graph.edges)}`,
    );
  });

  it("reports every validation problem with its executor and key", async () => {
    const file = path.join(dir, "broken.ts");
    writeFileSync(
      file,
      `import { code, defineWorkflow, edge, z } from "casefile";
export default defineWorkflow({
  name: "broken",
  version: 1,
  state: { a: z.number() },
  start: "one",
  executors: {
    one: code({ owns: ["a", "nope"], run() { return 1; } }),
    two: code({ owns: ["a"], run() { return 1; } }),
  },
  edges: [edge("one", "ghost")],
});
`,
    );
    const d = await describeInChild(DESCRIBE, file);
    assert.equal(d.ok, false);
    if (d.ok) return;
    // Every problem, each by code, executor and key: a count of "at least 3" passed with one missing.
    assert.deepEqual(
      d.problems.map((p) => [p.code, p.executor, p.key]),
      [
        ["UNKNOWN_KEY", "one", "nope"],
        ["DUPLICATE_OWNER", "two", "a"],
        ["UNKNOWN_EXECUTOR", "ghost", undefined],
        ["UNREACHABLE_EXECUTOR", "two", undefined],
      ],
      JSON.stringify(d.problems),
    );
    assert.ok(
      d.problems.every((p) => p.file === file),
      `problems not all in ${file}: ${JSON.stringify(d.problems)}`,
    );
  });

  it("reports a bundling error with its file, line and column", async () => {
    const file = path.join(dir, "syntax.ts");
    writeFileSync(file, `import { defineWorkflow } from "casefile";\n\nexport default defineWorkflow({ name: "x", version: 1,, });\n`);
    const d = await describeInChild(DESCRIBE, file);
    assert.equal(d.ok, false);
    if (d.ok) return;
    assert.equal(d.problems[0]?.code, "BUNDLE_FAILED");
    assert.equal(d.problems[0]?.file, file);
    assert.equal(d.problems[0]?.line, 3);
    assert.ok((d.problems[0]?.column ?? 0) > 0, "expected: (d.problems[0]?.column ?? 0) > 0");
  });
});
