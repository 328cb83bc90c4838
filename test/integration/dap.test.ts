import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import path from "node:path";
import type { DebugProtocol } from "@vscode/debugprotocol";
import { startErp } from "../../examples/erp/server";
import { supplierSeed } from "../../examples/supplier/erpSeed";
import { root, runCli } from "./helpers";
import { dapSuite, LINE, workflow } from "./dapHarness";

/**
 * The debug adapter as any DAP client sees it: `casefile dap` spawned from the built CLI and
 * driven over stdio by @vscode/debugadapter-testsupport's DebugClient, on the invoice example
 * with the ERP stand-in. Each test reads the case file the session left, from disk.
 */

describe("casefile dap: the debug adapter over stdio, on the invoice example", function () {
  this.timeout(120_000);
  const { h, open, caseFile, launchArgs, launch, stopped, frames, scopes, vars, dig, runs } = dapSuite();

  it("refuses a launch with a bad attribute, naming it", async () => {
    const s = await open();
    await s.dc.initializeRequest();
    await assert.rejects(
      s.dc.launchRequest({ caseFile: caseFile() } as DebugProtocol.LaunchRequestArguments),
      /launch attribute "workflow"/,
    );
    const s2 = await open();
    await s2.dc.initializeRequest();
    await assert.rejects(
      s2.dc.launchRequest({ workflow, tokenBudget: -3 } as unknown as DebugProtocol.LaunchRequestArguments),
      /launch attribute "tokenBudget" is invalid/,
    );
  });

  it("line breakpoint inside propose: verified on its first line, stops before superstep 3; stack, scopes and variables show the checkpoint", async () => {
    const s = await open();
    const file = caseFile();
    let bps: DebugProtocol.Breakpoint[] = [];
    await launch(s, launchArgs(file), async (dc) => {
      bps = (await dc.setBreakpointsRequest({ source: { path: workflow }, breakpoints: [{ line: LINE.propose + 9 }, { line: 20 }] })).body
        .breakpoints;
    });
    assert.equal(bps[0]!.verified, true);
    assert.equal(bps[0]!.line, LINE.propose, "moved to the executor's first line");
    assert.equal(bps[1]!.verified, false);
    assert.match(bps[1]!.message ?? "", /not inside an executor's definition/);

    const ev = await stopped(s);
    assert.equal(ev.body.reason, "breakpoint");
    assert.deepEqual(ev.body.hitBreakpointIds, [bps[0]!.id]);
    assert.match(ev.body.description ?? "", /before propose \(paused before superstep 3 \(checkpoint run-\w+:2\)\)/);

    const threads = (await s.dc.threadsRequest()).body.threads;
    assert.equal(threads.length, 1, "one thread: the run");
    assert.match(threads[0]!.name, /^run run-/);
    const stack = await frames(s, ev.body.threadId!);
    assert.equal(stack.length, 2);
    assert.equal(stack[0]!.name, "propose (agent)");
    assert.equal(stack[0]!.line, LINE.propose);
    assert.equal(stack[0]!.source?.path, workflow);
    assert.match(stack[1]!.name, /^superstep 3 · checkpoint run-\w+:2 \(before superstep 3\)$/);

    const sc = await scopes(s, stack[0]!.id);
    assert.deepEqual(Object.keys(sc), ["State", "Messages", "Step", "Run"]);
    assert.equal((await dig(s, sc.State!, "variance", "pct")).value, "9");
    // A fact expands to its value and provenance.
    const invoice = await vars(s, sc.State!.invoice!.variablesReference);
    assert.deepEqual(Object.keys(invoice), ["value", "provenance"]);
    assert.match((await dig(s, sc.State!, "invoice", "provenance", "source")).value, /\/invoices\/INV-1001"$/);
    assert.equal((await dig(s, sc.State!, "invoice", "value", "id")).value, '"INV-1001"');
    assert.equal((await dig(s, sc.State!, "variance", "pct")).evaluateName, "state.variance.pct");
    // Messages: what propose is about to receive (variance's output).
    assert.equal((await dig(s, sc.Messages!, "propose", "0", "from")).value, '"variance"');
    assert.match(sc.Step!.ran!.value, /not yet: propose runs in superstep 3/);
    assert.match(sc.Run!.checkpoint!.value, /^"run-\w+:2"$/);
    assert.equal(sc.Run!.superstep!.value, "2");
    assert.equal(sc.Run!.parentRun!.value, "null");

    // Next: one superstep, then the boundary before decide; the extract is in state with its document's version.
    await Promise.all([s.dc.nextRequest({ threadId: ev.body.threadId! }), s.dc.assertStoppedLocation("step", { line: LINE.decide })]);
    const after = await frames(s, ev.body.threadId!);
    assert.equal(after[0]!.name, "decide (commit)");
    const sc3 = await scopes(s, after[0]!.id);
    const terms = await vars(s, sc3.State!.priceTerms!.variablesReference);
    assert.ok(terms.value && terms.source && terms.sourceVersion, "the extract shows its document and version");
    assert.match(terms.source!.value, /contracts/);
    const superstep3 = await scopes(s, after[1]!.id);
    assert.equal((await dig(s, superstep3.Step!, "steps", "propose", "proposal", "action")).value, '"approve_variance"');
    assert.ok(Number((await dig(s, superstep3.Step!, "steps", "propose", "tokens")).value) > 0, "token count of the context");

    // Next again: decide ran; its frame's Step shows the rules and the verdict.
    await Promise.all([s.dc.nextRequest({ threadId: ev.body.threadId! }), stopped(s)]);
    const cp4 = await frames(s, ev.body.threadId!);
    assert.equal(cp4[0]!.name, "review (request)");
    const decideStep = await scopes(s, cp4[1]!.id);
    assert.equal((await dig(s, decideStep.Step!, "steps", "decide", "verdict")).value, '"escalated"');

    // The agent frame's Step after it ran (step back twice to the boundary before decide: propose is history there).
    await Promise.all([s.dc.stepBackRequest({ threadId: ev.body.threadId! }), s.dc.assertStoppedLocation("step", { line: LINE.decide })]);
    const back = await frames(s, ev.body.threadId!);
    const atDecide = await scopes(s, back[0]!.id);
    assert.equal(atDecide.Step!.executor!.value, '"decide"');
    await Promise.all([s.dc.stepBackRequest({ threadId: ev.body.threadId! }), s.dc.assertStoppedLocation("step", { line: LINE.propose })]);
    const cp2 = await scopes(s, (await frames(s, ev.body.threadId!))[0]!.id);
    assert.equal(cp2.State!.priceTerms, undefined, "the Variables show that checkpoint's state");
    assert.equal((await dig(s, cp2.State!, "variance", "pct")).value, "9");
  });

  it("evaluate over the paused state; hover over a key; a bad expression says why", async () => {
    const s = await open();
    await launch(s, launchArgs(caseFile()), (dc) => dc.setFunctionBreakpointsRequest({ breakpoints: [{ name: "propose" }] }));
    const ev = await stopped(s);
    assert.equal(ev.body.reason, "function breakpoint");
    const frameId = (await frames(s, ev.body.threadId!))[0]!.id;
    assert.equal((await s.dc.evaluateRequest({ expression: "state.variance.pct > 5", frameId, context: "repl" })).body.result, "true");
    assert.equal((await s.dc.evaluateRequest({ expression: "message.pct", frameId, context: "watch" })).body.result, "9");
    const hover = await s.dc.evaluateRequest({ expression: "variance", frameId, context: "hover" });
    assert.equal(hover.body.result, '{"amount":90,"pct":9}');
    assert.ok(hover.body.variablesReference > 0, "expandable");
    // The member chain VS Code sends for a hover inside an executor's code: ctx.state and ctx.message are the paused ones.
    assert.equal((await s.dc.evaluateRequest({ expression: "ctx.state.variance.pct", frameId, context: "hover" })).body.result, "9");
    assert.equal((await s.dc.evaluateRequest({ expression: "ctx.message.pct", frameId, context: "hover" })).body.result, "9");
    await assert.rejects(
      s.dc.evaluateRequest({ expression: "amount", frameId, context: "hover" }),
      /NOT_A_VALUE: "amount" is not a state key or path at /,
      "a word that is not a key answers no value",
    );
    await assert.rejects(
      s.dc.evaluateRequest({ expression: "state.variance.pct >", frameId, context: "repl" }),
      /EVALUATE_FAILED: Unexpected end of input/,
    );
    await assert.rejects(
      s.dc.evaluateRequest({ expression: "process.exit()", frameId, context: "repl" }),
      /EVALUATE_FAILED: ReferenceError: process is not defined/,
      "an expression sees the values, not the process",
    );
  });

  it("conditions, hit counts, logpoints and exception filters: a false condition does not stop, the logpoint prints, the proposal filter stops after decide", async () => {
    const s = await open();
    const file = caseFile();
    await launch(s, launchArgs(file), async (dc) => {
      await dc.setBreakpointsRequest({
        source: { path: workflow },
        breakpoints: [
          { line: LINE.variance, logMessage: "invoice {state.invoice.value.id} total {state.invoice.value.total}" },
          { line: LINE.propose, condition: "state.variance.pct > 50" },
          { line: LINE.load, hitCondition: "2" },
        ],
      });
      await dc.setExceptionBreakpointsRequest({ filters: ["proposalRejected", "waitingForPerson"] });
    });
    const ev = await stopped(s);
    assert.equal(ev.body.reason, "exception");
    assert.match(ev.body.description ?? "", /decide: proposal escalated: .*exceeds the 5% tolerance/);
    const info = await s.dc.exceptionInfoRequest({ threadId: ev.body.threadId! });
    assert.equal(info.body.exceptionId, "proposalRejected");
    assert.equal((await frames(s, ev.body.threadId!))[0]!.name, "review (request)");
    assert.ok(
      s.output.some((l) => /^invoice INV-1001 total \d+(\.\d+)?\n$/.test(l)),
      `the logpoint printed: ${s.output.join("")}`,
    );
    // Continue: review asks a person; the run waits, and the waiting filter stops at its last checkpoint.
    await Promise.all([s.dc.continueRequest({ threadId: ev.body.threadId! }), stopped(s)]).then(([, w]) => {
      assert.equal(w.body.reason, "exception");
      assert.match(w.body.description ?? "", /waits for a person: Review invoice INV-1001/);
    });
    const [run] = await runs(file);
    assert.equal(run!.status, "waiting");
  });

  it("a failing step stops on the step-failed filter, with the error", async () => {
    const s = await open();
    await launch(s, launchArgs(caseFile(), { input: { invoiceId: "INV-NOPE" } }));
    const ev = await stopped(s);
    assert.equal(ev.body.reason, "exception");
    assert.match(ev.body.description ?? "", /step load failed: .*404/);
  });

  it("setVariable: an invalid value is refused with key, path and message; a valid one forks a branch on Continue, the parent unchanged", async () => {
    const s = await open();
    const file = caseFile();
    await launch(s, launchArgs(file), (dc) => dc.setFunctionBreakpointsRequest({ breakpoints: [{ name: "propose" }] }));
    const ev = await stopped(s);
    const [frame] = await frames(s, ev.body.threadId!);
    const sc = await scopes(s, frame!.id);
    const variance = sc.State!.variance!;
    await assert.rejects(
      s.dc.setVariableRequest({ variablesReference: variance.variablesReference, name: "pct", value: '"high"' }),
      /INVALID_PATCH: state "variance" at "variance.pct": .*expected number/i,
    );
    await assert.rejects(
      s.dc.setVariableRequest({ variablesReference: variance.variablesReference, name: "pct", value: "high" }),
      /is not JSON/,
    );
    const set = await s.dc.setVariableRequest({ variablesReference: variance.variablesReference, name: "pct", value: "3" });
    assert.equal(set.body.value, "3");
    assert.equal((await s.dc.evaluateRequest({ expression: "state.variance.pct", frameId: frame!.id })).body.result, "3");
    const before = await runs(file);
    await Promise.all([s.dc.continueRequest({ threadId: ev.body.threadId! }), s.dc.waitForEvent("terminated")]);
    const after = await runs(file);
    assert.equal(after.length, 2, "a branch run");
    const branch = after.find((r) => r.parentRunId)!;
    assert.equal(branch.parentRunId, before[0]!.id);
    assert.equal(branch.parentCheckpointId, `${before[0]!.id}:2`);
    assert.equal(branch.status, "completed", "3% is within tolerance: approved and settled");
    assert.deepEqual(branch.patch, ["variance"]);
    const parent = after.find((r) => r.id === before[0]!.id)!;
    assert.deepEqual(parent.checkpoints, before[0]!.checkpoints, "the parent's history is unchanged");
    assert.ok(
      s.output.some((l) => /branch run run-\w+ of run-\w+, from checkpoint run-\w+:2 with edited variance/.test(l)),
      `the Debug Console names the branch made with the edit; it said: ${s.output.join(" | ")}`,
    );
  });

  it("reverse continue to the previous breakpoint; restart frame re-runs the superstep as a branch, the parent unchanged", async () => {
    const s = await open();
    const file = caseFile();
    await launch(s, launchArgs(file), (dc) =>
      dc.setFunctionBreakpointsRequest({ breakpoints: [{ name: "variance" }, { name: "decide" }] }),
    );
    let ev = await stopped(s);
    assert.equal((await frames(s, ev.body.threadId!))[0]!.name, "variance (code)");
    await Promise.all([
      s.dc.continueRequest({ threadId: ev.body.threadId! }),
      s.dc.assertStoppedLocation("function breakpoint", { line: LINE.decide }),
    ]);
    await Promise.all([
      s.dc.reverseContinueRequest({ threadId: ev.body.threadId! }),
      s.dc.assertStoppedLocation("breakpoint", { line: LINE.variance }),
    ]);
    const stack = await frames(s, ev.body.threadId!);
    assert.match(stack[1]!.name, /checkpoint run-\w+:1/);

    const before = await runs(file);
    assert.ok(stack[1]!.canRestart, `the superstep frame can be restarted: ${JSON.stringify(stack[1])}`);
    const restarted = Promise.all([s.dc.restartFrameRequest({ frameId: stack[1]!.id }), stopped(s)]);
    ev = (await restarted)[1];
    assert.equal(ev.body.reason, "restart");
    const threads = (await s.dc.threadsRequest()).body.threads;
    assert.equal(threads.length, 2, "the branch is a thread of its own");
    const after = await runs(file);
    const branch = after.find((r) => r.parentRunId)!;
    assert.equal(branch.parentCheckpointId, `${before[0]!.id}:1`);
    const parent = after.find((r) => r.id === before[0]!.id)!;
    assert.deepEqual(parent.checkpoints, before[0]!.checkpoints, "parent unchanged");
    const bstack = await frames(s, ev.body.threadId!);
    assert.equal(bstack[0]!.name, "variance (code)");
    assert.match(bstack[1]!.name, new RegExp(`checkpoint ${branch.id}:1`));
    // Next in the branch runs superstep 2 again.
    await Promise.all([s.dc.nextRequest({ threadId: ev.body.threadId! }), s.dc.assertStoppedLocation("step", { line: LINE.propose })]);
    assert.deepEqual((await runs(file)).find((r) => r.id === branch.id)!.checkpoints.at(-1), `${branch.id}:2`);
  });

  it("terminate mid-run leaves the run stopped and resumable; a session resuming from the case file finishes it in the same run", async () => {
    const s = await open();
    const file = caseFile();
    await launch(s, launchArgs(file), (dc) => dc.setFunctionBreakpointsRequest({ breakpoints: [{ name: "propose" }] }));
    await stopped(s);
    await Promise.all([s.dc.terminateRequest(), s.dc.waitForEvent("terminated")]);
    const [run] = await runs(file);
    assert.equal(run!.status, "stopped");
    const latest = run!.checkpoints.at(-1)!;
    assert.equal(latest, `${run!.id}:2`);

    const s2 = await open();
    await launch(s2, { caseFile: file, resumeFrom: { checkpoint: latest }, stopOnEntry: true });
    const entry = await stopped(s2);
    assert.equal(entry.body.reason, "entry");
    assert.equal((await frames(s2, entry.body.threadId!))[0]!.name, "propose (agent)");
    await s2.dc.setExceptionBreakpointsRequest({ filters: [] });
    await Promise.all([s2.dc.continueRequest({ threadId: entry.body.threadId! }), s2.dc.waitForEvent("terminated")]);
    const after = await runs(file);
    assert.equal(after.length, 1, "the same run went on: no branch");
    assert.equal(after[0]!.status, "waiting");
    assert.ok(
      s2.output.some((l) => new RegExp(`run ${run!.id} goes on from checkpoint ${latest}`).test(l)),
      `the Debug Console says the run goes on from ${latest}; it said: ${s2.output.join(" | ")}`,
    );
  });

  it("an adapter killed mid-session leaves a case file that opens and a run that resumes", async () => {
    const s = await open();
    const file = caseFile();
    let runnerPid: number | undefined;
    s.dc.on("process", (e: DebugProtocol.ProcessEvent) => (runnerPid = e.body.systemProcessId));
    await launch(s, launchArgs(file), (dc) => dc.setFunctionBreakpointsRequest({ breakpoints: [{ name: "decide" }] }));
    await stopped(s);
    assert.ok(runnerPid, "the adapter said the runner's pid");
    s.adapter.kill("SIGKILL");
    // The runner sees its channel close, stops at the boundary and closes the case file.
    for (let i = 0; i < 200 && alive(runnerPid!); i++) await new Promise((r) => setTimeout(r, 50));
    assert.equal(alive(runnerPid!), false, "the runner exited");
    const inspected = await runCli(["inspect", file, "--json"]);
    assert.equal(inspected.code, 0, inspected.stderr);
    const [run] = (JSON.parse(inspected.stdout) as { runs: { id: string; status: string }[] }).runs;
    assert.equal(run!.status, "stopped");
  });

  it("restart: a new run with the same configuration, hit counts counted again", async () => {
    const s = await open();
    const file = caseFile();
    await launch(s, launchArgs(file), (dc) =>
      dc.setBreakpointsRequest({ source: { path: workflow }, breakpoints: [{ line: LINE.variance + 2, hitCondition: "== 1" }] }),
    );
    const first = await stopped(s);
    assert.equal((await frames(s, first.body.threadId!))[0]!.name, "variance (code)");
    await Promise.all([s.dc.restartRequest({}), stopped(s)]).then(async ([, again]) => {
      assert.notEqual(again.body.threadId, first.body.threadId, "a new run: a new thread");
      assert.equal((await frames(s, again.body.threadId!))[0]!.name, "variance (code)");
    });
    const all = await runs(file);
    assert.equal(all.length, 2);
    assert.ok(
      all.every((r) => !r.parentRunId),
      "a new run, not a branch",
    );
    assert.equal(all.find((r) => r.id === all[0]!.id)!.status, "stopped", "the first run stopped, resumable");
  });

  it("before an effect acts: the filter stops at the boundary before the supplier example's first effect; the step shows its intent after", async () => {
    const supplier = path.join(root, "examples/supplier/workflow.ts");
    const erp2 = await startErp({ dataDir: path.join(h.dir, "erp-supplier"), seed: supplierSeed(2) });
    try {
      const s = await open();
      await launch(s, { workflow: supplier, caseFile: caseFile(), input: { applicationId: "APP-0000", erpUrl: erp2.url } }, (dc) =>
        dc.setExceptionBreakpointsRequest({ filters: ["beforeEffect"] }),
      );
      const ev = await stopped(s);
      assert.equal(ev.body.reason, "exception");
      assert.match(ev.body.description ?? "", /effect createSupplier is about to act/);
      const stack = await frames(s, ev.body.threadId!);
      assert.equal(stack[0]!.name, "createSupplier (effect)");
      await s.dc.setExceptionBreakpointsRequest({ filters: [] });
      await Promise.all([s.dc.nextRequest({ threadId: ev.body.threadId! }), stopped(s)]);
      const after = await frames(s, ev.body.threadId!);
      const step = await scopes(s, after.at(-1)!.id);
      assert.equal((await dig(s, step.Step!, "steps", "createSupplier", "intent", "status")).value, '"done"');
    } finally {
      await erp2.close();
    }
  });

  it("inputFile: the input read from a file; debugExecutorCode announces the runner's inspector port", async () => {
    const s = await open();
    const input = path.join(h.dir, "input.json");
    writeFileSync(input, JSON.stringify({ invoiceId: "INV-1002" }));
    const inspector = s.dc.waitForEvent("casefile/inspector");
    await launch(s, { workflow, caseFile: caseFile(), inputFile: input, stopOnEntry: true, debugExecutorCode: true });
    const ev = (await inspector) as DebugProtocol.Event;
    assert.ok(Number(ev.body.port) > 0, `the inspector event names a port: ${JSON.stringify(ev.body)}`);
    assert.equal(ev.body.host, "127.0.0.1");
    const entry = await stopped(s);
    assert.equal(entry.body.reason, "entry");
    const sc = await scopes(s, (await frames(s, entry.body.threadId!))[0]!.id);
    assert.equal((await dig(s, sc.Messages!, "load", "0", "payload", "invoiceId")).value, '"INV-1002"');
  });
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
