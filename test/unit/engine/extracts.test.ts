import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { z } from "zod";
import { SqlJsStore } from "../../../src/casefile/sqlJsStore";
import { formatInspection, inspectRuns } from "../../../src/cli/inspect";
import { WorkflowDefinitionError } from "../../../src/engine/errors";
import { checkProposal } from "../../../src/engine/agentStep";
import { Engine } from "../../../src/engine/engine";
import { agent, code, commit, edge, extract, fact, loader } from "../../../src/engine/executors";
import { extractProvenance } from "../../../src/engine/extracts";
import { ScriptedProvider } from "../../../src/engine/providers/scripted";
import type { AgentCallRecord, EventRecord, Extract, Json } from "../../../src/engine/records";
import type { CaseStore } from "../../../src/engine/store";
import { defineWorkflow, type Workflow, type WorkflowSpec } from "../../../src/engine/workflow";

/**
 * Extracts from long documents, through the engine on a case file on disk. A loader reads a
 * supplier contract (a long text, a fact with its version) from a stand-in system of record; the
 * price terms are an extract of it, which is all the agent reads. The workflow loops: load,
 * propose, decide, load again..., so a test can change the contract between rounds.
 */

const SOURCE = "erp://contracts/C-7";

/** A contract text: clauses around a price table, as a long document would have them. */
function contractText(prices: Record<string, number>, noticeDays: number): string {
  const clauses = Array.from({ length: 40 }, (_, i) => `Clause ${i + 1}. The parties agree to the usual terms of delivery ${i + 1}.`);
  const table = Object.entries(prices).map(([sku, price]) => `| ${sku} | ${price.toFixed(2)} |`);
  return [...clauses, "Schedule A: prices", "| SKU | EUR |", ...table, `Price changes need ${noticeDays} days' written notice.`].join("\n");
}

const Terms = z.object({ noticeDays: z.number().int(), prices: z.record(z.string(), z.number()) });

/** The extractor the tests count calls of: reads the price table and the notice clause. */
function parseTerms(text: string): z.input<typeof Terms> {
  const prices: Record<string, number> = {};
  for (const m of text.matchAll(/^\| ([A-Z][\w-]*) \| ([\d.]+) \|$/gm)) prices[m[1]!] = Number(m[2]);
  return { noticeDays: Number(/need (\d+) days/.exec(text)?.[1] ?? NaN), prices };
}

const Proposal = z.object({ action: z.enum(["pay", "hold"]), reason: z.string().min(1), facts: z.array(z.string()) });

interface Erp {
  /** The contract's version and text as the system of record holds it now. */
  contract: { version: string; text: string };
}

interface Counters {
  extracted: { version: string }[];
}

function contractWorkflow(erp: Erp, counters: Counters, opts: { rounds: number; run?: (text: string) => unknown }): Workflow {
  return defineWorkflow({
    name: "contract-terms",
    version: 1,
    state: {
      contract: fact(z.object({ text: z.string() })),
      terms: extract(Terms, {
        from: "contract",
        run(doc: { text: string }, source) {
          counters.extracted.push({ version: source.sourceVersion });
          return (opts.run ?? parseTerms)(doc.text) as z.input<typeof Terms>;
        },
      }),
      decision: z.object({ round: z.number(), action: z.string() }),
    },
    input: z.object({}),
    start: "load",
    executors: {
      load: loader({
        owns: ["contract"],
        run(ctx) {
          ctx.fact("contract", { text: erp.contract.text }, { source: SOURCE, sourceVersion: erp.contract.version });
          return "loaded";
        },
      }),
      propose: agent({
        reads: ["terms"],
        proposal: Proposal,
        model: { model: "gpt-4o-mini" },
        context: (s) => {
          const t = s.terms as Extract<z.infer<typeof Terms>>;
          return [
            { role: "system", content: "Decide whether to pay the invoice at the contract's prices. Answer JSON {action, reason, facts}." },
            { role: "user", content: `Extract "terms" (${extractProvenance(t).source}): ${JSON.stringify(t.value)}` },
          ];
        },
      }),
      decide: commit({
        owns: ["decision"],
        rules: {},
        apply(outcome, ctx) {
          const round = ((ctx.state.decision as { round: number } | undefined)?.round ?? 0) + 1;
          ctx.write("decision", { round, action: String(outcome.proposal?.action ?? "escalate") });
          return { round };
        },
      }),
    },
    edges: [
      edge("load", "propose"),
      edge("propose", "decide"),
      edge("decide", "load", { when: (m) => (m as { round: number }).round < opts.rounds, label: "again" }),
    ],
  });
}

let dir: string;
let store: CaseStore | undefined;
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), "casefile-extract-"));
});
afterEach(() => {
  store?.close();
  store = undefined;
  rmSync(dir, { recursive: true, force: true });
});

/** The agent's answer, every call: it relies on the extract, which is citable like a fact. */
function provider(): ScriptedProvider {
  const file = path.join(dir, "responses.json");
  const response = { action: "pay", reason: "The invoice matches the contract's prices.", facts: ["terms"] };
  writeFileSync(file, JSON.stringify({ responses: [{ step: "propose", response }] }));
  return new ScriptedProvider(file);
}

async function openStore(): Promise<CaseStore> {
  store = await SqlJsStore.open(path.join(dir, "case.casefile"), { create: true });
  return store;
}

/** Reopens the case file from disk: what another process (the inspector, the CLI) would read. */
async function reopen(): Promise<CaseStore> {
  store?.close();
  store = await SqlJsStore.open(path.join(dir, "case.casefile"), { readOnly: true });
  return store;
}

function extractEvents(s: CaseStore, runId: string): EventRecord[] {
  return s.listEvents({ runId }).filter((e) => e.type === "extract");
}

/** The agent's superstep in a run, for each call. */
function calls(s: CaseStore, runId: string): AgentCallRecord[] {
  return s.listAgentCalls(runId).sort((a, b) => a.superstep - b.superstep);
}

describe("extracts: made from a fact, used only while its version matches", () => {
  it("is made on first read, stored with the source's id, version and fingerprint, and cited like a fact", async () => {
    const erp: Erp = { contract: { version: '"v1"', text: contractText({ "PAL-EUR": 10, "CRT-40": 20 }, 30) } };
    const counters: Counters = { extracted: [] };
    const s = await openStore();
    const result = await new Engine(contractWorkflow(erp, counters, { rounds: 1 }), s, { provider: provider() }).run({});
    assert.equal(result.status, "completed", result.error?.message);
    assert.deepEqual(counters.extracted, [{ version: '"v1"' }]);

    const r = await reopen();
    const [call] = calls(r, result.runId);
    const terms = r.readValues(r.getCheckpoint(`${result.runId}:${call!.superstep}`)!.keys).terms as unknown as Extract;
    assert.deepEqual(terms.value, { noticeDays: 30, prices: { "PAL-EUR": 10, "CRT-40": 20 } });
    assert.deepEqual([terms.from, terms.source, terms.sourceVersion], ["contract", SOURCE, '"v1"']);
    assert.match(terms.sourceHash, /^sha256:[0-9a-f]{64}$/);
    assert.equal(typeof terms.extractedAt, "string");
    // made in the reader's superstep, committed with it: the checkpoint before has no extract
    assert.equal(r.readValues(r.getCheckpoint(`${result.runId}:${call!.superstep - 1}`)!.keys).terms, undefined);
    const cp = r.listEvents({ runId: result.runId }).find((e) => e.type === "checkpoint" && e.superstep === call!.superstep)!;
    assert.deepEqual((cp.data as { changed: string[] }).changed, ["terms"]);

    assert.match(call!.request.messages[1]!.content, /^Extract "terms" \(extract of erp:\/\/contracts\/C-7@"v1"\): /);
    assert.deepEqual(call!.extracts, [{ key: "terms", from: "contract", source: SOURCE, sourceVersion: '"v1"' }]);
    assert.equal(call!.rejection, undefined, "a proposal citing the extract is not refused as citing an unknown fact");
    assert.deepEqual(call!.proposal, { action: "pay", reason: "The invoice matches the contract's prices.", facts: ["terms"] });
    assert.equal(r.listVerdicts(result.runId)[0]!.verdict, "accepted");

    const events = extractEvents(r, result.runId);
    assert.equal(events.length, 1);
    assert.deepEqual(events[0]!.data, {
      key: "terms",
      from: "contract",
      source: SOURCE,
      sourceVersion: '"v1"',
      readers: ["propose"],
      stale: false,
      reason: "first read",
      previous: null,
    });
    assert.equal(r.listEvents({ runId: result.runId }).filter((e) => e.type === "warning").length, 0);
  });

  it("is reused while the version matches: the source read again at the same version is not extracted again", async () => {
    const erp: Erp = { contract: { version: '"v1"', text: contractText({ "PAL-EUR": 10 }, 30) } };
    const counters: Counters = { extracted: [] };
    const s = await openStore();
    const result = await new Engine(contractWorkflow(erp, counters, { rounds: 3 }), s, { provider: provider() }).run({});
    assert.equal(result.status, "completed", result.error?.message);
    assert.equal(counters.extracted.length, 1, "three reads of the same version, one extraction");
    const agentCalls = calls(s, result.runId);
    assert.equal(agentCalls.length, 3);
    // the contract fact was written again each round (a new read time), the extract was not
    const facts = s.listFacts(result.runId).filter((f) => f.key === "contract");
    assert.deepEqual(
      facts.map((f) => f.version),
      [1, 2, 3],
    );
    assert.equal(s.latestCheckpoint(result.runId)!.keys.terms!.version, 1);
    assert.equal(new Set(agentCalls.map((c) => c.hash)).size, 1, "same extract, same context, same hash");
    assert.equal(extractEvents(s, result.runId).length, 1);
  });

  it("a new version of the source makes the extract stale: flagged, extracted again, and the context gets only the new one", async () => {
    const erp: Erp = { contract: { version: "v1", text: contractText({ "PAL-EUR": 10 }, 30) } };
    const counters: Counters = { extracted: [] };
    const s = await openStore();
    let loads = 0;
    const result = await new Engine(contractWorkflow(erp, counters, { rounds: 3 }), s, {
      provider: provider(),
      onEvent: (e) => {
        // The supplier's contract is renegotiated once the first round's load is committed.
        if (e.type === "step_completed" && (e.data as { executor: string }).executor === "load" && ++loads === 1) {
          erp.contract = { version: "v2", text: contractText({ "PAL-EUR": 10.9 }, 60) };
        }
      },
    }).run({});
    assert.equal(result.status, "completed", result.error?.message);
    assert.deepEqual(counters.extracted, [{ version: "v1" }, { version: "v2" }], "extracted once per version");

    const r = await reopen();
    const agentCalls = calls(r, result.runId);
    assert.deepEqual(
      agentCalls.map((c) => c.extracts![0]!.sourceVersion),
      ["v1", "v2", "v2"],
    );
    for (const c of agentCalls.slice(1)) {
      const text = c.request.messages.map((m) => m.content).join("\n");
      assert.match(text, /@v2\): \{"noticeDays":60,"prices":\{"PAL-EUR":10\.9\}\}/);
      assert.doesNotMatch(text, /v1|"noticeDays":30|"PAL-EUR":10\}/, "nothing of the old extract reaches a context");
    }

    // history is kept whole: the old extract is still the key's earlier version
    const at = (superstep: number) => r.getCheckpoint(`${result.runId}:${superstep}`)!;
    const first = r.readValues(at(agentCalls[0]!.superstep).keys).terms as unknown as Extract;
    const last = r.readValues(r.latestCheckpoint(result.runId)!.keys).terms as unknown as Extract;
    assert.deepEqual([first.sourceVersion, last.sourceVersion], ["v1", "v2"]);
    assert.deepEqual([at(agentCalls[0]!.superstep).keys.terms!.version, r.latestCheckpoint(result.runId)!.keys.terms!.version], [1, 2]);

    // the stale flag is in the case file: an extract event with both versions, and a warning
    const events = extractEvents(r, result.runId);
    assert.equal(events.length, 2);
    const stale = events[1]!;
    assert.equal(stale.superstep, agentCalls[1]!.superstep, "made again in the superstep of the executor reading it");
    const reason = `its document "${SOURCE}" changed from version "v1" to "v2"`;
    assert.deepEqual(stale.data, {
      key: "terms",
      from: "contract",
      source: SOURCE,
      sourceVersion: "v2",
      readers: ["propose"],
      stale: true,
      reason,
      previous: { source: SOURCE, sourceVersion: "v1", extractedAt: first.extractedAt },
    });
    const warnings = r.listEvents({ runId: result.runId }).filter((e) => e.type === "warning");
    assert.deepEqual(
      warnings.map((w) => [w.superstep, w.data]),
      [[stale.superstep, { executor: "propose", message: `extract "terms" was stale: ${reason}; extracted again for propose` }]],
    );
    // and `casefile inspect` says so
    const inspected = inspectRuns(r, result.runId);
    assert.deepEqual(
      inspected[0]!.extracts.map((x) => [x.superstep, x.sourceVersion, x.stale]),
      [
        [agentCalls[0]!.superstep, "v1", false],
        [stale.superstep, "v2", true],
      ],
    );
    assert.match(
      formatInspection("case.casefile", inspected),
      new RegExp(
        `\n  stale extract at superstep ${stale.superstep}: "terms" made again: its document "erp://contracts/C-7" changed from version "v1" to "v2"\n`,
      ),
    );
  });
});

describe("extracts: resume and fork", () => {
  /** A finished two-round run, and the checkpoint after the second load (the extract of v1 in state, propose pending). */
  async function twoRounds(erp: Erp, counters: Counters): Promise<{ wf: Workflow; runId: string; fork: string }> {
    const wf = contractWorkflow(erp, counters, { rounds: 2 });
    const s = await openStore();
    const result = await new Engine(wf, s, { provider: provider() }).run({});
    assert.equal(result.status, "completed", result.error?.message);
    const second = calls(s, result.runId)[1]!;
    return { wf, runId: result.runId, fork: `${result.runId}:${second.superstep - 1}` };
  }

  it("forking with the source edited to a new version re-extracts in the branch; the parent keeps its extract", async () => {
    const erp: Erp = { contract: { version: "v1", text: contractText({ "PAL-EUR": 10 }, 30) } };
    const counters: Counters = { extracted: [] };
    const { wf, runId, fork } = await twoRounds(erp, counters);
    assert.equal(counters.extracted.length, 1);
    const s = store!;
    const before = s.readValues(s.getCheckpoint(fork)!.keys);
    assert.equal((before.terms as unknown as Extract).sourceVersion, "v1", "the fork point holds the extract of v1");

    const patched = {
      value: { text: contractText({ "PAL-EUR": 12 }, 45) },
      provenance: { source: SOURCE, sourceVersion: "v2", readAt: "2026-01-01T00:00:00.000Z" },
    };
    const branch = await new Engine(wf, s, { provider: provider() }).resume(fork, { patch: { contract: patched } });
    assert.equal(branch.status, "completed", branch.error?.message);
    assert.notEqual(branch.runId, runId);
    assert.deepEqual(counters.extracted, [{ version: "v1" }, { version: "v2" }]);

    const r = await reopen();
    const [call] = calls(r, branch.runId);
    assert.match(call!.request.messages[1]!.content, /@v2\): \{"noticeDays":45,"prices":\{"PAL-EUR":12\}\}$/);
    const [event] = extractEvents(r, branch.runId);
    assert.equal((event!.data as { stale: boolean }).stale, true);
    assert.equal((event!.data as { reason: string }).reason, `its document "${SOURCE}" changed from version "v1" to "v2"`);
    // the parent run is untouched: its second round used the extract of v1, and it has no stale flag
    assert.deepEqual(
      calls(r, runId).map((c) => c.extracts![0]!.sourceVersion),
      ["v1", "v1"],
    );
    assert.equal(extractEvents(r, runId).length, 1);
  });

  it("a source edited under the same version still counts as changed (its fingerprint differs)", async () => {
    const erp: Erp = { contract: { version: "v1", text: contractText({ "PAL-EUR": 10 }, 30) } };
    const counters: Counters = { extracted: [] };
    const { wf, fork } = await twoRounds(erp, counters);
    const s = store!;
    const contract = s.readValues(s.getCheckpoint(fork)!.keys).contract as { value: { text: string }; provenance: Json };
    const edited = {
      value: { text: contract.value.text.replace("| PAL-EUR | 10.00 |", "| PAL-EUR | 9.50 |") },
      provenance: contract.provenance,
    };
    const branch = await new Engine(wf, s, { provider: provider() }).resume(fork, { patch: { contract: edited } });
    assert.equal(branch.status, "completed", branch.error?.message);
    assert.deepEqual(counters.extracted, [{ version: "v1" }, { version: "v1" }]);
    const [call] = calls(s, branch.runId);
    assert.match(call!.request.messages[1]!.content, /"PAL-EUR":9\.5\}/);
    const [event] = extractEvents(s, branch.runId);
    assert.equal((event!.data as { reason: string }).reason, `its document "${SOURCE}" changed under the same version "v1" (state edited)`);
  });

  it("resuming where nothing changed reuses the extract", async () => {
    const erp: Erp = { contract: { version: "v1", text: contractText({ "PAL-EUR": 10 }, 30) } };
    const counters: Counters = { extracted: [] };
    const { wf, fork } = await twoRounds(erp, counters);
    const branch = await new Engine(wf, store!, { provider: provider() }).resume(fork);
    assert.equal(branch.status, "completed", branch.error?.message);
    assert.equal(counters.extracted.length, 1);
    assert.equal(extractEvents(store!, branch.runId).length, 0);
  });
});

describe("extracts: failures and misuse", () => {
  it("fails the superstep when the extractor throws or returns what its schema rejects, naming the key and the version", async () => {
    const erp: Erp = { contract: { version: "v1", text: "no table here" } };
    for (const [run, message] of [
      [
        () => {
          throw new Error("no price table found");
        },
        /^extract "terms" of "contract" \(erp:\/\/contracts\/C-7, version "v1"\) failed: no price table found$/,
      ],
      [
        () => ({ noticeDays: "sixty", prices: {} }),
        /^extract "terms" of "contract" \(erp:\/\/contracts\/C-7, version "v1"\) is invalid at "terms\.value\.noticeDays"/,
      ],
    ] as const) {
      const s = await openStore();
      const result = await new Engine(contractWorkflow(erp, { extracted: [] }, { rounds: 1, run }), s, { provider: provider() }).run({});
      assert.equal(result.status, "failed");
      assert.equal(result.error?.code, "EXTRACT_FAILED");
      assert.equal(result.error?.executor, "propose", "the executor that read it");
      assert.match(result.error!.message, message);
      assert.deepEqual(s.listAgentCalls(result.runId), [], "the agent did not run without its extract");
      assert.equal(s.readValues(s.latestCheckpoint(result.runId)!.keys).terms, undefined);
      s.close();
      store = undefined;
      rmSync(path.join(dir, "case.casefile"), { force: true });
      rmSync(path.join(dir, "case.casefile.journal"), { force: true });
    }
  });

  it("refuses an executor writing an extract key at run time", async () => {
    const wf = defineWorkflow({
      name: "w",
      version: 1,
      state: { doc: fact(z.string()), summary: extract(z.string(), { from: "doc", run: (d: string) => d.slice(0, 3) }) },
      start: "sneak",
      executors: { sneak: code({ run: (ctx) => ctx.write("summary", "made up") }) },
      edges: [],
    });
    const s = await openStore();
    const result = await new Engine(wf, s).run();
    assert.equal(result.error?.code, "WRITE_NOT_OWNED");
    assert.match(
      result.error!.message,
      /executor "sneak" wrote extract key "summary": extracts are made by the engine from "doc", never written by an executor/,
    );
  });

  it("two executors of one superstep reading one extract get the same one, made once", async () => {
    let called = 0;
    const seen: Record<string, unknown> = {};
    const wf = defineWorkflow({
      name: "w",
      version: 1,
      state: {
        doc: fact(z.string()),
        head: extract(z.string(), {
          from: "doc",
          run: (d: string) => {
            called++;
            return d.slice(0, 5);
          },
        }),
      },
      start: "load",
      executors: {
        load: loader({
          owns: ["doc"],
          run(ctx) {
            ctx.fact("doc", "Terms and conditions", { source: "dms://d/1", sourceVersion: "7" });
            return "loaded";
          },
        }),
        a: code({ reads: ["head"], run: (ctx) => void (seen.a = ctx.state.head) }),
        b: code({ reads: ["head"], run: (ctx) => void (seen.b = ctx.state.head) }),
      },
      edges: [edge("load", ["a", "b"])],
    });
    const s = await openStore();
    const result = await new Engine(wf, s).run();
    assert.equal(result.status, "completed", result.error?.message);
    assert.equal(called, 1);
    assert.equal((seen.a as Extract).value, "Terms");
    assert.equal(seen.a, seen.b);
    assert.deepEqual((extractEvents(s, result.runId)[0]!.data as { readers: string[] }).readers, ["a", "b"]);
  });

  it("an executor reading an extract whose fact is not loaded yet sees nothing, and nothing is extracted", async () => {
    let called = 0;
    let seen: unknown = "not run";
    const wf = defineWorkflow({
      name: "w",
      version: 1,
      state: {
        doc: fact(z.string()),
        summary: extract(z.string(), {
          from: "doc",
          run: (d: string) => {
            called++;
            return d;
          },
        }),
      },
      start: "early",
      executors: { early: code({ reads: ["summary"], run: (ctx) => void (seen = ctx.state.summary) }) },
      edges: [],
    });
    const s = await openStore();
    assert.equal((await new Engine(wf, s).run()).status, "completed");
    assert.equal(seen, undefined);
    assert.equal(called, 0);
  });
});

describe("extracts: build-time checks", () => {
  function problemsOf(spec: Partial<WorkflowSpec>): { code: string; message: string; key?: string; executor?: string }[] {
    try {
      defineWorkflow({
        name: "w",
        version: 1,
        start: "load",
        executors: { load: loader({ owns: ["doc"], run: () => undefined }) },
        edges: [],
        state: {},
        ...spec,
      });
    } catch (e) {
      assert.ok(e instanceof WorkflowDefinitionError, String(e));
      return e.problems;
    }
    return assert.fail("defineWorkflow accepted an invalid workflow");
  }
  const take = (from: string) => extract(z.string(), { from, run: (d: string) => d });

  it("refuses an extract taken from an unknown key, from workflow state or from another extract", () => {
    const problems = problemsOf({
      state: { doc: fact(z.string()), notes: z.string(), a: take("nowhere"), b: take("notes"), c: take("doc"), d: take("c") },
    });
    assert.deepEqual(
      problems.map((p) => [p.code, p.key, p.message]),
      [
        ["UNKNOWN_KEY", "a", 'extract "a" is taken from unknown state key "nowhere"; name the fact key holding the document'],
        [
          "EXTRACT_SOURCE_NOT_FACT",
          "b",
          'extract "b" is taken from "notes", which is workflow state, not a fact: an extract needs a source id and version to be checked against',
        ],
        [
          "EXTRACT_SOURCE_NOT_FACT",
          "d",
          'extract "d" is taken from "c", which is an extract, not a fact: an extract needs a source id and version to be checked against',
        ],
      ],
    );
  });

  it("refuses an extract whose source is not a key's name, even a list holding the name of a fact", () => {
    // kills workflow.ts:268 ConditionalExpression (`typeof decl.from !== "string"` as false): ["doc"] indexes state as "doc"
    const problems = problemsOf({
      state: { doc: fact(z.string()), terms: extract(z.string(), { from: ["doc"] as never, run: (d: string) => d }) },
    });
    assert.deepEqual(
      problems.map((p) => [p.code, p.key, p.message]),
      [["UNKNOWN_KEY", "terms", 'extract "terms" is taken from unknown state key ["doc"]; name the fact key holding the document']],
    );
  });

  it("refuses an executor owning an extract key, and an extract without a run function", () => {
    const problems = problemsOf({
      state: { doc: fact(z.string()), terms: take("doc"), broken: { ...take("doc"), run: undefined as never } },
      executors: { load: loader({ owns: ["doc", "terms"], run: () => undefined }) },
    });
    assert.deepEqual(
      problems.map((p) => [p.code, p.executor, p.key]),
      [
        ["INVALID_WORKFLOW", undefined, "broken"],
        ["EXTRACT_OWNED", "load", "terms"],
      ],
    );
    assert.equal(problems[0]!.message, 'extract "broken" has no run(document, source) function');
    assert.equal(
      problems[1]!.message,
      'executor "load" owns extract key "terms": the engine makes extracts from their fact ("doc"), no executor writes them',
    );
  });

  it("describes extract keys in the graph with the fact they are taken from, without an owner", () => {
    const wf = defineWorkflow({
      name: "w",
      version: 1,
      start: "load",
      state: { doc: fact(z.string()), terms: take("doc") },
      executors: { load: loader({ owns: ["doc"], run: () => undefined }) },
      edges: [],
    });
    assert.deepEqual(wf.graph.keys, [
      { key: "doc", fact: true, owner: "load" },
      { key: "terms", fact: false, owner: undefined, extractOf: "doc" },
    ]);
    assert.deepEqual(Object.keys(wf.extracts), ["terms"]);
  });
});

describe("extracts: cited in proposals", () => {
  const terms: Extract = {
    value: { noticeDays: 30, prices: {} },
    from: "contract",
    source: SOURCE,
    sourceVersion: "v3",
    sourceHash: "sha256:00",
    extractedAt: "2026-01-01T00:00:00.000Z",
  };
  const answer = (facts: string[]) => JSON.stringify({ action: "pay", reason: "as agreed", facts });

  it("accepts a proposal citing an extract the step was given, and refuses one citing the document it was not given", () => {
    const state = { terms: terms as unknown as Json };
    assert.deepEqual(checkProposal({ proposal: Proposal }, answer(["terms"]), state), {
      proposal: { action: "pay", reason: "as agreed", facts: ["terms"] },
    });
    assert.deepEqual(checkProposal({ proposal: Proposal }, answer(["terms", "contract"]), state), {
      rejection: { code: "UNKNOWN_FACT", message: 'proposal cites "contract", not among the facts it was given (terms)' },
    });
  });

  it("is cited as the extract of its document's source at the version it was taken from", () => {
    assert.deepEqual(extractProvenance(terms), {
      source: "extract of erp://contracts/C-7@v3",
      sourceVersion: "v3",
      readAt: "2026-01-01T00:00:00.000Z",
    });
  });
});
