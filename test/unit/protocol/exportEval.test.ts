import * as assert from "node:assert/strict";
import { parseExportEvalResult } from "../../../src/protocol/exportEval";

/** What the extension makes of `casefile export-eval --json`'s output (src/extension/runCommands.ts). */
describe("export-eval --json result", () => {
  it("reads the path, id and format the CLI printed", () => {
    const line = JSON.stringify({ v: 1, id: "invoice-triage-1", path: "/work/evals/invoice-triage-1.eval.json", format: "json" });
    assert.deepEqual(parseExportEvalResult(`${line}\n`), {
      ok: true,
      value: { v: 1, id: "invoice-triage-1", path: "/work/evals/invoice-triage-1.eval.json", format: "json" },
    });
  });

  it("says in one line what is wrong with output that is not the result", () => {
    const human = parseExportEvalResult('eval case x: step "triage", expects approve (accepted)\n/work/evals/x.eval.json\n');
    assert.equal(human.ok, false);
    assert.match(!human.ok ? human.error : "", /^not JSON: "eval case x/);
    const wrong = parseExportEvalResult(JSON.stringify({ v: 2, id: "x", path: "/p", format: "csv" }));
    assert.equal(wrong.ok, false);
    assert.match(!wrong.ok ? wrong.error : "", /v[\s\S]*format/);
  });
});
