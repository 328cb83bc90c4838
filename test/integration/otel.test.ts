import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { startErp, type ErpServer } from "../../examples/erp/server";
import { invoiceSeed } from "../../examples/invoice/erpData";
import { supplierSeed } from "../../examples/supplier/erpSeed";
import { openCaseFile } from "../../src/casefile/index";
import type { Json } from "../../src/engine/records";
import { startRunner } from "../../src/runner/client";
import { createDatabase } from "../helpers/pgCluster";
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from "../helpers/otlpReceiver";
import { root, runCli, runnerPath, tempDir } from "./helpers";

/**
 * Runs as OpenTelemetry traces, end to end: the invoice example run by the spawned CLI with
 * --otel (and by the editor's runner child with the otel setting) and a case file exported with
 * `casefile export-otel`, all received by a real OTLP decoder on loopback (@elastic/mockotlpserver,
 * the official protos). Asserts what a user sees in Jaeger or Phoenix: span names, parents,
 * GenAI attributes, the verdict, and no fact value unless content is asked for.
 */

const workflow = path.join(root, "examples/invoice/workflow.ts");

/** The spans of one trace, by name (a name used twice is the first), and each one's parent's name. */
function tree(spans: ReceivedSpan[]): { byName: (name: string) => ReceivedSpan; parentOf: (name: string) => string | undefined } {
  const byId = new Map(spans.map((s) => [s.spanId, s]));
  const byName = (name: string): ReceivedSpan => {
    const s = spans.find((x) => x.name === name);
    assert.ok(s, `a span "${name}" among ${spans.map((x) => x.name).join(", ")}`);
    return s;
  };
  return { byName, parentOf: (name) => byId.get(byName(name).parentSpanId ?? "")?.name };
}

/** A trace without its ids: each span's name, parent's name, kind, attributes and events, sorted. */
function shape(spans: ReceivedSpan[]): unknown[] {
  const byId = new Map(spans.map((s) => [s.spanId, s.name]));
  return spans
    .map((s) => ({
      name: s.name,
      parent: byId.get(s.parentSpanId ?? "") ?? null,
      kind: s.kind,
      start: s.startTimeUnixNano,
      end: s.endTimeUnixNano,
      attributes: s.attributes,
      events: (s.events ?? []).map((e) => ({ name: e.name, at: e.timeUnixNano, attributes: e.attributes })),
    }))
    .sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
}

/** Every string and number of a value (a fact's), for looking for it in a trace. */
function leaves(v: Json | undefined, out: string[] = []): string[] {
  if (typeof v === "string" && v.length >= 4) out.push(v);
  else if (typeof v === "number" && !Number.isInteger(v)) out.push(String(v));
  else if (Array.isArray(v)) for (const x of v) leaves(x, out);
  else if (v && typeof v === "object") for (const x of Object.values(v)) leaves(x, out);
  return out;
}

async function until(cond: () => boolean, what: string, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("runs as OpenTelemetry traces (invoice example, real OTLP decoder)", function () {
  this.timeout(120_000);
  let erp: ErpServer;
  let receiver: OtlpReceiver;
  let dir: string;
  let env: NodeJS.ProcessEnv;
  const caseFile = (): string => path.join(dir, "inv-1001.casefile");
  /** The spans received since `from`, which must be one trace. */
  const traceSince = (from: number): ReceivedSpan[] => {
    const spans = receiver.spans.slice(from);
    assert.equal(new Set(spans.map((s) => s.traceId)).size, 1, `one trace: ${spans.map((s) => s.traceId).join(", ")}`);
    return spans;
  };

  before(async () => {
    dir = tempDir("casefile-otel-");
    erp = await startErp({ dataDir: path.join(dir, "erp"), seed: invoiceSeed });
    receiver = await startOtlpReceiver();
    env = { ERP_URL: erp.url, OTEL_EXPORTER_OTLP_ENDPOINT: receiver.baseUrl };
  });
  after(async () => {
    await receiver.close();
    await erp.close();
  });

  let liveShape: unknown[];

  it("casefile run --otel sends the run as a trace: workflow > supersteps > steps, the model call as a GenAI chat span, the verdict as an event", async () => {
    const from = receiver.spans.length;
    const r = await runCli(["run", workflow, "--case-file", caseFile(), "--input", '{"invoiceId":"INV-1001"}', "--otel"], env);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /trace: run run-\w+ sent to http:\/\/127\.0\.0\.1:\d+\/v1\/traces \(12 spans, trace [0-9a-f]{32}\)/);
    await until(() => receiver.spans.length >= from + 12, "12 spans");
    const spans = traceSince(from);
    const { byName, parentOf } = tree(spans);
    assert.equal(byName("workflow invoice-variance").parentSpanId, undefined, "the workflow span is the trace's root");
    for (const n of [1, 2, 3, 4, 5]) assert.equal(parentOf(`superstep ${n}`), "workflow invoice-variance", `superstep ${n} under the run`);
    const steps: [string, number][] = [
      ["loader load", 1],
      ["code variance", 2],
      ["agent propose", 3],
      ["commit decide", 4],
      ["request review", 5],
    ];
    for (const [name, n] of steps) assert.equal(parentOf(name), `superstep ${n}`, `${name} under superstep ${n}`);
    assert.equal(parentOf("chat gpt-4o-mini"), "agent propose", "the model call under the agent step");

    const chat = byName("chat gpt-4o-mini");
    assert.equal(chat.kind, "SPAN_KIND_CLIENT", "a model call is a client span");
    assert.deepEqual(
      [
        chat.attributes["gen_ai.operation.name"],
        chat.attributes["gen_ai.provider.name"],
        chat.attributes["gen_ai.request.model"],
        chat.attributes["gen_ai.usage.input_tokens"],
        chat.attributes["gen_ai.usage.output_tokens"],
        chat.attributes["casefile.proposal.action"],
      ],
      ["chat", "scripted", "gpt-4o-mini", 310, 52, "approve_variance"],
      "the GenAI attributes of the call (the fixture's usage)",
    );
    const verdict = byName("commit decide").events?.find((e) => e.name === "verdict");
    assert.deepEqual(
      [verdict?.attributes?.["casefile.verdict"], verdict?.attributes?.["casefile.rules.failed"]],
      ["escalated", ["withinTolerance"]],
      "the verdict and the rule that failed, as an event of the commit step",
    );
    assert.equal(byName("workflow invoice-variance").attributes["casefile.run.status"], "waiting", "the run waits for a person");
    assert.equal(chat.resource["service.name"], "casefile", "service.name");

    // The spans carry the times the case file recorded.
    const store = await openCaseFile(caseFile(), { readOnly: true });
    try {
      const load = store.listSteps(store.listRuns()[0]!.id).find((s) => s.executor === "load")!;
      const nanos = (iso: string): string => (BigInt(Date.parse(iso)) * 1_000_000n).toString();
      assert.deepEqual(
        [byName("loader load").startTimeUnixNano, byName("loader load").endTimeUnixNano],
        [nanos(load.startedAt), nanos(load.endedAt)],
        "the loader's span starts and ends when its step record says",
      );
    } finally {
      store.close();
    }
    liveShape = shape(spans);
  });

  it("sends no fact value, input, message or reason without --otel-content", async () => {
    const store = await openCaseFile(caseFile(), { readOnly: true });
    let secrets: string[];
    try {
      const run = store.listRuns()[0]!;
      const facts = store.readValues(store.latestCheckpoint(run.id)!.keys);
      secrets = [...new Set(["invoice", "po", "contract"].flatMap((k) => leaves(facts[k])))];
      secrets.push("INV-1001", (store.listAgentCalls(run.id)[0]!.proposal as { reason: string }).reason);
    } finally {
      store.close();
    }
    assert.ok(secrets.length > 10, `the facts have values to look for: ${secrets.join(" | ")}`);
    const decoded = JSON.stringify(receiver.raw);
    for (const s of secrets) assert.ok(!decoded.includes(s), `"${s}" (a fact value, the input or the reason) is not in the trace`);
  });

  it("casefile export-otel sends the same tree from the case file", async () => {
    const from = receiver.spans.length;
    const r = await runCli(["export-otel", caseFile()], env);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^run run-\w+: 12 spans sent to http:\/\/127\.0\.0\.1:\d+\/v1\/traces \(trace [0-9a-f]{32}\)\n$/);
    await until(() => receiver.spans.length >= from + 12, "12 spans");
    assert.deepEqual(shape(traceSince(from)), liveShape, "the exported trace is the live one: names, parents, times, attributes, events");
  });

  it("respond --otel-content sends the whole run again, now with its messages and the answer, under OTEL_SERVICE_NAME", async () => {
    const store = await openCaseFile(caseFile(), { readOnly: true });
    const requestId = store.latestCheckpoint(store.listRuns()[0]!.id)!.waiting[0]!.id;
    store.close();
    const from = receiver.spans.length;
    const r = await runCli(["respond", caseFile(), "--request", requestId, "--answer", '{"decision":"approve"}', "--otel-content"], {
      ...env,
      OTEL_SERVICE_NAME: "payables-dev",
    });
    assert.equal(r.code, 0, r.stderr);
    await until(() => receiver.spans.some((s, i) => i >= from && s.name === "workflow invoice-variance"), "the run's span");
    const { byName } = tree(traceSince(from));
    const root = byName("workflow invoice-variance");
    assert.equal(root.attributes["casefile.run.status"], "completed", "the run is completed now");
    assert.equal(root.resource["service.name"], "payables-dev", "OTEL_SERVICE_NAME names the service");
    const answered = byName("superstep 6").events?.find((e) => e.name === "request_answered");
    assert.equal(answered?.attributes?.["casefile.request.answer"], '{"decision":"approve"}', "the answer, with content on");
    const messages = JSON.parse(String(byName("chat gpt-4o-mini").attributes["gen_ai.input.messages"])) as { role: string }[];
    assert.deepEqual(
      messages.map((m) => m.role),
      ["system", "user"],
      "the context's messages are in the chat span with content on",
    );
    assert.match(String(byName("chat gpt-4o-mini").attributes["gen_ai.input.messages"]), /INV-1001/, "with the facts they show");
  });

  it("the editor's runner child sends the trace when the start message carries the otel setting", async () => {
    const from = receiver.spans.length;
    const handle = startRunner({
      runnerPath,
      command: { kind: "run", workflowPath: workflow, caseFile: path.join(dir, "inv-1002.casefile"), input: { invoiceId: "INV-1002" } },
      otel: { endpoint: receiver.baseUrl, includeContent: false },
      // Not the endpoint variable: only the setting turns tracing on in the runner.
      env: { ...process.env, ERP_URL: erp.url },
      cwd: dir,
    });
    const outcome = await handle.finished;
    assert.equal(outcome.done?.status, "completed", JSON.stringify(outcome));
    await until(() => receiver.spans.some((s, i) => i >= from && s.name === "workflow invoice-variance"), "the run's span");
    const { byName, parentOf } = tree(traceSince(from));
    assert.equal(byName("workflow invoice-variance").attributes["casefile.run.status"], "completed", "the run's status");
    assert.equal(parentOf("chat gpt-4o-mini"), "agent propose", "the model call under its step");
  });

  it("a failed run: its span, its superstep's and the failed step's have status ERROR with the error", async () => {
    const from = receiver.spans.length;
    const file = path.join(dir, "nope.casefile");
    const r = await runCli(["run", workflow, "--case-file", file, "--input", '{"invoiceId":"INV-NOPE"}', "--otel"], env);
    assert.equal(r.code, 1, r.stderr);
    await until(() => receiver.spans.some((s, i) => i >= from && s.name.startsWith("workflow ")), "the run's span");
    const { byName } = tree(traceSince(from));
    const store = await openCaseFile(file, { readOnly: true });
    const recorded = store.listRuns()[0]!.error!;
    store.close();
    for (const name of ["workflow invoice-variance", "superstep 1", "loader load"]) {
      assert.equal(byName(name).status?.code, "STATUS_CODE_ERROR", `${name} has status ERROR`);
    }
    assert.equal(byName("workflow invoice-variance").status?.message, recorded.message, "the run's error message, as recorded");
    const load = byName("loader load");
    assert.equal(load.attributes["error.type"], recorded.code, "error.type is the error's code");
    assert.ok(
      load.events?.some((e) => e.name === "exception" && e.attributes?.["exception.type"] === recorded.code),
      `an exception event on the failed step: ${JSON.stringify(load.events)}`,
    );
  });

  it("an effect's span carries its intent key, action and outcome (the supplier example's three effects)", async () => {
    const supplierErp = await startErp({ dataDir: path.join(dir, "erp-supplier"), seed: supplierSeed(1) });
    try {
      const from = receiver.spans.length;
      const file = path.join(dir, "APP-0000.casefile");
      const supplier = path.join(root, "examples/supplier/workflow.ts");
      const r = await runCli(["run", supplier, "--case-file", file, "--input", '{"applicationId":"APP-0000"}', "--otel"], {
        ...env,
        ERP_URL: supplierErp.url,
      });
      assert.equal(r.code, 0, r.stderr);
      await until(() => receiver.spans.some((s, i) => i >= from && s.name.startsWith("workflow ")), "the run's span");
      const effects = traceSince(from).filter((s) => s.attributes["casefile.step.kind"] === "effect");
      const store = await openCaseFile(file, { readOnly: true });
      const intents = store.listIntents();
      store.close();
      assert.deepEqual(
        effects
          .map((s) => [
            s.name,
            s.attributes["casefile.intent.key"],
            s.attributes["casefile.intent.action"],
            s.attributes["casefile.intent.status"],
          ])
          .sort(),
        intents.map((i) => [`effect ${i.executor}`, i.key ?? i.id, i.action, "done"]).sort(),
        "one span per effect, with the key, action and outcome its intent recorded",
      );
      assert.equal(effects.length, 3, "three effects");
    } finally {
      await supplierErp.close();
    }
  });

  it("a case of a Postgres store: run --store --case --otel, and export-otel --store --case sends the same tree", async () => {
    const url = createDatabase("otel");
    let from = receiver.spans.length;
    const r = await runCli(["run", workflow, "--store", url, "--case", "inv-1001", "--input", '{"invoiceId":"INV-1001"}', "--otel"], env);
    assert.equal(r.code, 0, r.stderr);
    await until(() => receiver.spans.length >= from + 12, "12 spans");
    const live = traceSince(from);
    assert.equal(tree(live).parentOf("chat gpt-4o-mini"), "agent propose", "the same tree as from a case file");
    from = receiver.spans.length;
    const exported = await runCli(["export-otel", "--store", url, "--case", "inv-1001"], env);
    assert.equal(exported.code, 0, exported.stderr);
    await until(() => receiver.spans.length >= from + 12, "12 spans");
    assert.deepEqual(shape(traceSince(from)), shape(live), "export-otel from the store sends what the live run sent");
  });

  it("the SDK loads only to send a trace: not for --help, inspect or a run without tracing", async () => {
    // A probe loaded before the CLI names, at exit, the dist/ bundles the process required.
    const probe = path.join(dir, "bundles-probe.cjs");
    writeFileSync(
      probe,
      `process.on("exit", () => process.stderr.write("bundles: " + Object.keys(require.cache).filter((k) => k.includes("/dist/")).map((k) => require("node:path").basename(k)).sort().join(",") + "\\n"));\n`,
    );
    const loaded = async (args: string[], extra: NodeJS.ProcessEnv = {}): Promise<string[]> => {
      const r = await runCli(args, { ...env, ...extra, NODE_OPTIONS: `--require ${probe}` });
      assert.equal(r.code, 0, r.stderr);
      const bundles = /^bundles: (.*)$/m.exec(r.stderr)?.[1]?.split(",") ?? [];
      assert.ok(bundles.includes("cli.js"), `the probe saw the CLI's bundle: ${r.stderr}`);
      return bundles;
    };
    const file = path.join(dir, "untraced.casefile");
    const untraced = ["run", workflow, "--case-file", file, "--input", '{"invoiceId":"INV-1002"}'];
    assert.ok(
      !(await loaded(untraced, { OTEL_EXPORTER_OTLP_ENDPOINT: "" })).includes("otel-export.js"),
      "a run without tracing does not load it",
    );
    assert.ok(!(await loaded(["--help"])).includes("otel-export.js"), "--help does not load the SDK");
    assert.ok(!(await loaded(["inspect", file])).includes("otel-export.js"), "inspect does not load it");
    assert.ok((await loaded(["export-otel", file])).includes("otel-export.js"), "export-otel does");
  });

  it("a receiver that is not there: the run still completes with a warning, export-otel fails in one line", async () => {
    const away = { ...env, OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:1", OTEL_EXPORTER_OTLP_TIMEOUT: "1000" };
    const run = await runCli(
      ["run", workflow, "--case-file", path.join(dir, "away.casefile"), "--input", '{"invoiceId":"INV-1002"}'],
      away,
    );
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /^run run-\w+ completed/m, "the run completed");
    assert.match(run.stderr, /^warning: the trace of run run-\w+ was not sent to http:\/\/127\.0\.0\.1:1\/v1\/traces: .*ECONNREFUSED/m);
    const exported = await runCli(["export-otel", path.join(dir, "away.casefile")], away);
    assert.equal(exported.code, 3, exported.stderr);
    assert.match(
      exported.stderr,
      /^casefile: EXPORT_FAILED: the trace of run run-\w+ was not sent to http:\/\/127\.0\.0\.1:1\/v1\/traces: .*\n$/,
    );
    const unknown = await runCli(["export-otel", caseFile(), "--run", "run-nope"], env);
    assert.equal(unknown.code, 3, unknown.stderr);
    assert.match(unknown.stderr, /^casefile: UNKNOWN_RUN: no run "run-nope" in \S+inv-1001\.casefile\n$/);
  });
});
