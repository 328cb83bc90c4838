import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { z } from "zod";
import { agent, code, edge } from "../../../src/engine/executors";
import { defineWorkflow } from "../../../src/engine/workflow";
import type { HostToRunner } from "../../../src/protocol/runner";
import { tokenBudgetOption } from "../../../src/cli/args";
import { defaultBudgetOf, withDefaultBudget } from "../../../src/runner/budget";
import { startRunner } from "../../../src/runner/client";
import { runSession } from "../../../src/runner/session";

/**
 * The default token budget (the editor's casefile.tokenBudget setting, the CLI's --token-budget):
 * how a value becomes a budget, that a step's own budget beats it, that it reaches the runner's
 * start message, and that a run held to it refuses an agent step over it.
 */

const Proposal = z.object({ action: z.enum(["pay", "refuse"]), reason: z.string(), facts: z.array(z.string()) });

function twoAgents() {
  return defineWorkflow({
    name: "budgets",
    version: 1,
    state: { note: z.string() },
    start: "own",
    executors: {
      own: agent({ proposal: Proposal, model: { model: "gpt-4o-mini" }, budget: { soft: 100, hard: 200 }, context: () => [] }),
      none: agent({ proposal: Proposal, model: { model: "gpt-4o-mini" }, context: () => [] }),
      done: code({ owns: ["note"], run: (ctx) => ctx.write("note", "done") }),
    },
    edges: [edge("own", "none"), edge("none", "done")],
  });
}

describe("default token budget: from the setting or option", () => {
  it("a positive whole number is the hard budget; 0, empty or absent is none", () => {
    assert.deepEqual(defaultBudgetOf(4000), { hard: 4000 });
    assert.deepEqual(defaultBudgetOf(" 250 "), { hard: 250 });
    for (const none of [0, "0", "", undefined, null]) assert.equal(defaultBudgetOf(none), undefined);
  });

  it("anything else is a usage error naming where it came from", () => {
    for (const bad of [-1, 1.5, "lots", true]) {
      assert.throws(
        () => defaultBudgetOf(bad, "--token-budget"),
        (e: Error & { code?: string }) => e.code === "USAGE" && /--token-budget must be a whole number of tokens/.test(e.message),
      );
    }
  });

  it("the CLI takes --token-budget, else $CASEFILE_TOKEN_BUDGET", () => {
    const io = (env: NodeJS.ProcessEnv) => ({ out: () => {}, err: () => {}, env });
    assert.deepEqual(tokenBudgetOption("300", io({ CASEFILE_TOKEN_BUDGET: "900" })), { hard: 300 });
    assert.deepEqual(tokenBudgetOption(undefined, io({ CASEFILE_TOKEN_BUDGET: "900" })), { hard: 900 });
    assert.equal(tokenBudgetOption(undefined, io({})), undefined);
    assert.throws(() => tokenBudgetOption(undefined, io({ CASEFILE_TOKEN_BUDGET: "x" })), /CASEFILE_TOKEN_BUDGET must be a whole number/);
  });
});

describe("default token budget: precedence", () => {
  it("goes to agent steps that declare no budget; a step's own budget wins, whole", () => {
    const workflow = twoAgents();
    const budgeted = withDefaultBudget(workflow, { hard: 50 });
    const spec = (id: string) => budgeted.executors[id] as { kind: string; budget?: unknown };
    assert.deepEqual(spec("own").budget, { soft: 100, hard: 200 });
    assert.deepEqual(spec("none").budget, { hard: 50 });
    assert.equal(spec("done").budget, undefined, "code steps are not budgeted");
    assert.equal((workflow.executors.none as { budget?: unknown }).budget, undefined, "the loaded workflow is left as it was");
    assert.equal(budgeted.graphHash, workflow.graphHash, "the graph (and so resuming) is unchanged");
  });

  it("without a default, the workflow is returned as it is", () => {
    const workflow = twoAgents();
    assert.equal(withDefaultBudget(workflow, undefined), workflow);
    assert.equal(withDefaultBudget(workflow, {}), workflow);
  });
});

describe("default token budget: through the runner", function () {
  this.timeout(60_000);
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "casefile-budget-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("reaches the runner in its start message", async () => {
    // A stand-in runner: says ready, then logs the start message it was sent and exits.
    const runner = path.join(dir, "echo-runner.cjs");
    writeFileSync(
      runner,
      `process.on("message", (m) => { if (m.type === "start") { process.send({ type: "log", level: "info", message: JSON.stringify(m) }, () => process.exit(0)); } });
       process.send({ type: "ready" });`,
    );
    const starts: HostToRunner[] = [];
    const handle = startRunner({
      runnerPath: runner,
      command: { kind: "run", workflowPath: "w.ts", caseFile: "w.casefile" },
      defaultBudget: { hard: 1234 },
      onMessage: (m) => {
        if (m.type === "log" && m.message.startsWith("{")) starts.push(JSON.parse(m.message) as HostToRunner);
      },
    });
    await handle.finished;
    assert.equal(starts.length, 1);
    assert.deepEqual(starts[0], {
      type: "start",
      command: { kind: "run", workflowPath: "w.ts", caseFile: "w.casefile" },
      stepMode: false,
      defaultBudget: { hard: 1234 },
    });
  });

  /** A workflow file whose agent step declares `budget` (or none), answered by a scripted fixture beside it. */
  function workflowFile(budget: string): string {
    const file = path.join(dir, "claims.ts");
    writeFileSync(
      file,
      `import { agent, code, defineWorkflow, edge, z } from "casefile";
export default defineWorkflow({
  name: "claims",
  version: 1,
  state: { note: z.string() },
  start: "propose",
  executors: {
    propose: agent({
      proposal: z.object({ action: z.enum(["pay", "refuse"]), reason: z.string(), facts: z.array(z.string()) }),
      model: { model: "gpt-4o-mini" },
      ${budget}
      context: () => [{ role: "user", content: "Decide whether to pay the claim of 40 for a broken window, reported on time." }],
    }),
    done: code({ owns: ["note"], run: (ctx) => ctx.write("note", "done") }),
  },
  edges: [edge("propose", "done")],
});
`,
    );
    writeFileSync(
      path.join(dir, "claims.responses.json"),
      JSON.stringify({ responses: [{ step: "propose", response: { action: "pay", reason: "small", facts: [] } }] }),
    );
    return file;
  }

  it("refuses an agent step that declares no budget when its request is over the default", async () => {
    const workflowPath = workflowFile("");
    const result = await runSession(
      { kind: "run", workflowPath, caseFile: path.join(dir, "claims.casefile") },
      { defaultBudget: { hard: 5 }, env: {} },
    );
    assert.equal(result.status, "failed");
    assert.equal(result.error?.code, "TOKEN_BUDGET_EXCEEDED");
    assert.match(
      result.error!.message,
      /step "propose": context is \d+ tokens, above the hard budget of 5 tokens; the model was not called/,
    );
  });

  it("lets a step's own budget beat the default", async () => {
    const workflowPath = workflowFile("budget: { hard: 10000 },");
    const result = await runSession(
      { kind: "run", workflowPath, caseFile: path.join(dir, "claims.casefile") },
      { defaultBudget: { hard: 5 }, env: {} },
    );
    assert.equal(result.status, "completed", JSON.stringify(result.error));
  });

  it("runs as before without a default", async () => {
    const workflowPath = workflowFile("");
    const result = await runSession({ kind: "run", workflowPath, caseFile: path.join(dir, "claims.casefile") }, { env: {} });
    assert.equal(result.status, "completed", JSON.stringify(result.error));
  });
});
