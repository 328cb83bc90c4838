import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import type { Readable, Writable } from "node:stream";
import { DebugClient } from "@vscode/debugadapter-testsupport";
import type { DebugProtocol } from "@vscode/debugprotocol";
import { startErp, type ErpServer } from "../../examples/erp/server";
import { invoiceSeed } from "../../examples/invoice/erpData";
import { cliPath, root, tempDir } from "./helpers";

class StdioClient extends DebugClient {
  attach(readable: Readable, writable: Writable): void {
    this.connect(readable, writable);
  }
}

/**
 * `casefile dap` fed what a broken or hostile DAP client might send: bytes that are not JSON, a
 * JSON body that is not a message, unknown commands, arguments of the wrong type, ids of frames
 * and variables it never gave. Each is answered with a one-line error response naming what is
 * wrong (or, for what is no message at all, a line in the Debug Console), never a stack; the
 * same session then debugs the invoice example as usual and exits cleanly on disconnect.
 */
describe("casefile dap: hostile and malformed messages", function () {
  this.timeout(120_000);
  let erp: ErpServer;
  let adapter: ChildProcess;
  let dc: StdioClient;
  const output: string[] = [];
  let stderr = "";

  before(async () => {
    if (!existsSync(path.join(root, "dist/cli.js"))) throw new Error("run `npm run build` first: the test spawns bin/casefile.js");
    const dir = tempDir("casefile-dap-hostile-");
    erp = await startErp({ dataDir: path.join(dir, "erp"), seed: invoiceSeed });
    adapter = spawn(process.execPath, [cliPath, "dap"], { env: { ...process.env, ERP_URL: erp.url }, stdio: ["pipe", "pipe", "pipe"] });
    adapter.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
    dc = new StdioClient(process.execPath, cliPath, "casefile");
    dc.defaultTimeout = 60_000;
    dc.attach(adapter.stdout!, adapter.stdin!);
    dc.on("output", (e: DebugProtocol.OutputEvent) => output.push(e.body.output));
    await dc.initializeRequest({ adapterID: "casefile", linesStartAt1: true, columnsStartAt1: true, pathFormat: "path" });
  });

  after(async () => {
    if (adapter.exitCode === null) adapter.kill();
    await erp.close();
  });

  /** Writes one framed message body as is (DebugClient would serialise it). */
  function raw(body: string): void {
    adapter.stdin!.write(`Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
  }

  async function refused(command: string, args: unknown, expected: RegExp): Promise<void> {
    await assert.rejects(dc.send(command, args), (e: Error) => {
      assert.match(e.message, expected, `${command} ${JSON.stringify(args)}: ${e.message}`);
      assert.doesNotMatch(e.message, /\n\s+at /, `${command}: the error carries a stack: ${e.message}`);
      return true;
    });
  }

  it("bytes that are not JSON, and JSON that is no message, are dropped saying so; the adapter keeps answering", async () => {
    const said = dc.waitForEvent("output");
    raw("{not json");
    await said;
    raw("null");
    raw("42");
    // DebugSession's own answer to a parse error was to exit 100 ms later: ask after that.
    await new Promise((r) => setTimeout(r, 500));
    const threads = await dc.threadsRequest();
    assert.deepEqual(threads.body.threads, [], "the adapter still answers, with no run yet");
    assert.ok(
      output.some((l) => l.includes("debug adapter: dropped a message")),
      `no word in the Debug Console about the dropped message: ${output.join("")}`,
    );
    assert.equal(adapter.exitCode, null, `the adapter exited: ${stderr}`);
  });

  it("unknown commands and arguments of the wrong type get an error response naming them", async () => {
    await refused("attach", {}, /UNSUPPORTED: the Casefile debugger launches runs/);
    await refused("frobnicate", {}, /UNKNOWN_REQUEST: the Casefile debug adapter has no request "frobnicate"/);
    await refused("evaluate", { expression: 42 }, /INVALID_REQUEST: evaluate: argument "expression": /);
    await refused("setBreakpoints", { source: 5 }, /INVALID_REQUEST: setBreakpoints: argument "source": /);
    await refused("setBreakpoints", { source: { path: "/x.ts" }, breakpoints: [{ line: "ten" }] }, /argument "breakpoints.0.line"/);
    await refused("variables", { variablesReference: "abc" }, /INVALID_REQUEST: variables: argument "variablesReference"/);
    await refused("stackTrace", "thread one", /INVALID_REQUEST: stackTrace: its arguments: /);
    await refused("next", { threadId: "one" }, /INVALID_REQUEST: next: argument "threadId"/);
    await refused("setFunctionBreakpoints", { breakpoints: [{ name: 7 }] }, /argument "breakpoints.0.name"/);
    await refused("launch", { workflow: 3 }, /INVALID_LAUNCH: launch attribute "workflow" is invalid/);
    assert.equal(adapter.exitCode, null, `the adapter exited: ${stderr}`);
  });

  it("after all that, the same session debugs a run: it stops at a breakpoint, refuses ids it never gave, evaluates, and exits 0 on disconnect", async () => {
    const stop = dc.waitForEvent("stopped") as Promise<DebugProtocol.StoppedEvent>;
    await Promise.all([
      dc.waitForEvent("initialized").then(async () => {
        await dc.setFunctionBreakpointsRequest({ breakpoints: [{ name: "propose" }] });
        await dc.configurationDoneRequest();
      }),
      dc.launchRequest({
        workflow: path.join(root, "examples/invoice/workflow.ts"),
        caseFile: path.join(tempDir("casefile-dap-hostile-case-"), "case.casefile"),
        input: { invoiceId: "INV-1001" },
      } as DebugProtocol.LaunchRequestArguments),
    ]);
    const threadId = (
      await Promise.race([
        stop,
        new Promise<never>((_, reject) =>
          setTimeout(
            () => reject(new Error(`no stop (exit ${adapter.exitCode} ${adapter.signalCode}): ${output.join("")} ${stderr}`)),
            20_000,
          ),
        ),
      ])
    ).body.threadId!;
    await refused("scopes", { frameId: 99_999 }, /UNKNOWN_FRAME: no frame 99999/);
    await refused("restartFrame", { frameId: 99_999 }, /UNKNOWN_FRAME/);
    await refused("setVariable", { variablesReference: 99_999, name: "x", value: "1" }, /READ_ONLY/);
    assert.deepEqual(
      (await dc.variablesRequest({ variablesReference: 99_999 })).body.variables,
      [],
      "an unknown reference has no variables",
    );
    assert.deepEqual((await dc.stackTraceRequest({ threadId: 99_999 })).body.stackFrames, [], "an unknown thread has no frames");
    const frameId = (await dc.stackTraceRequest({ threadId })).body.stackFrames[0]!.id;
    assert.equal((await dc.evaluateRequest({ expression: "state.variance.pct", frameId, context: "repl" })).body.result, "9");
    const exited = new Promise<number | null>((resolve) => adapter.on("exit", (code) => resolve(code)));
    await dc.disconnectRequest({});
    adapter.stdin!.end();
    assert.equal(await exited, 0, `casefile dap exit code (stderr: ${stderr})`);
  });
});
