import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { createServer, type AddressInfo, type Server } from "node:net";
import path from "node:path";
import { DebugClient } from "@vscode/debugadapter-testsupport";
import type { DebugProtocol } from "@vscode/debugprotocol";
import { startErp, type ErpServer } from "../../examples/erp/server";
import { invoiceSeed } from "../../examples/invoice/erpData";
import { openCaseFile } from "../../src/casefile/index";
import { CasefileDebugSession } from "../../src/debug/index";
import { SourceMapConsumer, type RawSourceMap } from "source-map";
import { CdpClient } from "../../src/debug/cdpClient";
import { root, runnerPath, tempDir } from "./helpers";

/**
 * The adapter as the extension creates it (src/extension/debugAdapter.ts: waitForExecutorDebugger),
 * served on a loopback port in this process and driven by DebugClient: with debugExecutorCode, no
 * superstep of the runner starts before the client says its JavaScript debugger is attached to it
 * (`casefile/executorDebuggerAttached`), so a breakpoint in an executor's run() is not run past
 * while js-debug is still attaching; without that word the run goes on after the timeout, saying so.
 */

const workflow = path.join(root, "examples/invoice/workflow.ts");
/** The first line (1-based) of the body of load's run() in the invoice example. */
const LOAD_RUN_FIRST_LINE = (() => {
  const lines = readFileSync(workflow, "utf8").split("\n");
  const load = lines.findIndex((l) => /^\s+load: loader/.test(l));
  const run = lines.findIndex((l, i) => i > load && /^\s+(async )?run\(/.test(l));
  assert.ok(load >= 0 && run > load, `no run() of load in ${workflow}`);
  return run + 2;
})();

/** Where a paused location of the runner's bundle is in the user's file, read through the bundle's inline source map. */
async function originalPosition(
  cdp: CdpClient,
  location: { scriptId: string; lineNumber: number; columnNumber: number },
): Promise<{ source: string | null; line: number | null }> {
  const { scriptSource } = await cdp.send<{ scriptSource: string }>("Debugger.getScriptSource", { scriptId: location.scriptId });
  const m = /\/\/# sourceMappingURL=data:application\/json;(?:charset=utf-8;)?base64,(\S+)/.exec(scriptSource);
  assert.ok(m, "the runner's bundle carries an inline source map");
  const raw = JSON.parse(Buffer.from(m[1]!, "base64").toString("utf8")) as RawSourceMap;
  return SourceMapConsumer.with(raw, null, (c) => c.originalPositionFor({ line: location.lineNumber + 1, column: location.columnNumber }));
}

describe("the extension's adapter waits for js-debug before the first superstep (debugExecutorCode)", function () {
  this.timeout(120_000);
  let dir: string;
  let erp: ErpServer;
  let saved: string | undefined;
  const open: { server: Server; dc: DebugClient }[] = [];

  before(async function () {
    if (!existsSync(runnerPath)) throw new Error("run `npm run build` first: the adapter forks dist/runner.js");
    dir = tempDir("casefile-dap-wait-");
    erp = await startErp({ dataDir: path.join(dir, "erp"), seed: invoiceSeed });
    saved = process.env.ERP_URL;
    process.env.ERP_URL = erp.url;
  });

  afterEach(async () => {
    for (const { server, dc } of open.splice(0)) {
      await Promise.race([dc.stop().catch(() => {}), new Promise((r) => setTimeout(r, 10_000))]);
      server.close();
    }
  });

  after(async () => {
    if (saved === undefined) delete process.env.ERP_URL;
    else process.env.ERP_URL = saved;
    await erp.close();
  });

  async function session(executorDebuggerTimeoutMs: number): Promise<{ dc: DebugClient; output: string[] }> {
    const server = createServer((socket) => {
      const s = new CasefileDebugSession({ runnerPath, waitForExecutorDebugger: true, executorDebuggerTimeoutMs });
      s.setRunAsServer(true);
      s.start(socket, socket);
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const dc = new DebugClient(process.execPath, "", "casefile");
    dc.defaultTimeout = 60_000;
    await dc.start((server.address() as AddressInfo).port);
    const output: string[] = [];
    dc.on("output", (e: DebugProtocol.OutputEvent) => output.push(e.body.output));
    open.push({ server, dc });
    return { dc, output };
  }

  /** Launches a run of the invoice example (INV-1002: approved, no review) with no breakpoint and no stop on entry: left alone, it runs to its end. */
  async function launch(dc: DebugClient, caseFile: string, more: Record<string, unknown> = {}): Promise<DebugProtocol.Event> {
    await dc.initializeRequest({ adapterID: "casefile", linesStartAt1: true, columnsStartAt1: true, pathFormat: "path" });
    const inspector = more.debugExecutorCode === false ? Promise.resolve({} as DebugProtocol.Event) : dc.waitForEvent("casefile/inspector");
    await Promise.all([
      dc.waitForEvent("initialized").then(() => dc.configurationDoneRequest()),
      dc.launchRequest({
        workflow,
        caseFile,
        input: { invoiceId: "INV-1002" },
        debugExecutorCode: true,
        ...more,
      } as DebugProtocol.LaunchRequestArguments),
    ]);
    return inspector;
  }

  async function supersteps(caseFile: string): Promise<number> {
    const store = await openCaseFile(caseFile, { readOnly: true });
    try {
      const run = store.listRuns()[0];
      return run ? (store.latestCheckpoint(run.id)?.superstep ?? 0) : 0;
    } finally {
      store.close();
    }
  }

  it("no superstep runs until casefile/executorDebuggerAttached names the runner; then the run goes on to its end", async () => {
    const { dc, output } = await session(60_000);
    const caseFile = path.join(dir, "waits.casefile");
    const inspector = await launch(dc, caseFile);
    const pid = Number((inspector as DebugProtocol.Event).body.pid);
    assert.ok(pid > 0, JSON.stringify(inspector.body));
    await new Promise((r) => setTimeout(r, 2_000));
    assert.equal(
      output.some((l) => /^#\d/.test(l)),
      false,
      `a superstep started before the debugger was attached: ${output.join("")}`,
    );
    assert.equal(await supersteps(caseFile), 0, "the case file holds only the run's first checkpoint");
    // Another process's pid does not let it go.
    await dc.customRequest("casefile/executorDebuggerAttached", { pid: pid + 100_000 });
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(
      output.some((l) => /^#\d/.test(l)),
      false,
    );
    const ended = dc.waitForEvent("terminated");
    await dc.customRequest("casefile/executorDebuggerAttached", { pid });
    await ended;
    assert.ok(
      output.some((l) => l.includes(`a debugger is attached to the runner (pid ${pid})`)),
      output.join(""),
    );
    assert.ok(
      output.some((l) => l.startsWith("#1 load")),
      output.join(""),
    );
    assert.ok((await supersteps(caseFile)) >= 4, "the run went on to its end");
  });

  it("Step Into at a boundary pauses the attached JavaScript debugger on the first line of the executor's run() in workflow.ts; resumed, the session stops at the next boundary", async () => {
    const { dc } = await session(60_000);
    const entry = dc.waitForEvent("stopped");
    const inspector = await launch(dc, path.join(dir, "step-into.casefile"), { stopOnEntry: true });
    const { url, pid } = inspector.body as { url: string; pid: number };
    // As js-debug does in the editor: attach to the runner's inspector, then say so.
    const cdp = await CdpClient.connect(url);
    try {
      await cdp.send("Debugger.enable");
      await dc.customRequest("casefile/executorDebuggerAttached", { pid });
      const threadId = ((await entry) as DebugProtocol.StoppedEvent).body.threadId!;
      const paused = cdp.once<{
        callFrames: { functionName: string; location: { scriptId: string; lineNumber: number; columnNumber: number } }[];
      }>("Debugger.paused");
      await dc.stepInRequest({ threadId });
      const top = (await paused).callFrames[0]!;
      const at = await originalPosition(cdp, top.location);
      assert.ok(at.source?.endsWith("workflow.ts"), `paused in ${at.source}, not in the workflow file (function ${top.functionName})`);
      assert.equal(
        at.line,
        LOAD_RUN_FIRST_LINE,
        `paused at workflow.ts:${at.line}, not on the first line of load's run() (${LOAD_RUN_FIRST_LINE})`,
      );
      // While paused in executor code, the Casefile session still shows the boundary it stepped from.
      const stack = await dc.stackTraceRequest({ threadId });
      assert.match(stack.body.stackFrames[0]!.name, /^load/, "the Call Stack still shows the superstep's executor");
      const next = dc.waitForEvent("stopped");
      await cdp.send("Debugger.resume");
      const stopped = (await next) as DebugProtocol.StoppedEvent;
      assert.equal(stopped.body.reason, "step", JSON.stringify(stopped.body));
      assert.match(stopped.body.description ?? "", /paused before superstep 2/);
    } finally {
      cdp.close();
    }
  });

  it("paused in run() by the JavaScript debugger, Next and then Continue sent to the Casefile session go on with the run: the pause is resumed (the debugger sees it) and the session stops at the next boundary", async () => {
    const { dc, output } = await session(60_000);
    const entry = dc.waitForEvent("stopped");
    const caseFile = path.join(dir, "next-from-js.casefile");
    const inspector = await launch(dc, caseFile, { stopOnEntry: true });
    const { url, pid } = inspector.body as { url: string; pid: number };
    const cdp = await CdpClient.connect(url);
    try {
      await cdp.send("Debugger.enable");
      await dc.customRequest("casefile/executorDebuggerAttached", { pid });
      const threadId = ((await entry) as DebugProtocol.StoppedEvent).body.threadId!;
      const paused = cdp.once("Debugger.paused");
      await dc.stepInRequest({ threadId });
      await paused;
      const resumed = cdp.once("Debugger.resumed");
      const next = dc.waitForEvent("stopped");
      const continued = dc.waitForEvent("continued");
      await dc.nextRequest({ threadId });
      await resumed;

      await continued;
      const stopped = (await next) as DebugProtocol.StoppedEvent;
      assert.equal(stopped.body.reason, "step", JSON.stringify(stopped.body));
      assert.match(
        stopped.body.description ?? "",
        /paused before superstep 2/,
        "Next ran the superstep it was paused in, and stopped after it",
      );
      assert.ok(
        output.some((l) => l.includes("resumed the JavaScript debugger's pause; the run goes on and stops at the next boundary")),
        `the Debug Console says what happened: ${output.join("")}`,
      );
      // Continue from a pause in executor code: the run goes on to its end.
      const pausedAgain = cdp.once("Debugger.paused");
      await dc.stepInRequest({ threadId });
      await pausedAgain;
      const ended = dc.waitForEvent("terminated");
      await dc.continueRequest({ threadId });
      // A run's end waits for its debuggers to let go ("Waiting for the debugger to disconnect"), as js-debug does.
      cdp.close();
      await ended;
      assert.ok((await supersteps(caseFile)) >= 4, "the run went on to its end");
    } finally {
      cdp.close();
    }
  });

  it("Step Into without a JavaScript debugger acts as Next, and the Debug Console says so once", async () => {
    const { dc, output } = await session(60_000);
    const entry = dc.waitForEvent("stopped");
    await launch(dc, path.join(dir, "step-into-next.casefile"), { stopOnEntry: true, debugExecutorCode: false });
    const threadId = ((await entry) as DebugProtocol.StoppedEvent).body.threadId!;
    for (const superstep of [2, 3]) {
      const stopped = dc.waitForEvent("stopped");
      await dc.stepInRequest({ threadId });
      const body = ((await stopped) as DebugProtocol.StoppedEvent).body;
      assert.equal(body.reason, "step", JSON.stringify(body));
      assert.match(body.description ?? "", new RegExp(`paused before superstep ${superstep}`));
    }
    const said = output.filter((l) => l.includes("Step Into acts as Next here (debugExecutorCode is off)"));
    assert.equal(said.length, 1, `said ${said.length} times: ${output.join("")}`);
  });

  it("a malformed executorDebuggerAttached is refused with what is missing", async () => {
    const { dc } = await session(60_000);
    await launch(dc, path.join(dir, "malformed.casefile"));
    await assert.rejects(dc.customRequest("casefile/executorDebuggerAttached", { port: 1 }), /INVALID_REQUEST: .*needs the runner's pid/);
  });

  it("a debugger that could not attach (failed) lets the supersteps go at once, saying why; Step Into there is Next, never a pause no one resumes", async () => {
    // The wait is a minute: the run reaching its next boundary within the test's time shows it did not wait.
    const { dc, output } = await session(60_000);
    const entry = dc.waitForEvent("stopped");
    const inspector = await launch(dc, path.join(dir, "failed-attach.casefile"), { stopOnEntry: true });
    const pid = Number((inspector as DebugProtocol.Event).body.pid);
    const threadId = ((await entry) as DebugProtocol.StoppedEvent).body.threadId!;
    // Step Into while js-debug is still attaching: the superstep waits for the word ...
    const next = dc.waitForEvent("stopped", 20_000);
    await dc.stepInRequest({ threadId });
    // ... which says it could not attach: the superstep runs as a Next (no one-shot breakpoint with no debugger to show it).
    await dc.customRequest("casefile/executorDebuggerAttached", { pid, failed: "js-debug: Cannot connect to the target" });
    const stopped = ((await next) as DebugProtocol.StoppedEvent).body;
    assert.equal(stopped.reason, "step", JSON.stringify(stopped));
    assert.match(stopped.description ?? "", /paused before superstep 2/, "the run went on to the next boundary at once");
    assert.ok(
      output.some((l) => l.includes(`no debugger could attach to the runner (pid ${pid}): js-debug: Cannot connect to the target`)),
      output.join(""),
    );
    assert.equal(
      output.some((l) => l.includes("a debugger is attached")),
      false,
      "a failed attach is not reported as attached",
    );
  });

  it("with no debugger attached, the run goes on after the timeout and the Debug Console says why", async () => {
    const { dc, output } = await session(500);
    const ended = dc.waitForEvent("terminated");
    await launch(dc, path.join(dir, "timeout.casefile"));
    await ended;
    assert.ok(
      output.some((l) => l.includes("no debugger attached to the runner within 0.5 s")),
      output.join(""),
    );
    assert.ok(
      output.some((l) => l.startsWith("#1 load")),
      output.join(""),
    );
  });
});
