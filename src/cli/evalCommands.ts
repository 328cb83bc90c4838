import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { openCaseFile, type SqlJsStore } from "../casefile/index";
import { checkProposal, type AgentMessage } from "../engine/agentStep";
import { judge } from "../engine/commitStep";
import { buildModelRequest } from "../engine/contextRequest";
import { CasefileError, describeError, onFile } from "../engine/errors";
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
import type { CommitSpec } from "../engine/executors";
import { toOpenAIEvalConfig, toOpenAIEvalItemsJsonl } from "../engine/openaiEvals";
import { agentSpecOf, commitStateOf, commitStepAfter, evalSourceOf, stateAt } from "../engine/evalSource";
import type { ModelProvider } from "../engine/model";
import { modelFor } from "../engine/modelChoice";
import { createProvider, FixedProvider, runModelOf } from "../engine/providers/index";
import type { RuleInForce } from "../engine/rules";
import type { Json, RunRecord } from "../engine/records";
import type { Workflow } from "../engine/workflow";
import { ExportEvalResultSchema } from "../protocol/exportEval";
import { EvalFormatSchema, type EvalFormat } from "../protocol/webview";
import type { ProviderConfig } from "../protocol/runner";
import { loadWorkflow } from "../runner/bundle";
import { STORE_OPTIONS, locationFromOptions, openLocation } from "../runner/storeLocation";
import { jsonOption, parseOptions, providerOption, type Command, type Io } from "./args";
import { formatTable, toJUnit, type CaseResult } from "./evalReport";
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

/** Each format's file suffix. promptfoo picks its loader by extension (`.yaml`); openai-evals also writes OPENAI_EVAL_CONFIG beside its items. */
const FORMATS: Record<EvalFormat, string> = {
  json: ".eval.json",
  promptfoo: ".promptfoo.yaml",
  "openai-jsonl": ".jsonl",
  "openai-evals": ".items.jsonl",
};
const OPENAI_EVAL_CONFIG = ".openai-eval.json";

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
      ...STORE_OPTIONS,
    },
    1,
  );
  const location = locationFromOptions("export-eval", values, positionals[0]);
  if (!location || !values.step)
    throw new CasefileError("USAGE", "export-eval needs a case file (or --store URL --case ID) and --step <agent call id>");
  const parsedFormat = EvalFormatSchema.safeParse(values.format ?? "json");
  if (!parsedFormat.success)
    throw new CasefileError("USAGE", `--format must be ${EvalFormatSchema.options.join(", ")}, not "${values.format}"`);
  const format = parsedFormat.data;
  const change = parseExpect(values.expect);

  const { store, label: caseFile } = await openLocation(location, { readOnly: true });
  let evalCase: EvalCase;
  let workflowPath: string;
  try {
    const call = resolveStep(store, caseFile, values.step, values.run);
    const run = store.getRun(call.runId)!;
    workflowPath = workflowFileOf(run, caseFile, values.workflow);
    const { workflow } = await loadWorkflow(workflowPath);
    const source = evalSourceOf(store, caseFile, call, workflow);
    if (source.rulesFrom === "rule table")
      io.err(
        `export-eval: agent call ${call.id} was recorded before its business rules were kept whole; its rules are rebuilt from ${caseFile}'s rule table as of ${call.at} (rulesFrom: "rule table")`,
      );
    evalCase = evalCaseFromRecords(source);
  } finally {
    store.close();
  }
  if (change) evalCase = correctExpected(evalCase, change);

  // Beside the case file; for a case of a store, in ./evals of the working folder.
  const evalsDir = location.kind === "file" ? path.join(path.dirname(caseFile), "evals") : "evals";
  const out = path.resolve(values.out ?? path.join(evalsDir, evalCase.id + FORMATS[format]));
  // Relative to the case's folder: evals kept in a repository beside the workflow move with it.
  evalCase = { ...evalCase, workflow: { ...evalCase.workflow, file: path.relative(path.dirname(out), workflowPath) } };
  const texts = {
    json: () => toOwnJson(evalCase),
    promptfoo: () => toPromptfooYaml([evalCase]),
    "openai-jsonl": () => toOpenAIEvalsJsonl([evalCase]),
    "openai-evals": () => toOpenAIEvalItemsJsonl([evalCase]),
  };
  const text = texts[format]();
  const config = format === "openai-evals" ? out.replace(/(\.items)?\.jsonl$/, "") + OPENAI_EVAL_CONFIG : undefined;
  writeOut(out, text);
  if (config) writeOut(config, JSON.stringify(toOpenAIEvalConfig([evalCase]), null, 2) + "\n");
  if (values.json) {
    // For scripts and the extension: what was written where, in the schema they parse it with.
    io.out(JSON.stringify(ExportEvalResultSchema.parse({ v: 1, id: evalCase.id, path: out, format, ...(config ? { config } : {}) })));
    return 0;
  }
  const e = evalCase.expected;
  io.out(
    `eval case ${evalCase.id}: step "${evalCase.step}", expects ${e.action ?? "no valid proposal"} (${e.verdict})${e.corrected ? ", corrected" : ""}`,
  );
  io.out(out);
  if (config) io.out(config);
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

// ---- eval -------------------------------------------------------------------------------------

export const runEval: Command = async (args, io) => {
  const { values, positionals } = parseOptions(args, {
    provider: { type: "string" },
    junit: { type: "string" },
    workflow: { type: "string" },
  });
  if (positionals.length === 0) throw new CasefileError("USAGE", "eval needs eval case files or a folder of them");
  const provider = providerOption(values.provider, io);
  const cases = onceEach(
    positionals.flatMap((p) => caseFilesIn(p, io)).flatMap((file) => loadCases(file).map((c) => ({ file, c }))),
    io,
  );
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
  const openai = names.filter((f) => f.endsWith(".jsonl") || f.endsWith(OPENAI_EVAL_CONFIG));
  // export-eval writes every format into one folder by default; the OpenAI copies hold too
  // little to evaluate (see loadCases), so a folder's are skipped, said once.
  if (openai.length) io.err(`eval: skipping ${openai.length} OpenAI evals file(s) in ${abs} (messages and expected action only)`);
  return names
    .filter((f) => /\.(json|ya?ml)$/.test(f) && !f.endsWith(OPENAI_EVAL_CONFIG))
    .sort()
    .map((f) => path.join(abs, f));
}

/**
 * The same case exported in two formats (our JSON and promptfoo YAML, both written into one
 * folder by default) is one case: evaluated once, from the file named first, the copy said once.
 * Cases that share an id but differ (a corrected copy) are all evaluated.
 */
function onceEach(cases: { file: string; c: EvalCase }[], io: Io): { file: string; c: EvalCase }[] {
  const seen = new Map<string, string>();
  return cases.filter(({ file, c }) => {
    const key = JSON.stringify(c);
    const first = seen.get(key);
    if (first === undefined) {
      seen.set(key, file);
      return true;
    }
    io.err(`eval: ${file} holds the same case as ${first} (${c.id}): evaluated once`);
    return false;
  });
}

/**
 * Reads one eval file, whatever its name: the format is told from the content. A JSON object is
 * our eval case; a JSON array, an object with `vars`, or any other YAML is a promptfoo test list;
 * lines that are each a JSON object (or one object with `input` and `ideal`, or `item`) are OpenAI
 * evals JSONL, and an object with `eval.data_source_config` the hosted eval's config: both refused
 * because they hold too little to evaluate.
 */
export function loadCases(file: string): EvalCase[] {
  const text = onFile("read", file, () => readFileSync(file, "utf8"));
  const format = sniffEvalFormat(text);
  if (format === "openai-jsonl") {
    throw new CasefileError(
      "USAGE",
      `${file}: an OpenAI evals file holds only the messages and the expected action, not the facts and verdict casefile eval checks; export with --format json or promptfoo`,
      { file },
    );
  }
  return format === "promptfoo" ? parsePromptfooYaml(text, file) : [parseOwnJson(text, file)];
}

/** "openai-jsonl": OpenAI evals JSONL (legacy lines or the hosted API's `item` lines), or the hosted eval's config. */
export function sniffEvalFormat(text: string): "json" | "promptfoo" | "openai-jsonl" {
  const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);
  const isJsonlLine = (v: unknown) =>
    isObject(v) &&
    (("input" in v && "ideal" in v) || ("item" in v && isObject(v.item)) || (isObject(v.eval) && "data_source_config" in v.eval));
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
 * for the cases after.
 */
class CaseRunner {
  private readonly workflows = new Map<string, Workflow>();
  private readonly stores = new Map<string, SqlJsStore>();

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
    // The commit rules get the business rules the step's context got; a case exported before they
    // were recorded whole holds less of them, which the table says.
    if (c.rules.length > 0 && c.rulesFrom !== "agent call")
      notes.push(
        c.rulesFrom === "rule table"
          ? "business rules rebuilt from the case file's rule table at export, not recorded with the call"
          : "business rules exported before they were recorded whole (id, statement, value only)",
      );
    // The workflow's current commit rules judge the proposal as the commit step would, with the
    // state that step saw when the case was recorded; nothing is applied or written.
    const { target, spec } = commitStepAfter(workflow, c.step, `eval case ${c.id}`);
    const state = commitStateOf(spec, c.commitState !== undefined ? c.commitState : await this.commitStateFromCaseFile(c, spec));
    const proposal = "proposal" in checked && isRecord(checked.proposal) ? checked.proposal : undefined;
    const message: AgentMessage = { agentCallId: c.provenance.agentCallId, ...checked };
    const { verdict, reason } = judge(spec.rules, proposal, state, {
      ...("rejection" in checked ? { rejection: checked.rejection } : {}),
      message: message as unknown as Json,
      businessRules: c.rules as RuleInForce[],
      executor: target,
    });
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

  /** Default: a provider whose only answer is the one recorded in the case. */
  private providerFor(c: EvalCase, workflowPath: string): ModelProvider {
    if (this.provider) return createProvider(this.provider, { workflowPath, env: this.io.env });
    return new FixedProvider(c.step, c.answer);
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
  }
}

function isRecord(v: unknown): v is Json & Record<string, Json> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
