import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import type { Readable, Writable } from "node:stream";
import { DebugClient } from "@vscode/debugadapter-testsupport";
import type { DebugProtocol } from "@vscode/debugprotocol";
import { startErp, type ErpServer } from "../../examples/erp/server";
import { invoiceSeed } from "../../examples/invoice/erpData";
import { openCaseFile } from "../../src/casefile/index";
import { cliPath, root, tempDir } from "./helpers";

/** A DebugClient on the stdio of an adapter process spawned here (`node bin/casefile.js dap`: DebugClient spawns `runtime executable` only). */
class StdioClient extends DebugClient {
  attach(readable: Readable, writable: Writable): void {
    this.connect(readable, writable);
  }
}

/**
 * `casefile dap` spawned from the built CLI and driven over stdio by DebugClient, on the invoice
 * example with the ERP stand-in: what the DAP test files share (dap.test.ts, dapExpressions.test.ts).
 * `dapSuite()` is called inside a describe: it starts the ERP, and ends each test's sessions.
 */

export const workflow = path.join(root, "examples/invoice/workflow.ts");
/** Lines (1-based) of executor definitions in examples/invoice/workflow.ts (`name: kind<State>({`). */
export const LINE = (() => {
  const lines = readFileSync(workflow, "utf8").split("\n");
  const at = (name: string): number => {
    const i = lines.findIndex((l) => new RegExp(`^\\s+${name}: \\w+(<\\w+>)?\\(\\{`).test(l));
    assert.ok(i >= 0, `no definition of executor "${name}" in ${workflow}`);
    return i + 1;
  };
  return { load: at("load"), variance: at("variance"), propose: at("propose"), decide: at("decide"), review: at("review") };
})();

export interface Session {
  dc: DebugClient;
  adapter: ChildProcess;
  output: string[];
}

export function dapSuite() {
  const h = { dir: "", env: {} as NodeJS.ProcessEnv };
  let erp: ErpServer;
  const sessions: Session[] = [];
  let n = 0;

  before(async function () {
    if (!existsSync(path.join(root, "dist/cli.js"))) throw new Error("run `npm run build` first: the test spawns bin/casefile.js");
    h.dir = tempDir("casefile-dap-");
    erp = await startErp({ dataDir: path.join(h.dir, "erp"), seed: invoiceSeed });
    h.env = { ...process.env, ERP_URL: erp.url };
  });

  // Each test's sessions end with it: disconnect (the adapter stops its runner), then the process.
  afterEach(async () => {
    for (const s of sessions.splice(0)) {
      if (s.adapter.exitCode === null && s.adapter.signalCode === null)
        await Promise.race([s.dc.stop().catch(() => {}), new Promise((r) => setTimeout(r, 10_000))]);
      s.adapter.kill();
    }
  });

  after(async () => {
    await erp.close();
  });

  /** Spawns `node bin/casefile.js dap` and connects a DebugClient to its stdio. */
  async function open(): Promise<Session> {
    const adapter = spawn(process.execPath, [cliPath, "dap"], { env: h.env, stdio: ["pipe", "pipe", "pipe"] });
    const dc = new StdioClient(process.execPath, cliPath, "casefile");
    dc.defaultTimeout = 60_000;
    dc.attach(adapter.stdout!, adapter.stdin!);
    const output: string[] = [];
    dc.on("output", (e: DebugProtocol.OutputEvent) => output.push(e.body.output));
    const s = { dc, adapter, output };
    sessions.push(s);
    return s;
  }

  function caseFile(): string {
    return path.join(h.dir, `case-${++n}.casefile`);
  }

  const launchArgs = (file: string, extra: Record<string, unknown> = {}) => ({
    workflow,
    caseFile: file,
    input: { invoiceId: "INV-1001" },
    ...extra,
  });

  /** initialize, launch, then set breakpoints and configurationDone once the adapter says initialized. */
  async function launch(
    s: Session,
    args: Record<string, unknown>,
    setup: (dc: DebugClient) => Promise<unknown> = async () => {},
  ): Promise<void> {
    const init = await s.dc.initializeRequest({ adapterID: "casefile", linesStartAt1: true, columnsStartAt1: true, pathFormat: "path" });
    assert.equal(init.body?.supportsStepBack, true);
    await Promise.all([
      s.dc.waitForEvent("initialized").then(async () => {
        await setup(s.dc);
        await s.dc.configurationDoneRequest();
      }),
      s.dc.launchRequest(args as DebugProtocol.LaunchRequestArguments),
    ]);
  }

  async function stopped(s: Session): Promise<DebugProtocol.StoppedEvent> {
    return (await s.dc.waitForEvent("stopped")) as DebugProtocol.StoppedEvent;
  }

  async function frames(s: Session, threadId: number): Promise<DebugProtocol.StackFrame[]> {
    return (await s.dc.stackTraceRequest({ threadId })).body.stackFrames;
  }

  /** Scope name -> its variables' name -> variable. */
  async function scopes(s: Session, frameId: number): Promise<Record<string, Record<string, DebugProtocol.Variable>>> {
    const out: Record<string, Record<string, DebugProtocol.Variable>> = {};
    for (const scope of (await s.dc.scopesRequest({ frameId })).body.scopes) out[scope.name] = await vars(s, scope.variablesReference);
    return out;
  }

  async function vars(s: Session, ref: number): Promise<Record<string, DebugProtocol.Variable>> {
    const list = (await s.dc.variablesRequest({ variablesReference: ref })).body.variables;
    return Object.fromEntries(list.map((v) => [v.name, v]));
  }

  /** Expands a variable path (`variance`, `pct`) from a scope's variables. */
  async function dig(s: Session, from: Record<string, DebugProtocol.Variable>, ...names: string[]): Promise<DebugProtocol.Variable> {
    let v = from[names[0]!];
    for (const name of names.slice(1)) {
      assert.ok(v && v.variablesReference > 0, `${name}'s parent expands`);
      v = (await vars(s, v.variablesReference))[name];
    }
    assert.ok(v, `variable ${names.join(".")}`);
    return v;
  }

  async function runs(file: string) {
    const store = await openCaseFile(file, { readOnly: true });
    try {
      return store.listRuns().map((r) => ({ ...r, checkpoints: store.listCheckpoints(r.id).map((c) => c.id) }));
    } finally {
      store.close();
    }
  }

  return { h, open, caseFile, launchArgs, launch, stopped, frames, scopes, vars, dig, runs };
}
