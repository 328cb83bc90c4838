import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { MemoryStore, openCaseFile, type SqlJsStore } from "../casefile/index";
import { checkProposal, type AgentMessage } from "../engine/agentStep";
import { runCommit } from "../engine/commitStep";
import { buildModelRequest } from "../engine/contextRequest";
import { CasefileError, describeError, onFile } from "../engine/errors";
import { extractProvenance, isExtractValue } from "../engine/extracts";
import {
  correctExpected,
  evalCaseFromRecords,
  ExpectedOutcomeSchema,
  parseOwnJson,
  parsePromptfooYaml,
  toOpenAIEvalsJsonl,
  toOwnJson,
  toPromptfooYaml,
  type EvalCase,
} from "../engine/evalCase";
import type { AgentSpec, CommitSpec, LoaderContext } from "../engine/executors";
import type { ModelProvider } from "../engine/model";
import { modelFor } from "../engine/modelChoice";
import { createProvider, runModelOf, ScriptedProvider } from "../engine/providers/index";
import { rulesInForce, type RuleInForce } from "../engine/rules";
import type { AgentCallRecord, Fact, Json, RunRecord, Verdict } from "../engine/records";
import type { TaskOutcome } from "../engine/steps";
import type { Workflow } from "../engine/workflow";
import { ExportEvalResultSchema } from "../protocol/exportEval";
import type { ProviderConfig } from "../protocol/runner";
import { loadWorkflow } from "../runner/bundle";
import { jsonOption, parseOptions, providerOption, type Command, type Io } from "./args";
import { resolveStep } from "./stepArg";

/**
 * `casefile export-eval` and `casefile eval`: an agent step of a case file becomes an eval case,
 * and eval cases are run again against a provider and the workflow's current proposal schema and
 * commit rules.
 *
 * An eval case holds the request, facts and answer, but not the workflow file or the non-fact
 * state the commit rules read (e.g. a computed variance). `eval` reads both from the case file
 * the case names in `provenance` (read-only), unless `--workflow` names the file.
 */

const FORMATS = { json: ".eval.json", "openai-jsonl": ".jsonl", promptfoo: ".promptfoo.yaml" } as const;
type Format = keyof typeof FORMATS;

export const exportEval: Command = async (args, io) => {
  const { values, positionals } = parseOptions(
    args,
    {
      step: { type: "string" },
      run: { type: "string" },
      format: { type: "string" },
      out: { type: "string" },
      expect: { type: "string" },
      workflow: { type: "string" },
      json: { type: "boolean" },
    },
    1,
  );
  const caseFile = positionals[0] ? path.resolve(positionals[0]) : undefined;
  if (!caseFile || !values.step) throw new CasefileError("USAGE", "export-eval needs a case file and --step <agent call id>");
  const format = (values.format ?? "json") as Format;
  if (!(format in FORMATS)) throw new CasefileError("USAGE", `--format must be json, openai-jsonl or promptfoo, not "${values.format}"`);
  const change = parseExpect(values.expect);

  const store = await openCaseFile(caseFile, { readOnly: true });
  let evalCase: EvalCase;
  let workflowPath: string;
  try {
    const call = resolveStep(store, caseFile, values.step, values.run);
    const run = store.getRun(call.runId)!;
    workflowPath = workflowFileOf(run, caseFile, values.workflow);
    const { workflow } = await loadWorkflow(workflowPath);
    const agentSpec = agentSpecOf(workflow, call.executor, `agent step "${call.id}"`);
    const { spec: commitSpec } = commitStepAfter(workflow, call.executor, `agent step "${call.id}"`);
    const seen = rulesSeen(store, call);
    if (seen.rulesFrom === "rule table")
      io.err(
        `export-eval: agent call ${call.id} was recorded before its business rules were kept whole; its rules are rebuilt from ${caseFile}'s rule table as of ${call.at} (rulesFrom: "rule table")`,
      );
    evalCase = evalCaseFromRecords({
      caseFile,
      workflow: { name: run.workflow.name, version: run.workflow.version },
      call,
      verdict: store.listVerdicts(call.runId).find((v) => v.agentCallId === call.id),
      facts: factsSeen(store, call, workflow, agentSpec),
      ...seen,
      commitState: commitStateOf(commitSpec, stateAt(store, call.runId, call.superstep)),
    });
  } finally {
    store.close();
  }
  if (change) evalCase = correctExpected(evalCase, change);

  const out = path.resolve(values.out ?? path.join(path.dirname(caseFile), "evals", evalCase.id + FORMATS[format]));
  // Relative to the case's folder: evals kept in a repository beside the workflow move with it.
  evalCase = { ...evalCase, workflow: { ...evalCase.workflow, file: path.relative(path.dirname(out), workflowPath) } };
  const text =
    format === "json" ? toOwnJson(evalCase) : format === "openai-jsonl" ? toOpenAIEvalsJsonl([evalCase]) : toPromptfooYaml([evalCase]);
  writeOut(out, text);
  if (values.json) {
    // For scripts and the extension: what was written where, in the schema they parse it with.
    io.out(JSON.stringify(ExportEvalResultSchema.parse({ v: 1, id: evalCase.id, path: out, format })));
    return 0;
  }
  const e = evalCase.expected;
  io.out(
    `eval case ${evalCase.id}: step "${evalCase.step}", expects ${e.action ?? "no valid proposal"} (${e.verdict})${e.corrected ? ", corrected" : ""}`,
  );
  io.out(out);
  return 0;
};

/** `--expect '{"verdict":"escalated"}'`: the developer's correction, checked field by field. */
function parseExpect(value: string | undefined): Parameters<typeof correctExpected>[1] | undefined {
  const raw = jsonOption(value, "expect");
  if (raw === undefined) return undefined;
  const parsed = ExpectedOutcomeSchema.omit({ corrected: true }).partial().strict().safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new CasefileError(
      "USAGE",
      `--expect is invalid at "${issue.path.join(".") || "(root)"}": ${issue.message} (fields: action, verdict, proposal, note)`,
    );
  }
  return parsed.data as Parameters<typeof correctExpected>[1];
}

function workflowFileOf(run: RunRecord, caseFile: string, override: string | undefined): string {
  if (override) return path.resolve(override);
  if (!run.workflow.path)
    throw new CasefileError("USAGE", `run "${run.id}" in ${caseFile} did not record its workflow file: pass --workflow`, {
      file: caseFile,
    });
  return run.workflow.path;
}

function agentSpecOf(workflow: Workflow, executor: string, what: string): AgentSpec {
  const spec = workflow.executors[executor];
  if (!spec || spec.kind !== "agent") {
    throw new CasefileError(
      "WORKFLOW_MISMATCH",
      `${what} names executor "${executor}", which is ${spec ? `a ${spec.kind} step` : "not defined"} in workflow "${workflow.name}" now`,
      {
        executor,
      },
    );
  }
  return spec;
}

/** The last checkpoint of the call's run at or before `superstep`. */
function stateAt(store: SqlJsStore, runId: string, superstep: number): Record<string, Json> {
  const cp = store
    .listCheckpoints(runId)
    .filter((c) => c.superstep <= superstep)
    .at(-1);
  if (!cp) throw new CasefileError("UNKNOWN_CHECKPOINT", `run "${runId}" has no checkpoint at or before superstep ${superstep}`);
  return store.readValues(store.getCheckpoint(cp.id)!.keys);
}

/**
 * The facts the agent step could see (the fact keys it reads), as they were when it ran, and the
 * extracts it read, cited as "extract of <source>@<version>". An extract made for the step is
 * committed with the step's own superstep, so extracts are read from that checkpoint.
 */
function factsSeen(store: SqlJsStore, call: AgentCallRecord, workflow: Workflow, spec: AgentSpec): Record<string, Fact> {
  const values = stateAt(store, call.runId, call.superstep - 1);
  const after = stateAt(store, call.runId, call.superstep);
  const facts: Record<string, Fact> = {};
  for (const key of new Set([...(spec.reads ?? []), ...(spec.owns ?? [])])) {
    if (workflow.factKeys.has(key) && values[key] !== undefined) facts[key] = values[key] as unknown as Fact;
    const e = after[key];
    if (workflow.extracts[key] && isExtractValue(e) && call.extracts?.some((x) => x.key === key && x.sourceVersion === e.sourceVersion)) {
      facts[key] = { value: e.value, provenance: extractProvenance(e) };
    }
  }
  return facts;
}

/**
 * The business rules the step's context was built with: recorded whole with the call, so a rule
 * edited, added or deleted since changes nothing. A call recorded before that falls back to the
 * case file's rule table as it is now, filtered as of the call's time (a run given a separate rule
 * book saw that book's rules, which such a call does not record).
 */
function rulesSeen(store: SqlJsStore, call: AgentCallRecord): { rules: EvalCase["rules"]; rulesFrom: "agent call" | "rule table" } {
  if (call.rulesInForce) return { rules: call.rulesInForce, rulesFrom: "agent call" };
  return {
    rules: rulesInForce(store.listRules(), call.at).map((r) => ({ id: r.id, statement: r.statement, value: r.value })),
    rulesFrom: "rule table",
  };
}

// ---- eval -------------------------------------------------------------------------------------

interface CaseResult {
  file: string;
  id: string;
  step: string;
  expected: { action: string | null; verdict: Verdict };
  got?: { action: string | null; verdict: Verdict; reason: string };
  /** Set when the case could not be run at all (workflow, provider or case file fault). */
  error?: string;
  notes: string[];
  passed: boolean;
  durationMs: number;
}

export const runEval: Command = async (args, io) => {
  const { values, positionals } = parseOptions(args, {
    provider: { type: "string" },
    junit: { type: "string" },
    workflow: { type: "string" },
  });
  if (positionals.length === 0) throw new CasefileError("USAGE", "eval needs eval case files or a folder of them");
  const provider = providerOption(values.provider, io);
  const cases = positionals.flatMap((p) => caseFilesIn(p, io)).flatMap((file) => loadCases(file).map((c) => ({ file, c })));
  if (cases.length === 0)
    throw new CasefileError("USAGE", `no eval cases (*.json, *.yaml, *.yml in a folder) in ${positionals.join(", ")}`);

  const runner = new CaseRunner(io, provider, values.workflow);
  const results: CaseResult[] = [];
  try {
    for (const { file, c } of cases) results.push(await runner.run(file, c));
  } finally {
    runner.close();
  }

  io.out(formatTable(results));
  const failed = results.filter((r) => !r.passed).length;
  io.out(`${results.length - failed} passed, ${failed} failed`);
  if (values.junit) {
    const file = path.resolve(values.junit);
    writeOut(file, toJUnit(results));
    io.out(`JUnit: ${file}`);
  }
  return failed === 0 ? 0 : 1;
};

/** Writes a file the user named (--out, --junit), making its folder; a refusal is FILE_ERROR naming the path. */
function writeOut(file: string, text: string): void {
  const dir = path.dirname(file);
  onFile("create the folder", dir, () => mkdirSync(dir, { recursive: true }));
  onFile("write", file, () => writeFileSync(file, text));
}

/** A folder gives its eval files (not recursing); a file is taken as given. */
function caseFilesIn(arg: string, io: Io): string[] {
  const abs = path.resolve(arg);
  let isDir: boolean;
  try {
    isDir = statSync(abs).isDirectory();
  } catch {
    throw new CasefileError("USAGE", `eval: ${abs} does not exist`, { file: abs });
  }
  if (!isDir) return [abs];
  const names = onFile("list", abs, () => readdirSync(abs));
  const jsonl = names.filter((f) => f.endsWith(".jsonl"));
  // export-eval writes all three formats into one folder by default; the JSONL copies hold too
  // little to evaluate (see loadCases), so a folder's are skipped, said once.
  if (jsonl.length) io.err(`eval: skipping ${jsonl.length} OpenAI evals JSONL file(s) in ${abs} (messages and ideal only)`);
  return names
    .filter((f) => /\.(json|ya?ml)$/.test(f))
    .sort()
    .map((f) => path.join(abs, f));
}

/**
 * Reads one eval file, whatever its name: the format is told from the content. A JSON object is
 * our eval case; a JSON array, an object with `vars`, or any other YAML is a promptfoo test list;
 * lines that are each a JSON object (or an object with `input` and `ideal`) are OpenAI evals
 * JSONL, refused because it holds too little to evaluate.
 */
export function loadCases(file: string): EvalCase[] {
  const text = onFile("read", file, () => readFileSync(file, "utf8"));
  const format = sniffEvalFormat(text);
  if (format === "openai-jsonl") {
    throw new CasefileError(
      "USAGE",
      `${file}: OpenAI evals JSONL holds only the messages and the ideal proposal, not the facts and verdict casefile eval checks; export with --format json or promptfoo`,
      { file },
    );
  }
  return format === "promptfoo" ? parsePromptfooYaml(text, file) : [parseOwnJson(text, file)];
}

export function sniffEvalFormat(text: string): "json" | "promptfoo" | "openai-jsonl" {
  const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);
  const isJsonlLine = (v: unknown) => isObject(v) && "input" in v && "ideal" in v;
  let whole: unknown;
  try {
    whole = JSON.parse(text);
  } catch {
    const lines = text.split("\n").filter((l) => l.trim() !== "");
    const jsonLines =
      lines.length > 0 &&
      lines.every((l) => {
        try {
          return isObject(JSON.parse(l));
        } catch {
          return false;
        }
      });
    // Not one JSON document: JSON lines, or YAML (a parse error there names the line).
    return jsonLines ? "openai-jsonl" : "promptfoo";
  }
  if (Array.isArray(whole) || (isObject(whole) && "vars" in whole)) return "promptfoo";
  if (isJsonlLine(whole)) return "openai-jsonl";
  return "json";
}

/**
 * Runs cases one by one, keeping the workflows it bundled and the case files it opened (read-only)
 * for the cases after, and a temp folder for the recorded-answer fixtures.
 */
class CaseRunner {
  private readonly workflows = new Map<string, Workflow>();
  private readonly stores = new Map<string, SqlJsStore>();
  private tmp: string | undefined;

  constructor(
    private readonly io: Io,
    private readonly provider: ProviderConfig | undefined,
    private readonly workflowOverride: string | undefined,
  ) {}

  async run(file: string, c: EvalCase): Promise<CaseResult> {
    const t0 = performance.now();
    const result: CaseResult = {
      file,
      id: c.id,
      step: c.step,
      expected: { action: c.expected.action, verdict: c.expected.verdict },
      notes: [],
      passed: false,
      durationMs: 0,
    };
    try {
      result.got = await this.evaluate(file, c, result.notes);
      result.passed = result.got.action === c.expected.action && result.got.verdict === c.expected.verdict;
    } catch (e) {
      result.error = `${describeError(e).code}: ${describeError(e).message}`;
    }
    result.durationMs = Math.round(performance.now() - t0);
    return result;
  }

  /**
   * A case exported with its commit state and workflow file runs on its own; an older one reads
   * both from the case file it came from.
   */
  private async evaluate(file: string, c: EvalCase, notes: string[]): Promise<NonNullable<CaseResult["got"]>> {
    const workflowPath =
      this.workflowOverride !== undefined
        ? path.resolve(this.workflowOverride)
        : c.workflow.file !== undefined
          ? path.resolve(path.dirname(file), c.workflow.file)
          : workflowFileOf(await this.runOf(c), c.provenance.caseFile, undefined);
    const workflow = await this.workflow(workflowPath);
    if (workflow.name !== c.workflow.name) {
      throw new CasefileError(
        "WORKFLOW_MISMATCH",
        `eval case ${c.id} is from workflow "${c.workflow.name}", but ${workflowPath} defines "${workflow.name}"`,
      );
    }
    if (workflow.version !== c.workflow.version) notes.push(`workflow v${c.workflow.version} -> v${workflow.version}`);
    const agentSpec = agentSpecOf(workflow, c.step, `eval case ${c.id}`);

    // The case's exact messages, asked for the CURRENT proposal schema, of the model the
    // provider names if it names one (unless the step pins its model: MODEL_PINNED).
    const request = buildModelRequest({
      step: c.step,
      messages: c.request.messages,
      model: modelFor(c.step, { model: c.request.model, pin: agentSpec.model.pin }, runModelOf(this.provider)),
      params: c.request.params,
      responseSchema: agentSpec.proposal,
      callIndex: 0,
    });
    if (request.model !== c.request.model) notes.push(`model ${c.request.model} -> ${request.model}`);
    else if (request.hash !== c.request.hash) notes.push("proposal schema changed since export");
    const response = await this.providerFor(c, workflowPath).complete(request);

    const checked = checkProposal(agentSpec, response.text, c.facts as Record<string, Json>);
    const message: AgentMessage = { agentCallId: c.provenance.agentCallId, ...checked };
    // The commit rules get the business rules the step's context got; a case exported before they
    // were recorded whole holds less of them, which the table says.
    if (c.rules.length > 0 && c.rulesFrom !== "agent call")
      notes.push(
        c.rulesFrom === "rule table"
          ? "business rules rebuilt from the case file's rule table at export, not recorded with the call"
          : "business rules exported before they were recorded whole (id, statement, value only)",
      );
    const { verdict, reason } = await commitWithoutWrites(workflow, c, message, (spec) =>
      c.commitState !== undefined ? Promise.resolve(c.commitState) : this.commitStateFromCaseFile(c, spec),
    );
    const proposal = "proposal" in checked ? (checked.proposal as { action?: unknown }) : undefined;
    return { action: typeof proposal?.action === "string" ? proposal.action : null, verdict, reason };
  }

  private async runOf(c: EvalCase): Promise<RunRecord> {
    const run = (await this.store(c.provenance.caseFile, c.id)).getRun(c.provenance.runId);
    if (!run)
      throw new CasefileError(
        "UNKNOWN_RUN",
        `eval case ${c.id} names run "${c.provenance.runId}", which is not in ${c.provenance.caseFile}`,
      );
    return run;
  }

  private async commitStateFromCaseFile(c: EvalCase, spec: CommitSpec): Promise<Record<string, Json>> {
    await this.runOf(c);
    const store = await this.store(c.provenance.caseFile, c.id);
    return commitStateOf(spec, stateAt(store, c.provenance.runId, c.provenance.superstep));
  }

  /** Default: a scripted provider whose only answer is the one recorded in the case. */
  private providerFor(c: EvalCase, workflowPath: string): ModelProvider {
    if (this.provider) return createProvider(this.provider, { workflowPath, env: this.io.env });
    this.tmp ??= mkdtempSync(path.join(os.tmpdir(), "casefile-eval-"));
    const fixture = path.join(this.tmp, `${c.id.replace(/[^A-Za-z0-9_.-]/g, "_")}.responses.json`);
    writeFileSync(fixture, JSON.stringify({ responses: [{ step: c.step, response: c.answer }] }));
    return new ScriptedProvider(fixture);
  }

  private async workflow(file: string): Promise<Workflow> {
    let wf = this.workflows.get(file);
    if (!wf) this.workflows.set(file, (wf = (await loadWorkflow(file)).workflow));
    return wf;
  }

  private async store(caseFile: string, id: string): Promise<SqlJsStore> {
    let s = this.stores.get(caseFile);
    if (!s) {
      try {
        s = await openCaseFile(caseFile, { readOnly: true });
      } catch (e) {
        const err = describeError(e);
        throw new CasefileError(
          "USAGE",
          `eval case ${id} reads the state its commit rules saw and its workflow from case file ${caseFile}: ${err.code}: ${err.message}`,
          { file: caseFile },
        );
      }
      this.stores.set(caseFile, s);
    }
    return s;
  }

  close(): void {
    for (const s of this.stores.values()) s.close();
    if (this.tmp) rmSync(this.tmp, { recursive: true, force: true });
  }
}

/**
 * Runs the workflow's current commit rules on the proposal through the engine's own commit step,
 * with the step's `apply` left out: the verdict is computed exactly as in a run, and nothing is
 * written. The rules see the state the commit step saw when the case was recorded.
 */
/** The commit step an agent step sends its proposal to. */
function commitStepAfter(workflow: Workflow, step: string, what: string): { target: string; spec: CommitSpec & { kind: "commit" } } {
  const target = workflow.edges
    .filter((e) => e.from.includes(step))
    .flatMap((e) => e.to)
    .find((t) => workflow.executors[t]?.kind === "commit");
  if (!target)
    throw new CasefileError(
      "WORKFLOW_MISMATCH",
      `${what}: agent step "${step}" has no edge to a commit step in workflow "${workflow.name}"`,
      { executor: step },
    );
  return { target, spec: workflow.executors[target] as CommitSpec & { kind: "commit" } };
}

/** What of the state a commit step sees: its read and owned keys. */
function commitStateOf(spec: CommitSpec, all: Record<string, Json>): Record<string, Json> {
  const state: Record<string, Json> = {};
  for (const k of new Set([...(spec.reads ?? []), ...(spec.owns ?? [])])) if (all[k] !== undefined) state[k] = all[k]!;
  return state;
}

async function commitWithoutWrites(
  workflow: Workflow,
  c: EvalCase,
  message: AgentMessage,
  stateFor: (spec: CommitSpec) => Promise<Record<string, Json>>,
): Promise<{ verdict: Verdict; reason: string }> {
  const { target, spec } = commitStepAfter(workflow, c.step, `eval case ${c.id}`);
  const state = commitStateOf(spec, await stateFor(spec));

  const now = () => new Date().toISOString();
  const out: TaskOutcome = {
    step: {
      id: "eval",
      runId: "eval",
      superstep: 0,
      executor: target,
      kind: "commit",
      status: "ok",
      startedAt: now(),
      endedAt: now(),
      durationMs: 0,
      writes: [],
      sent: 0,
    },
    writes: [],
    facts: [],
    sends: [],
    outputs: [],
    warnings: [],
  };
  const refuse = (what: string) => () => {
    throw new CasefileError("USAGE", `eval does not ${what}`);
  };
  const ctx: LoaderContext = {
    runId: "eval",
    superstep: 0,
    executor: target,
    state,
    message: message as unknown as Json,
    from: c.step,
    local: undefined,
    signal: new AbortController().signal,
    write: refuse("write state"),
    send: refuse("send messages"),
    yield: refuse("yield outputs"),
    setLocal: refuse("keep executor state"),
    fact: refuse("write facts"),
    log: () => undefined,
  };
  await runCommit(
    { ...spec, apply: () => undefined },
    {
      workflow,
      executor: target,
      spec: { ...spec, apply: () => undefined },
      runId: "eval",
      caseId: "eval",
      superstep: 0,
      index: 0,
      message: { to: target, from: c.step, payload: message as unknown as Json },
      state,
      local: undefined,
      signal: ctx.signal,
      now,
      // The commit step reads no records: an empty store stands for the case file it never touches.
      store: new MemoryStore(),
      callIndex: 0,
      log: () => undefined,
      // The rules the case holds are those its context got: the commit rules judge with the same.
      rules: () => c.rules as RuleInForce[],
    },
    state,
    ctx,
    out,
  );
  return { verdict: out.verdict!.verdict, reason: out.verdict!.reason };
}

function formatTable(results: CaseResult[]): string {
  const fmt = (o: { action: string | null; verdict: string } | undefined) => (o ? `${o.action ?? "(none)"} / ${o.verdict}` : "-");
  const rows = [
    ["result", "case", "step", "expected", "got", "notes"],
    ...results.map((r) => [
      r.passed ? "PASS" : "FAIL",
      r.id,
      r.step,
      fmt(r.expected),
      r.error ? "error" : fmt(r.got),
      [...r.notes, r.error ?? ""].filter(Boolean).join("; "),
    ]),
  ];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  return rows
    .map((row) =>
      row
        .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!)))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}

function xml(s: string): string {
  return s
    .replace(/[<>&"']/g, (ch) => ({ "<": "&lt;", ">": "&gt;", "&": "&amp;", '"': "&quot;", "'": "&apos;" })[ch]!)
    .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f]/g, "");
}

/** One testsuite, one testcase per eval case: a wrong action or verdict is a failure, a case that could not run an error. */
function toJUnit(results: CaseResult[]): string {
  const failures = results.filter((r) => !r.passed && !r.error).length;
  const errors = results.filter((r) => r.error).length;
  const time = (ms: number) => (ms / 1000).toFixed(3);
  const lines = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="casefile eval" tests="${results.length}" failures="${failures}" errors="${errors}" time="${time(results.reduce((t, r) => t + r.durationMs, 0))}">`,
    `  <testsuite name="casefile eval" tests="${results.length}" failures="${failures}" errors="${errors}">`,
  ];
  for (const r of results) {
    lines.push(`    <testcase classname="${xml(r.step)}" name="${xml(r.id)}" file="${xml(r.file)}" time="${time(r.durationMs)}">`);
    const expected = `${r.expected.action ?? "(none)"} / ${r.expected.verdict}`;
    if (r.error) lines.push(`      <error message="${xml(r.error)}"/>`);
    else if (!r.passed) {
      const got = `${r.got!.action ?? "(none)"} / ${r.got!.verdict}`;
      lines.push(`      <failure message="${xml(`expected ${expected}, got ${got}`)}">${xml(`reason: ${r.got!.reason}`)}</failure>`);
    }
    if (r.notes.length) lines.push(`      <system-out>${xml(r.notes.join("; "))}</system-out>`);
    lines.push("    </testcase>");
  }
  lines.push("  </testsuite>", "</testsuites>", "");
  return lines.join("\n");
}
