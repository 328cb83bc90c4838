import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import path from "node:path";
import { mkdtempSync } from "node:fs";
import os from "node:os";
import { startErp, type ErpServer } from "../../../examples/erp/server";
import { invoiceSeed } from "../../../examples/invoice/erpData";
import { supplierSeed } from "../../../examples/supplier/erpSeed";
import { openCaseFile } from "../../../src/casefile/index";
import { formatInspection, inspectCaseFile } from "../../../src/cli/inspect";
import { resolveStep } from "../../../src/cli/stepArg";
import { sniffEvalFormat } from "../../../src/cli/evalCommands";
import { RunControl } from "../../../src/engine/control";
import { isCasefileError } from "../../../src/engine/errors";
import type { EventRecord } from "../../../src/engine/records";
import { InspectOutputSchema, type InspectOutput } from "../../../src/protocol/inspect";
import { runSession } from "../../../src/runner/session";

/**
 * `casefile inspect` on case files the real example workflows wrote (the invoice workflow with the
 * scripted model, the supplier workflow's effects against the ERP stand-in), reopened from disk:
 * the JSON parses with the documented schema, and the text says what the JSON holds.
 */

const root = path.resolve(__dirname, "../../..");
const invoiceWorkflow = path.join(root, "examples", "invoice", "workflow.ts");
const supplierWorkflow = path.join(root, "examples", "supplier", "workflow.ts");

const address0 = (record: unknown) => (record as { address: string }).address;

async function inspect(file: string): Promise<{ json: InspectOutput; text: string }> {
  const store = await openCaseFile(file, { readOnly: true });
  try {
    const json = inspectCaseFile(store, file);
    // What a script reads back after JSON.stringify parses with the schema, unchanged.
    const printed = JSON.parse(JSON.stringify(json)) as unknown;
    assert.deepEqual(InspectOutputSchema.parse(printed), printed);
    return { json, text: formatInspection(file, json.runs) };
  } finally {
    store.close();
  }
}

describe("inspect: the invoice example, escalated then answered by a person", function () {
  this.timeout(60_000);
  let dir: string;
  let erp: ErpServer;
  let file: string;
  const env = () => ({ ...process.env, ERP_URL: erp.url });

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "casefile-inspect-"));
    erp = await startErp({ dataDir: path.join(dir, "erp"), seed: invoiceSeed });
    file = path.join(dir, "INV-1001.casefile");
    const ran = await runSession(
      { kind: "run", workflowPath: invoiceWorkflow, caseFile: file, input: { invoiceId: "INV-1001", erpUrl: erp.url } },
      { env: env() },
    );
    assert.equal(ran.status, "waiting");
  });
  after(async () => {
    await erp.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("shows the agent call with its --step id, context hash, tokens and whole proposal, the verdict with its rules, and the waiting request", async () => {
    const { json, text } = await inspect(file);
    assert.equal(json.v, 1);
    const [run] = json.runs;
    const [call] = run!.agentCalls;
    assert.equal(call!.id, `${run!.id}:3:propose`);
    assert.equal(call!.step, "3:propose");
    assert.equal(call!.callIndex, 0);
    assert.equal(call!.model, "gpt-4o-mini");
    assert.match(call!.hash, /^sha256:[0-9a-f]{64}$/);
    assert.ok(call!.tokens!.count > 0, "expected: call!.tokens!.count > 0");
    assert.deepEqual([call!.tokens!.soft, call!.tokens!.hard], [1500, 4000]);
    const proposal = call!.proposal as { action: string; reason: string; facts: string[] };
    assert.equal(proposal.action, "approve_variance");
    assert.match(proposal.reason, /unit prices above the agreement's price schedule/);
    assert.deepEqual(proposal.facts, ["invoice", "po", "priceTerms"]);

    const [verdict] = run!.verdicts;
    assert.deepEqual(verdict!.proposal, call!.proposal, "the verdict keeps the proposal whole");
    assert.deepEqual(verdict!.citedFacts, ["invoice", "po", "priceTerms"]);
    assert.equal(verdict!.agentCallId, call!.id);
    assert.ok(
      verdict!.rules.some((r) => r.name === "withinTolerance" && !r.ok),
      `no failed withinTolerance rule among ${JSON.stringify(verdict!.rules)}`,
    );

    const [request] = run!.requests;
    assert.equal(request!.status, "waiting");
    assert.equal(request!.prompt.title, "Review invoice INV-1001: variance 9%");
    assert.deepEqual(request!.prompt.options, ["approve", "reject"]);
    assert.match(request!.prompt.detail!, /variance 9% exceeds/);
    assert.deepEqual(run!.outcome.decidedBy, null);
    assert.equal(run!.outcome.person!.request, request!.id);

    assert.match(text, new RegExp(`\n    ${call!.id}  \\(3:propose\\)  scripted via scripted, model gpt-4o-mini, call 0\n`));
    assert.match(text, new RegExp(`context ${call!.hash}  2 message\\(s\\), ${call!.tokens!.count} tokens \\(soft 1500, hard 4000, `));
    assert.match(text, /proposed "approve_variance"\n\s+reason: The invoice lines match/);
    assert.match(text, /cited facts: invoice, po, priceTerms/);
    assert.match(text, /rule withinTolerance: FAILED: variance 9% exceeds the 5% tolerance/);
    assert.match(text, /"Review invoice INV-1001: variance 9%" \[approve \| reject\]\n\s+detail: withinTolerance/);
    assert.match(
      text,
      /outcome: WAITING: the rules escalated "approve_variance" at superstep 4 \(decide\); waiting for a person on request /,
    );
  });

  it("after a person approves, the outcome is the person's decision, and the answer, who gave it and when are shown", async () => {
    const { json: before } = await inspect(file);
    const requestId = before.runs[0]!.waiting[0]!.id;
    const answered = await runSession(
      { kind: "respond", caseFile: file, requestId, answer: { decision: "approve", comment: "agreed by phone" } },
      { env: env() },
    );
    assert.equal(answered.status, "completed");
    const { json, text } = await inspect(file);
    const run = json.runs[0]!;
    assert.equal(run.outcome.decidedBy, "person");
    assert.equal(run.outcome.person!.decision, "approve");
    assert.equal(run.outcome.verdict!.verdict, "escalated", "the escalation is kept as history");
    const request = run.requests[0]!;
    assert.equal(request.status, "answered");
    assert.deepEqual(request.answer, { decision: "approve", comment: "agreed by phone" });
    assert.equal(request.answeredBy, "person");
    assert.equal(request.answeredSuperstep, 6);
    assert.ok(request.answeredAt, "expected: request.answeredAt");
    assert.match(
      text,
      new RegExp(
        `outcome: COMPLETED: the rules escalated "approve_variance" at superstep 4 \\(decide\\); then a person decided "approve" on request ${requestId} at superstep 6\n`,
      ),
    );
    assert.match(
      text,
      /answered by a person \(no name recorded\) at \S+ \(superstep 6\): \{"decision":"approve","comment":"agreed by phone"\}/,
    );
  });

  it("--step takes the printed id, and SUPERSTEP:EXECUTOR within a run; an unknown or ambiguous one lists the ids", async () => {
    const { json } = await inspect(file);
    const [run] = json.runs;
    const id = run!.agentCalls[0]!.id;
    const store = await openCaseFile(file, { readOnly: true });
    try {
      assert.equal(resolveStep(store, file, id, undefined).id, id);
      assert.equal(resolveStep(store, file, "3:propose", run!.id).id, id);
      assert.equal(resolveStep(store, file, "3:propose", undefined).id, id, "one run has the step: no --run needed");
      const refused = (step: string, runId: string | undefined, pattern: RegExp) =>
        assert.throws(
          () => resolveStep(store, file, step, runId),
          (e: unknown) =>
            isCasefileError(e) && ["USAGE", "UNKNOWN_RUN"].includes(e.code) && pattern.test(e.message) && !e.message.includes("\n"),
        );
      refused("4:propose", run!.id, new RegExp(`no agent step "4:propose" in run ${run!.id} in .*; agent steps: ${id}`));
      refused("3:propose", "run-nope", /no run "run-nope" in .*; runs: run-/);
    } finally {
      store.close();
    }
  });
});

describe("inspect: room for what the store reports beside the runs", () => {
  it("journal records not yet compacted and damaged rows pass the schema and are said first in the text", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "casefile-inspect-extra-"));
    try {
      const file = path.join(dir, "empty.casefile");
      const created = await openCaseFile(file, { create: true });
      created.close();
      const store = await openCaseFile(file, { readOnly: true });
      try {
        const plain = inspectCaseFile(store, file);
        assert.deepEqual([plain.journal, plain.damaged, plain.runs], [undefined, undefined, []]);
        const extra = {
          journal: { uncompactedSupersteps: 3, uncompactedRecords: 3 },
          damaged: [{ table: "state_values", row: { run: "run-1", key: "decision", version: 2 }, problem: "data is not JSON" }],
        };
        const out = inspectCaseFile(store, file, undefined, extra);
        assert.deepEqual([out.journal, out.damaged], [extra.journal, extra.damaged]);
        const text = formatInspection(file, out.runs, out).split("\n");
        assert.deepEqual(text, [
          "damaged records (1): these rows cannot be read, or name rows that are not stored",
          '  state_values run="run-1" key="decision" version=2: data is not JSON',
          "",
          `case file ${file}: 0 run(s)`,
          `3 supersteps are in the journal, not yet compacted: \`casefile compact ${file}\` folds them into the database (a run still writing the file does so when it ends)`,
        ]);
      } finally {
        store.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("inspect: effects of the supplier example, with the live record changed before the first effect", function () {
  this.timeout(60_000);
  let dir: string;
  let erp: ErpServer;

  beforeEach(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "casefile-inspect-supplier-"));
    erp = await startErp({ dataDir: path.join(dir, "erp"), seed: supplierSeed(3) });
  });
  afterEach(async () => {
    await erp.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Runs the case, pausing before the first effect to change the application in the ERP, then going on. */
  async function runWithChange(app: string, changes: Record<string, unknown>): Promise<string> {
    const file = path.join(dir, `${app}.casefile`);
    const control = new RunControl();
    let changing: Promise<void> | undefined;
    const onEvent = (e: EventRecord) => {
      const data = e.data as { pending?: string[]; next?: string[] };
      if (e.type === "checkpoint" && data.pending?.includes("createSupplier")) control.pause();
      if (e.type === "run_paused") {
        changing = (async () => {
          const current = erp.snapshot().collections.applications![app]!.data;
          const res = await fetch(`${erp.url}/admin/applications/${app}`, {
            method: "POST",
            body: JSON.stringify({ ...current, ...changes }),
          });
          assert.equal(res.status, 200);
          control.continue();
        })();
      }
    };
    await runSession(
      { kind: "run", workflowPath: supplierWorkflow, caseFile: file, input: { applicationId: app, erpUrl: erp.url } },
      { env: { ...process.env, ERP_URL: erp.url }, control, onEvent },
    );
    assert.ok(changing, "the run paused before its first effect");
    await changing;
    return file;
  }

  it("a change in a field the effect does not rely on: the intent is done, with the old and new value, the reference and a warning", async () => {
    const file = await runWithChange("APP-0002", { address: "Kaiserkai 1, 20457 Hamburg" });
    const { json, text } = await inspect(file);
    const run = json.runs[0]!;
    assert.equal(run.status, "completed");
    const created = run.intents.find((i) => i.executor === "createSupplier")!;
    assert.equal(created.status, "done");
    assert.equal(created.key, `${run.id}:createSupplier:5`);
    // The payload is the plan's: made from the application as the loader read it.
    assert.equal((created.payload as { address: string }).address, address0(created.basis!.record));
    assert.deepEqual(Object.keys(created.reliesOn as object).sort(), ["country", "legalName", "taxNumber"]);
    assert.deepEqual(created.reference, { id: "SUP-1001", version: '"v1"' });
    assert.equal(created.expectedVersion, '"v2"');
    const drift = created.drift!;
    assert.equal(drift.kind, "unrelated_change");
    assert.deepEqual(drift.versions, { before: '"v1"', after: '"v2"' });
    const [address] = drift.fields;
    assert.equal(drift.fields.length, 1);
    assert.equal(address!.path, "address");
    assert.equal(address!.after, "Kaiserkai 1, 20457 Hamburg");
    assert.notEqual(address!.before, address!.after);
    assert.equal(address!.reliedOn, false);
    assert.deepEqual(
      created.history.map((h) => h.status),
      ["open", "done"],
    );
    assert.equal(run.intents.length, 3);
    assert.ok(
      run.warnings.some((w) => w.executor === "createSupplier" && /in fields it does not rely on; acting/.test(w.message)),
      `no createSupplier warning about fields it does not rely on among ${JSON.stringify(run.warnings)}`,
    );

    assert.match(text, new RegExp(`\n    ${created.key}  create supplier on erp:suppliers  DONE  \\(createSupplier, superstep 5\\)\n`));
    assert.match(text, /relies on: \{"legalName":/);
    assert.match(text, /reference: \{"id":"SUP-1001","version":"\\"v1\\""\}/);
    assert.match(text, /drift \(unrelated_change, \S+\): version "v1" -> "v2"\n\s+address: "[^"]+" -> "Kaiserkai 1, 20457 Hamburg"\n/);
    assert.match(text, /warnings:\n\s+superstep 5 \(createSupplier\): effect "createSupplier" .* in fields it does not rely on; acting/);
  });

  it("a change in a field it relies on: the intent needs replanning, with the old and new tax number, and the outcome says so", async () => {
    const file = await runWithChange("APP-0001", { taxNumber: "DE000000000" });
    const { json, text } = await inspect(file);
    const run = json.runs[0]!;
    assert.equal(run.status, "needs_replanning");
    const [intent] = run.intents;
    assert.equal(intent!.status, "needs_replanning");
    const tax = intent!.drift!.fields.find((f) => f.path === "taxNumber")!;
    assert.equal(tax.after, "DE000000000");
    assert.notEqual(tax.before, "DE000000000");
    assert.equal(tax.reliedOn, true);
    assert.equal(intent!.drift!.kind, "relied_on_change");
    assert.equal(intent!.reference, undefined);
    assert.match(
      run.outcome.summary,
      new RegExp(
        `^NEEDS_REPLANNING: the rules accepted "onboard" .*; intent ${intent!.key} needs replanning: taxNumber "DE\\d+" -> "DE000000000"$`,
      ),
    );
    assert.match(text, /NEEDS_REPLANNING\s+\(createSupplier, superstep 5\)/);
    assert.match(text, new RegExp(`taxNumber: ${JSON.stringify(tax.before)} -> "DE000000000"  \\(relied on\\)`));
  });
});

describe("eval tells its file's format from the content", () => {
  it("our JSON, promptfoo YAML or JSON, and OpenAI evals JSONL, whatever the file is called", () => {
    assert.equal(sniffEvalFormat('{\n  "v": 1,\n  "id": "x"\n}\n'), "json");
    assert.equal(sniffEvalFormat("# comment\n- description: x\n  vars:\n    messages: '[]'\n"), "promptfoo");
    assert.equal(sniffEvalFormat('[{"vars":{"messages":"[]"}}]'), "promptfoo");
    assert.equal(sniffEvalFormat('{"input":[],"ideal":"{}"}\n'), "openai-jsonl");
    assert.equal(sniffEvalFormat('{"input":[],"ideal":"{}"}\n{"input":[],"ideal":"{}"}\n'), "openai-jsonl");
  });

  it("the hosted OpenAI Evals API's item line and its eval config are OpenAI files too, not our JSON", () => {
    assert.equal(sniffEvalFormat('{"item":{"case_id":"x","input":[]}}\n'), "openai-jsonl", "one item line");
    assert.equal(
      sniffEvalFormat('{\n  "eval": {"data_source_config": {"type": "custom"}},\n  "run": {}\n}\n'),
      "openai-jsonl",
      "the config",
    );
  });
});
