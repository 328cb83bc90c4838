import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { openCaseFile, type SqlJsStore } from "../casefile/index";
import { checkProposal, type AgentMessage } from "../engine/agentStep";
import { judge } from "../engine/commitStep";
import { buildModelRequest } from "../engine/contextRequest";
import { CasefileError, describeError, errorMessage, onFile } from "../engine/errors";
import { missingRun } from "../engine/storeBatch";
import {
  correctExpected,
  evalCaseFromRecords,
  ExpectedOutcomeSchema,
  toOpenAIEvalsJsonl,
  toOwnJson,
  toPromptfooYaml,
  type EvalCase,
} from "../engine/evalCase";
import { evalCasesOfText, sniffEvalFormat } from "../engine/evalFile";
import type { AgentSpec, CommitSpec } from "../engine/executors";
import { agentInputsAt, agentSpecOf, commitStateOf, commitStepAfter, evalSourceOf, stateAt } from "../engine/evalSource";
import { toOpenAIEvalConfig, toOpenAIEvalItemsJsonl } from "../engine/openaiEvals";
import type { ModelProvider } from "../engine/model";
import { modelFor } from "../engine/modelChoice";
import { FixedProvider, runModelOf } from "../engine/providers/index";
import { providerFor } from "../runner/provider";
import type { RuleInForce } from "../engine/rules";
import type { Json, RunRecord } from "../engine/records";
import type { Workflow } from "../engine/workflow";
import { EvalRunLineSchema } from "../protocol/evalRun";
import { ExportEvalResultSchema } from "../protocol/exportEval";
import { EvalFormatSchema, type EvalFormat } from "../protocol/webview";
import type { ProviderConfig } from "../protocol/runner";
import { loadWorkflow } from "../runner/bundle";
import { STORE_OPTIONS, locationFromOptions, openLocation } from "../runner/storeLocation";
import { jsonOption, parseOptions, type Command, type Io } from "./args";
import { providerOption } from "./providerArgs";
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
    const run = store.getRun(call.runId);
    if (!run) throw missingRun(caseFile, call.runId, `agent call "${call.id}"`);
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
    json: { type: "boolean" },
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
    for (const { file, c } of cases) {
      const result = await runner.run(file, c);
      results.push(result);
      // For the editor's Testing view and scripts: each case as soon as it is judged (src/protocol/evalRun.ts).
      if (values.json) io.out(JSON.stringify(EvalRunLineSchema.parse({ v: 1, type: "case", ...result })));
    }
  } finally {
    runner.close();
  }

  const failed = results.filter((r) => !r.passed).length;
  if (values.json) io.out(JSON.stringify(EvalRunLineSchema.parse({ v: 1, type: "done", passed: results.length - failed, failed })));
  else {
    io.out(formatTable(results));
    io.out(`${results.length - failed} passed, ${failed} failed`);
  }
  if (values.junit) {
    const file = path.resolve(values.junit);
    writeOut(file, toJUnit(results));
    // On stderr with --json: stdout holds only the JSON lines.
    (values.json ? io.err : io.out)(`JUnit: ${file}`);
  }
  return failed === 0 ? 0 : 1;
};

/** Writes a file the user named (--out, --junit), making its folder; a refusal is FILE_ERROR naming the path. */
export function writeOut(file: string, text: string): void {
  const dir = path.dirname(file);
  onFile("create the folder", dir, () => mkdirSync(dir, { recursive: true }));
  onFile("write", file, () => writeFileSync(file, text));
}

/** A folder gives its eval files (not recursing; an experiment's results file is none); a file is taken as given. */
export function caseFilesIn(arg: string, io: Io): string[] {
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
    .filter((f) => /\.(json|ya?ml)$/.test(f) && !f.endsWith(".experiment.json") && !f.endsWith(OPENAI_EVAL_CONFIG))
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

/** Reads one eval file, whatever its name: the format is told from the content (engine/evalFile.ts). */
export function loadCases(file: string): EvalCase[] {
  return evalCasesOfText(
    onFile("read", file, () => readFileSync(file, "utf8")),
    file,
  );
}

export { sniffEvalFormat };

/**
 * How an experiment's variant (src/cli/experimentCommand.ts) changes a case's run: the request's
 * temperature, and the context rebuilt by the workflow's own `context` function from the state
 * and message the step got (read from the case file), instead of the recorded messages.
 */
export interface CaseRunOptions {
  temperature?: number;
  rebuildContext?: boolean;
}

/**
 * Runs cases one by one, keeping the workflows it bundled and the case files it opened (read-only)
 * for the cases after. `casefile eval` runs each case once; `casefile experiment` once per variant
 * and repeat.
 */
export class CaseRunner {
  private readonly workflows = new Map<string, Workflow>();
  private readonly stores = new Map<string, SqlJsStore>();

  constructor(
    private readonly io: Io,
    private readonly provider: ProviderConfig | undefined,
    private readonly workflowOverride: string | undefined,
    private readonly options: CaseRunOptions = {},
  ) {}

  async run(file: string, c: EvalCase): Promise<CaseResult> {
    const t0 = performance.now();
    const result: CaseResult = {
      file,
      id: c.id,
      step: c.step,
      workflow: { name: c.workflow.name, version: c.workflow.version },
      expected: { action: c.expected.action, verdict: c.expected.verdict },
      provenance: c.provenance,
      notes: [],
      passed: false,
      durationMs: 0,
    };
    try {
      result.got = await this.evaluate(file, c, result.notes);
      result.passed = result.got.action === c.expected.action && result.got.verdict === c.expected.verdict;
    } catch (e) {
      const { code, message } = describeError(e);
      result.error = { code, message };
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
    const { temperature, rebuildContext } = this.options;
    const request = buildModelRequest({
      step: c.step,
      messages: rebuildContext ? await this.rebuiltContext(c, agentSpec, notes) : c.request.messages,
      model: modelFor(c.step, { model: c.request.model, pin: agentSpec.model.pin }, runModelOf(this.provider)),
      params: temperature === undefined ? c.request.params : { ...c.request.params, temperature },
      responseSchema: agentSpec.proposal,
      callIndex: 0,
    });
    if (request.model !== c.request.model) notes.push(`model ${c.request.model} -> ${request.model}`);
    else if (request.hash !== c.request.hash)
      notes.push(
        JSON.stringify(request.messages) !== JSON.stringify(c.request.messages)
          ? "context differs from the recorded one"
          : JSON.stringify(request.params) !== JSON.stringify(c.request.params)
            ? "model parameters differ from the recorded ones"
            : "proposal schema changed since export",
      );
    const t0 = performance.now();
    const response = await this.providerFor(c, workflowPath).complete(request);
    const modelMs = Math.round(performance.now() - t0);

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
    const { verdict, reason, results } = judge(spec.rules, proposal, state, {
      ...("rejection" in checked ? { rejection: checked.rejection } : {}),
      message: message as unknown as Json,
      businessRules: c.rules as RuleInForce[],
      executor: target,
    });
    return {
      action: typeof proposal?.action === "string" ? proposal.action : null,
      verdict,
      reason,
      rules: results.map(({ name, ok, message }) => ({ name, ok, message })),
      request: { messages: request.messages, model: request.model, hash: request.hash },
      ...(response.usage ? { usage: response.usage } : {}),
      modelMs,
    };
  }

  /**
   * The messages the workflow's `context` builds from the state and message the step got when it
   * ran (the checkpoint before its superstep, in the case's case file), with the case's business
   * rules. Without the case file, the recorded messages, said in the notes.
   */
  private async rebuiltContext(c: EvalCase, spec: AgentSpec, notes: string[]): Promise<EvalCase["request"]["messages"]> {
    if (!existsSync(c.provenance.caseFile)) {
      notes.push(`context as recorded: case file ${c.provenance.caseFile} not found to rebuild it`);
      return c.request.messages;
    }
    const store = await this.store(c.provenance.caseFile, c.id);
    const seen = agentInputsAt(store, c.provenance.runId, c.provenance.superstep, c.step, spec);
    if ("missing" in seen) {
      notes.push(`context as recorded: ${seen.missing}`);
      return c.request.messages;
    }
    try {
      return spec.context(seen.state, seen.message, c.rules as RuleInForce[]);
    } catch (e) {
      throw new CasefileError("INVALID_WORKFLOW", `step "${c.step}": context threw rebuilding eval case ${c.id}: ${errorMessage(e)}`, {
        step: c.step,
      });
    }
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
    if (this.provider) return providerFor(this.provider, { workflowPath, env: this.io.env });
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
