import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { createServer, type AddressInfo, type Server } from "node:net";
import path from "node:path";
import { DebugClient } from "@vscode/debugadapter-testsupport";
import type { DebugProtocol } from "@vscode/debugprotocol";
import { startErp, type ErpServer } from "../../examples/erp/server";
import { invoiceSeed } from "../../examples/invoice/erpData";
import { openCaseFile } from "../../src/casefile/index";
import { CasefileDebugSession } from "../../src/debug/index";
import { root, runnerPath, tempDir } from "./helpers";

/**
 * The adapter as the extension creates it (src/extension/debugAdapter.ts: waitForExecutorDebugger),
 * served on a loopback port in this process and driven by DebugClient: with debugExecutorCode, no
 * superstep of the runner starts before the client says its JavaScript debugger is attached to it
 * (`casefile/executorDebuggerAttached`), so a breakpoint in an executor's run() is not run past
 * while js-debug is still attaching; without that word the run goes on after the timeout, saying so.
 */

const workflow = path.join(root, "examples/invoice/workflow.ts");

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
  async function launch(dc: DebugClient, caseFile: string): Promise<DebugProtocol.Event> {
    await dc.initializeRequest({ adapterID: "casefile", linesStartAt1: true, columnsStartAt1: true, pathFormat: "path" });
    const inspector = dc.waitForEvent("casefile/inspector");
    await Promise.all([
      dc.waitForEvent("initialized").then(() => dc.configurationDoneRequest()),
      dc.launchRequest({
        workflow,
        caseFile,
        input: { invoiceId: "INV-1002" },
        debugExecutorCode: true,
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

  it("a malformed executorDebuggerAttached is refused with what is missing", async () => {
    const { dc } = await session(60_000);
    await launch(dc, path.join(dir, "malformed.casefile"));
    await assert.rejects(dc.customRequest("casefile/executorDebuggerAttached", { port: 1 }), /INVALID_REQUEST: .*needs the runner's pid/);
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
