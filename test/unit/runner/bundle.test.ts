import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { Session } from "node:inspector";
import { SourceMap, type SourceMapPayload } from "node:module";
import path from "node:path";
import { describeWorkflow } from "../../../src/runner/describe";
import { bundleFileOf, loadWorkflow } from "../../../src/runner/bundle";

/**
 * What a debugger attached to the runner sees of a workflow's bundle (the Casefile debug
 * session's js-debug child attaches exactly so): the script's name, and a source map whose
 * `sources` lead back to the user's own file and line. Seen through Node's inspector, in this
 * process, as js-debug sees it through the runner's --inspect port.
 */

const WORKFLOW = path.resolve(__dirname, "../../../examples/invoice/workflow.ts");

interface Parsed {
  scriptId: string;
  url: string;
  sourceMapURL?: string;
}

function post<T>(session: Session, method: string, params?: object): Promise<T> {
  return new Promise((resolve, reject) => session.post(method, params ?? {}, (err, result) => (err ? reject(err) : resolve(result as T))));
}

describe("runner/bundle: the workflow bundle as a debugger sees it", () => {
  it("runs under a name of its own beside the workflow, with a source map that maps its lines to workflow.ts", async () => {
    const session = new Session();
    session.connect();
    const parsed: Parsed[] = [];
    session.on("Debugger.scriptParsed", (m) => parsed.push(m.params as Parsed));
    try {
      await post(session, "Debugger.enable");
      await loadWorkflow(WORKFLOW);
      const script = parsed.find((p) => p.url === bundleFileOf(WORKFLOW) || p.url === `file://${bundleFileOf(WORKFLOW)}`);
      assert.ok(script, `no script named ${bundleFileOf(WORKFLOW)} among ${parsed.length} parsed`);
      // Not the .ts file's own name: a breakpoint in workflow.ts must bind only where the map says.
      assert.notEqual(script.url, WORKFLOW);
      assert.match(script.sourceMapURL ?? "", /^data:application\/json;base64,/);
      const payload = JSON.parse(Buffer.from(script.sourceMapURL!.split(",")[1]!, "base64").toString("utf8")) as SourceMapPayload;
      const sources = payload.sources.map((s) => path.resolve(path.dirname(bundleFileOf(WORKFLOW)), s));
      assert.deepEqual(sources, [WORKFLOW]);

      // The line computing the variance's percentage, in the bundle and in the user's file.
      const { scriptSource } = await post<{ scriptSource: string }>(session, "Debugger.getScriptSource", { scriptId: script.scriptId });
      const bundleLine = scriptSource.split("\n").findIndex((l) => l.includes("const pct ="));
      const userLine = readFileSync(WORKFLOW, "utf8")
        .split("\n")
        .findIndex((l) => l.includes("const pct ="));
      assert.ok(bundleLine > 0 && userLine > 0, `the line is found in the bundle (${bundleLine}) and in the workflow (${userLine})`);
      const column = scriptSource.split("\n")[bundleLine]!.indexOf("const pct");
      const entry = new SourceMap(payload).findEntry(bundleLine, column) as { originalSource: string; originalLine: number };
      assert.equal(path.resolve(path.dirname(bundleFileOf(WORKFLOW)), entry.originalSource), WORKFLOW);
      assert.equal(entry.originalLine, userLine);
    } finally {
      session.disconnect();
    }
  });

  it("describe gives the workflow's input as JSON Schema, for the form F5 shows", async () => {
    const described = await describeWorkflow(WORKFLOW);
    assert.ok(described.ok, `the workflow describes: ${JSON.stringify(described)}`);
    assert.deepEqual(described.inputSchema?.required, ["invoiceId"]);
    assert.deepEqual(Object.keys(described.inputSchema?.properties as object), ["invoiceId", "erpUrl"]);
  });
});
