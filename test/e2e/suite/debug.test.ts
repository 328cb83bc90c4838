import * as assert from "node:assert/strict";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as vscode from "vscode";
import { invoiceSeed } from "../../../examples/invoice/erpData";
import type { CasefileTestApi } from "../../../src/extension/extension";
import { useErp } from "./erp";
import { askBrowser, browserAvailable } from "./exchange";

/** The repository: the suite is bundled to dist/e2e/ (buildSuite.ts). */
const ROOT = path.resolve(__dirname, "../..");

type Stop = { session: vscode.DebugSession; threadId: number; reason: string };
type Frame = { id: number; name: string; line: number; source?: { path?: string } };

/** A frame's source path as the workbench hands it back (a vscode-remote: URI under code-server), as a file path. */
const pathOf = (p: string | undefined): string | undefined => (p && /^[a-z-]+:\/\//.test(p) ? vscode.Uri.parse(p).fsPath : p);

/** A session and the sessions above it (js-debug's session for the runner sits under its attach session, under the casefile one). */
const lineage = (s: vscode.DebugSession | undefined): vscode.DebugSession[] => (s ? [s, ...lineage(s.parentSession)] : []);

/**
 * The `casefile` debugger in a real VS Code (code-server, which ships js-debug): F5 on the invoice
 * example with a breakpoint on a step, the Variables view as a person reads it, stepping forwards
 * and back between supersteps, a breakpoint inside an executor's run() (js-debug attached to the
 * runner as a child session), and the Debug Console.
 *
 * Each test that needs a session paused at `propose` gets one (pausedAtPropose: the one the test
 * before left, or a new one), so a failure does not take the next tests with it. The workflow is
 * copied into the workspace (F5 debugs the editor's file) and removed after, with the case file F5
 * writes beside it; the other sessions write their case files in a temporary folder outside the
 * workspace, so the suites after this one see the workspace as the harness made it.
 */
describe("Debugging the invoice example with F5", function () {
  this.timeout(180_000);
  let api: CasefileTestApi;
  useErp(invoiceSeed);
  let workflow: vscode.Uri;
  let source: string[];
  const stops: Stop[] = [];
  /** What the sessions said (Debug Console lines and events), for a failure's message. */
  const said: string[] = [];
  const running = new Set<vscode.DebugSession>();
  const disposables: vscode.Disposable[] = [];
  let caseFiles: string;
  let debugging: string;

  /** The 0-based line of the first line of the workflow file that includes `text`. */
  const lineOf = (text: string): number => {
    const i = source.findIndex((l) => l.includes(text));
    assert.ok(i >= 0, `no line with ${text}`);
    return i;
  };
  const breakpointAt = (line: number): vscode.SourceBreakpoint =>
    new vscode.SourceBreakpoint(new vscode.Location(workflow, new vscode.Position(line, 0)));

  /** Waits for the next `stopped` event (after `seen` stops) of a session of the type. */
  async function nextStop(type: string, seen: number, timeoutMs = 90_000): Promise<Stop> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const stop = stops.slice(seen).find((s) => type === "*" || s.session.type === type);
      if (stop) return stop;
      await sleep(100);
    }
    throw new Error(
      `no ${type} session stopped within ${timeoutMs / 1000} s (stops: ${stops.map((s) => `${s.session.type}:${s.reason}`).join(", ")})`,
    );
  }
  async function frames(stop: Stop): Promise<Frame[]> {
    const { stackFrames } = (await stop.session.customRequest("stackTrace", { threadId: stop.threadId, levels: 20 })) as {
      stackFrames: Frame[];
    };
    return stackFrames;
  }
  async function stopAfter(command: string, type = "casefile"): Promise<Stop> {
    const seen = stops.length;
    await vscode.commands.executeCommand(command);
    return nextStop(type, seen);
  }
  /** Ends every casefile session (js-debug's under it end with it) and waits until no debug session is left. */
  async function stopAll(): Promise<void> {
    for (const s of [...running].filter((r) => r.type === "casefile")) await vscode.debug.stopDebugging(s);
    const deadline = Date.now() + 30_000;
    while (running.size > 0 && Date.now() < deadline) await sleep(100);
    assert.equal(running.size, 0, `sessions still running: ${[...running].map((r) => `${r.type} ${r.name}`).join(", ")}`);
  }
  /** A new session of the workflow (its case file outside the workspace), at its entry stop. */
  async function debugAtEntry(invoiceId: string): Promise<Stop> {
    const seen = stops.length;
    const caseFile = path.join(caseFiles, `${invoiceId}-${Date.now()}.casefile`);
    const result = (await vscode.commands.executeCommand("casefile.debugWorkflow", workflow, { invoiceId }, caseFile)) as {
      ok: boolean;
      reason?: string;
    };
    assert.equal(result.ok, true, result.reason);
    const entry = await nextStop("casefile", seen);
    assert.equal(entry.reason, "entry");
    return entry;
  }
  /** The last casefile stop if its session is still paused at propose, else a new session run to the breakpoint on propose. */
  async function pausedAtPropose(): Promise<Stop> {
    const last = stops.filter((s) => s.session.type === "casefile").at(-1);
    if (last && running.has(last.session)) {
      const [top] = await frames(last).catch(() => []);
      if (/propose/.test(top?.name ?? "")) return last;
    }
    await stopAll();
    vscode.debug.removeBreakpoints(vscode.debug.breakpoints);
    vscode.debug.addBreakpoints([breakpointAt(lineOf("propose: agent<State>("))]);
    const entry = await debugAtEntry("INV-1001");
    const seen = stops.length;
    await entry.session.customRequest("continue", { threadId: entry.threadId });
    const stop = await nextStop("casefile", seen);
    assert.match((await frames(stop))[0]?.name ?? "", /propose/);
    return stop;
  }

  before(async () => {
    api = await vscode.extensions.getExtension<CasefileTestApi>("casefile.casefile")!.activate();
    const folder = vscode.workspace.workspaceFolders![0]!.uri.fsPath;
    debugging = path.join(folder, "debugging");
    mkdirSync(debugging, { recursive: true });
    for (const f of ["workflow.ts", "workflow.responses.json"]) {
      copyFileSync(path.join(ROOT, "examples", "invoice", f), path.join(debugging, f));
    }
    caseFiles = mkdtempSync(path.join(os.tmpdir(), "casefile-e2e-debug-"));
    workflow = vscode.Uri.file(path.join(debugging, "workflow.ts"));
    source = readFileSync(workflow.fsPath, "utf8").split("\n");
    disposables.push(
      vscode.debug.registerDebugAdapterTrackerFactory("*", {
        createDebugAdapterTracker: (session) => ({
          onWillReceiveMessage: (m: { type?: string; command?: string }) => {
            if (
              m.type === "request" &&
              !["threads", "stackTrace", "scopes", "variables", "source", "loadedSources"].includes(m.command ?? "")
            )
              said.push(`${session.type}: <- ${m.command}`);
          },
          onDidSendMessage: (m: { type?: string; event?: string; body?: { threadId?: number; reason?: string; output?: string } }) => {
            if (m.type !== "event") return;
            if (m.event === "stopped") stops.push({ session, threadId: m.body?.threadId ?? 1, reason: m.body?.reason ?? "" });
            if (m.event === "output") said.push(`${session.type}: ${(m.body?.output ?? "").trimEnd()}`);
            else if (m.event === "stopped" || m.event === "continued" || m.event === "terminated" || m.event?.startsWith("casefile/"))
              said.push(`${session.type}: (${m.event}) ${JSON.stringify(m.body ?? {})}`);
          },
        }),
      }),
      vscode.debug.onDidStartDebugSession((s) => running.add(s)),
      vscode.debug.onDidTerminateDebugSession((s) => running.delete(s)),
    );
  });

  // A failure says what the extension logged (the adapter's console lines go to the Debug Console, the session's start here).
  afterEach(async function () {
    const err = this.currentTest?.err;
    if (!err) return;
    let text = "";
    for (const [name, type] of await vscode.workspace.fs.readDirectory(api.ctx.extension.logUri).then(undefined, () => [])) {
      if (type === vscode.FileType.File && name.endsWith(".log"))
        text += new TextDecoder().decode(await vscode.workspace.fs.readFile(vscode.Uri.joinPath(api.ctx.extension.logUri, name)));
    }
    err.message += `\n--- Casefile log (tail) ---\n${text.split("\n").slice(-25).join("\n")}`;
    err.message += `\n--- what the debug sessions said (tail) ---\n${said.slice(-30).join("\n")}`;
  });

  after(async () => {
    try {
      await stopAll();
    } finally {
      vscode.debug.removeBreakpoints(vscode.debug.breakpoints);
      for (const d of disposables.splice(0)) d.dispose();
      // The workflow copy and the case file F5 wrote beside it: the Runs and Workflows views of the suites after this one list the workspace.
      rmSync(debugging, { recursive: true, force: true });
      rmSync(caseFiles, { recursive: true, force: true });
    }
  });

  /**
   * A new session with a breakpoint inside variance's run(), continued (by the status bar's control,
   * which drives the casefile session even when js-debug has focus) until js-debug stops there.
   */
  async function stopInVarianceRun(
    invoiceId: string,
  ): Promise<{ entry: Stop; inCode: Stop; pctLine: number; inRun: vscode.SourceBreakpoint }> {
    await stopAll();
    vscode.debug.removeBreakpoints(vscode.debug.breakpoints);
    const pctLine = lineOf("const pct =");
    const inRun = breakpointAt(pctLine);
    vscode.debug.addBreakpoints([inRun]);
    const entry = await debugAtEntry(invoiceId);
    assert.equal(entry.session.configuration.debugExecutorCode, true, "on by default in a trusted workspace");
    const deadline = Date.now() + 120_000;
    let inCode: Stop | undefined;
    while (!inCode && Date.now() < deadline) {
      const before = stops.length;
      const went = (await vscode.commands.executeCommand("casefile.stepControl", "continue")) as { ok: boolean };
      assert.equal(went.ok, true, "the status bar's Continue reaches the casefile session");
      const stop = await nextStop("*", before).catch(() => undefined);
      inCode = stops.slice(before).find((s) => s.session.type === "pwa-node");
      if (!stop && !inCode) break;
    }
    assert.ok(inCode, `js-debug never stopped (stops: ${stops.map((s) => `${s.session.type}:${s.reason}`).join(", ")})`);
    assert.ok(
      lineage(inCode.session).some((s) => s.id === entry.session.id),
      `js-debug runs under the casefile session (${lineage(inCode.session)
        .map((s) => `${s.type} ${s.name}`)
        .join(" < ")})`,
    );
    const [top] = await frames(inCode);
    assert.equal(pathOf(top?.source?.path), workflow.fsPath, "the source map leads to the user's file");
    assert.equal(top?.line, pctLine + 1, "js-debug stops on the breakpoint's line in run()");
    return { entry, inCode, pctLine, inRun };
  }

  /** Waits (up to 10 s: VS Code reveals a stopped thread's line a moment after the stop) until the editor shows the line. */
  async function editorShows(line: number): Promise<void> {
    const shown = (): boolean =>
      vscode.window.activeTextEditor?.document.uri.fsPath === workflow.fsPath &&
      vscode.window.activeTextEditor.selection.active.line === line;
    for (let i = 0; i < 100 && !shown(); i++) await sleep(100);
    const editor = vscode.window.activeTextEditor;
    assert.equal(editor?.document.uri.fsPath, workflow.fsPath, "the editor shows the workflow file");
    assert.equal(editor?.selection.active.line, line, "the editor shows the paused line");
  }

  // First in the describe: js-debug's attach to a new runner used to stop answering after three or
  // four sessions in one window (the runner waited 30 s, then ran with its breakpoints unbound).
  it("five debug sessions in a row each stop inside variance's run()", async () => {
    try {
      for (let i = 1; i <= 5; i++) {
        const t0 = Date.now();
        const { inCode } = await stopInVarianceRun(`INV-1002`);
        said.push(`(test) session ${i} stopped in run() after ${Date.now() - t0} ms`);
        await inCode.session.customRequest("continue", { threadId: inCode.threadId });
        await stopAll();
      }
    } finally {
      await stopAll();
      vscode.debug.removeBreakpoints(vscode.debug.breakpoints);
    }
  });

  /** Waits until VS Code's focused thread is one of `session`'s (after a stop, once VS Code has fetched its threads), as F10/F11 need. */
  async function focusedOn(session: vscode.DebugSession): Promise<void> {
    const focused = (): boolean => {
      const item = vscode.debug.activeStackItem;
      return vscode.debug.activeDebugSession?.id === session.id && item !== undefined && item.session.id === session.id;
    };
    for (let i = 0; i < 100 && !focused(); i++) await sleep(100);
    assert.ok(focused(), `VS Code focuses the stopped ${session.type} session (focused: ${vscode.debug.activeDebugSession?.type})`);
  }

  it("Step Into at a boundary stops on the first line of variance's run() in the editor; Continue and Step Out there return to the next boundary", async () => {
    try {
      await stopAll();
      vscode.debug.removeBreakpoints(vscode.debug.breakpoints);
      const entry = await debugAtEntry("INV-1002");
      // Before variance: Step Over from the entry (load runs).
      await focusedOn(entry.session);
      const beforeVariance = await stopAfter("workbench.action.debug.stepOver");
      assert.match((await frames(beforeVariance))[0]?.name ?? "", /variance/, "paused before variance");
      // F11: js-debug stops on run()'s first line, in the user's file, and the editor shows it.
      await focusedOn(beforeVariance.session);
      const intoVariance = await stopAfter("workbench.action.debug.stepInto", "pwa-node");
      const firstLine = lineOf("const inv = ctx.state.invoice!.value;");
      const [top] = await frames(intoVariance);
      assert.equal(pathOf(top?.source?.path), workflow.fsPath, "the source map leads to the user's file");
      assert.equal(top?.line, firstLine + 1, "Step Into stops on the first line of variance's run()");
      await editorShows(firstLine);
      if (browserAvailable()) {
        // As a person sees it: the editor marks the paused line, the Call Stack has js-debug's frame under the casefile session.
        const checks = await askBrowser({
          name: "debug-step-into",
          waitFor: ".debug-top-stack-frame-line",
          read: { callStack: ".debug-call-stack .monaco-list-row" },
        });
        assert.equal(checks.found, true, checks.error);
      }
      // F5 in js-debug: the superstep finishes and the casefile session stops at the next boundary.
      await focusedOn(intoVariance.session);
      const beforePropose = await stopAfter("workbench.action.debug.continue");
      assert.equal(beforePropose.reason, "step", "Step Into is a step: the run pauses at the next boundary");
      assert.match((await frames(beforePropose))[0]?.name ?? "", /propose/, "paused before propose");
      // Again into propose (an agent: its context() is the first of its code called), then Shift+F11 in js-debug.
      await focusedOn(beforePropose.session);
      const intoPropose = await stopAfter("workbench.action.debug.stepInto", "pwa-node");
      const contextLine = lineOf("context: (s) =>");
      assert.equal((await frames(intoPropose))[0]?.line, contextLine + 1, "Step Into stops in propose's context()");
      await focusedOn(intoPropose.session);
      const beforeDecide = await stopAfter("workbench.action.debug.stepOut");
      assert.match(
        (await frames(beforeDecide))[0]?.name ?? "",
        /decide/,
        "Step Out of the executor's code comes back at the next boundary",
      );
      // Nothing of the step-into is left armed: Step Over from here is one superstep again, js-debug not stopping.
      await focusedOn(beforeDecide.session);
      const seen = stops.length;
      await vscode.commands.executeCommand("workbench.action.debug.stepOver");
      const after = await nextStop("*", seen);
      assert.equal(
        after.session.type,
        "casefile",
        `Step Over stops at the next boundary, not in executor code (${after.session.type}:${after.reason})`,
      );
    } finally {
      await stopAll();
    }
  });

  it("a breakpoint inside variance's run() binds in js-debug, stops there, and the editor shows the paused line", async () => {
    try {
      const { inCode, pctLine, inRun } = await stopInVarianceRun("INV-1002");
      await editorShows(pctLine);
      assert.ok(inRun.enabled, "the breakpoint inside run() is still enabled");
      if (browserAvailable()) {
        const checks = await askBrowser({
          name: "debug-executor-code",
          waitFor: ".debug-top-stack-frame-line",
          read: { paused: ".debug-top-stack-frame-line", callStack: ".debug-call-stack .monaco-list-row" },
        });
        assert.equal(checks.found, true, checks.error);
      }
      // Let the runner go on (js-debug holds it at the line) before the session ends.
      await inCode.session.customRequest("continue", { threadId: inCode.threadId });
    } finally {
      // The tests after this one start from no session and no breakpoint inside run().
      await stopAll();
      vscode.debug.removeBreakpoints(vscode.debug.breakpoints);
    }
  });

  it("F5 on the workflow file (no launch.json) asks for the input, and stops at the breakpoint on propose", async () => {
    vscode.debug.addBreakpoints([breakpointAt(lineOf("propose: agent<State>("))]);
    await vscode.window.showTextDocument(workflow);
    // The input box is prefilled with the last input given for this workflow: set as a person's earlier F5 would have.
    await api.ctx.extension.workspaceState.update("casefile.debug.lastInput", { [workflow.fsPath]: { invoiceId: "INV-1001" } });
    const seen = stops.length;
    void vscode.commands.executeCommand("workbench.action.debug.start");
    // TypeScript has more than one debugger (js-debug's Node.js too): VS Code asks which, as a person would pick it.
    if (browserAvailable()) {
      const picked = await askBrowser({
        name: "debug-select-debugger",
        waitFor: '.quick-input-widget .monaco-list-row:has-text("Casefile Workflow")',
        read: { choices: ".quick-input-widget .monaco-list-row" },
        click: ['.quick-input-widget .monaco-list-row:has-text("Casefile Workflow")'],
      });
      assert.equal(picked.found, true, picked.error);
    }
    // The input box appears once describe has read the input schema (a child process): accept it as Enter would.
    const accepting = setInterval(() => void vscode.commands.executeCommand("workbench.action.acceptSelectedQuickOpenItem"), 500);
    let atBreakpoint: Stop;
    try {
      atBreakpoint = await nextStop("casefile", seen);
    } finally {
      clearInterval(accepting);
    }
    assert.equal(atBreakpoint.session.configuration.workflow, workflow.fsPath);
    assert.deepEqual(atBreakpoint.session.configuration.input, { invoiceId: "INV-1001" });
    assert.equal(atBreakpoint.reason, "breakpoint", "with a breakpoint in the file, F5 runs to it");
    const [top] = await frames(atBreakpoint);
    assert.match(top?.name ?? "", /propose/);
    assert.equal(pathOf(top?.source?.path), workflow.fsPath);
    assert.equal(top?.line, lineOf("propose: agent<State>(") + 1, "the frame is placed on the executor's first line");
  });

  it("the Variables view shows variance with pct 9", async () => {
    // What the adapter answers (any DAP client sees this) ...
    const stop = await pausedAtPropose();
    const [top] = await frames(stop);
    const { scopes } = (await stop.session.customRequest("scopes", { frameId: top!.id })) as {
      scopes: { name: string; variablesReference: number }[];
    };
    const stateScope = scopes.find((sc) => sc.name === "State");
    assert.ok(stateScope, scopes.map((sc) => sc.name).join(", "));
    const variables = async (ref: number) =>
      (
        (await stop.session.customRequest("variables", { variablesReference: ref })) as {
          variables: { name: string; value: string; variablesReference: number }[];
        }
      ).variables;
    const variance = (await variables(stateScope.variablesReference)).find((v) => v.name === "variance");
    assert.ok(variance && variance.variablesReference > 0, "variance expands");
    assert.equal((await variables(variance.variablesReference)).find((v) => v.name === "pct")?.value, "9");
    if (!browserAvailable()) return;
    // ... and what a person reads in the Variables view.
    await vscode.commands.executeCommand("workbench.debug.action.focusVariablesView");
    const checks = await askBrowser({
      name: "debug-variables",
      waitFor: '.debug-variables .monaco-list-row[aria-level="1"]:has-text("State")',
      read: { rows: ".debug-variables .monaco-list-row" },
      // VS Code opens the first scope that is not expensive (State) by itself; opened here if it has not yet, then its variance, as a person would.
      expand: [
        '.debug-variables .monaco-list-row[aria-level="1"]:has-text("State")',
        '.debug-variables .monaco-list-row[aria-level="2"]:has-text("variance")',
      ],
      // The row shows expanded before its children arrive (a variables request): wait for them.
      waitAfterClicks: ['.debug-variables .monaco-list-row[aria-level="3"]:has-text("pct")'],
      readAfterClicks: { rows: ".debug-variables .monaco-list-row" },
    });
    assert.equal(checks.found, true, checks.error);
    const rows = (checks.after?.rows ?? []).map((r) => r.replace(/\s+/g, " "));
    assert.ok(
      rows.some((r) => /^variance\b/.test(r)),
      rows.join(" | "),
    );
    assert.ok(
      rows.some((r) => /^pct\s*[:=]\s*9$/.test(r)),
      rows.join(" | "),
    );
  });

  it("Step Over runs one superstep and reaches decide; Step Back returns to propose", async () => {
    const at = await pausedAtPropose();
    // The toolbar acts on the focused session: the paused casefile one, not js-debug's (running) session for the runner.
    assert.equal(vscode.debug.activeDebugSession?.id, at.session.id, `focused: ${vscode.debug.activeDebugSession?.type}`);
    const next = await stopAfter("workbench.action.debug.stepOver");
    assert.match((await frames(next))[0]?.name ?? "", /decide/);
    const back = await stopAfter("workbench.action.debug.stepBack");
    assert.match((await frames(back))[0]?.name ?? "", /propose/);
  });

  it("a JavaScript condition on a gutter breakpoint: the false one on variance is passed, the true one on propose stops", async () => {
    await stopAll();
    vscode.debug.removeBreakpoints(vscode.debug.breakpoints);
    const at = (text: string, condition: string) =>
      new vscode.SourceBreakpoint(new vscode.Location(workflow, new vscode.Position(lineOf(text), 0)), true, condition);
    vscode.debug.addBreakpoints([
      at("variance: code<State>(", "state.invoice.value.lines.every(l => l.qty > 1e9)"),
      at("propose: agent<State>(", "state.invoice.value.lines.some(l => l.qty > 0) && message.pct * 1.2 > 10"),
    ]);
    const entry = await debugAtEntry("INV-1001");
    const seen = stops.length;
    await entry.session.customRequest("continue", { threadId: entry.threadId });
    const stop = await nextStop("casefile", seen);
    assert.equal(stop.reason, "breakpoint", "the true condition stops");
    const [top] = await frames(stop);
    assert.match(top?.name ?? "", /^propose/, "variance's false condition was passed; propose's stopped");
  });

  it("the Debug Console evaluates over the paused state", async function () {
    const stop = await pausedAtPropose();
    const session = stop.session;
    assert.equal(vscode.debug.activeDebugSession?.id, session.id, "the Debug Console evaluates in the focused (casefile) session");
    const [top] = await frames(stop);
    const answer = (await session.customRequest("evaluate", {
      expression: "state.variance.pct > 5",
      frameId: top!.id,
      context: "repl",
    })) as {
      result: string;
    };
    assert.equal(answer.result, "true");
    if (!browserAvailable()) return;
    await vscode.commands.executeCommand("workbench.debug.action.focusRepl");
    const checks = await askBrowser({
      name: "debug-console",
      waitFor: ".repl .monaco-editor",
      read: {},
      keys: [{ type: "state.variance.pct", press: "Enter" }],
      readAfterClicks: { lines: ".repl .monaco-list-row" },
    });
    assert.equal(checks.found, true, checks.error);
    const lines = (checks.after?.lines ?? []).map((l) => l.replace(/\s+/g, " "));
    assert.ok(lines.some((l) => l.includes("state.variance.pct")) && lines.some((l) => /^9$/.test(l.trim())), lines.join(" | "));
  });
});

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
