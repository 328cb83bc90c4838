import { existsSync, statSync } from "node:fs";
import path from "node:path";
import { CasefileError } from "../engine/errors";
import type { Json } from "../engine/records";
import { countTokens } from "../engine/tokens";
import { ExperimentResultsSchema, type VariantSpec } from "../protocol/experiment";
import type { ProviderConfig } from "../protocol/runner";
import { jsonOption, parseOptions, type Command } from "./args";
import { providerConfigOf } from "./providerArgs";
import { CaseRunner, caseFilesIn, loadCases, writeOut } from "./evalCommands";
import { toJUnit, type CaseResult } from "./evalReport";
import { buildResults, formatExperiment, type VariantRuns } from "./experimentReport";

/**
 * `casefile experiment <cases...> --variant NAME=SPEC ...`: one eval set run under several
 * variants, side by side. Each variant runs every case with `casefile eval`'s CaseRunner (same
 * loading, same proposal check, same commit rules), `--repeat N` times for models that are not
 * deterministic; the matrix is printed, the results file (src/protocol/experiment.ts) and a JUnit
 * file per variant are written beside the cases, and the exit code is 1 when the `--baseline`
 * variant passes a case another variant fails (a regression), 0 otherwise.
 *
 * A SPEC is
 *   - `recorded`: the case's own recorded answer (what `casefile eval` does without --provider);
 *   - a workflow file (`v2=examples/invoice/workflow-v2.ts`): another version of the workflow,
 *     its context rebuilt from the case file's state and its commit rules judging, with the
 *     recorded answer;
 *   - JSON: a provider config as `--provider` takes it (`{"kind":"openai","model":"gpt-4o"}`),
 *     with `temperature` and `workflow` besides, each optional: `{"workflow":"v2.ts","kind":"openai"}`.
 */

interface Variant {
  name: string;
  spec: VariantSpec;
  provider: ProviderConfig | undefined;
  workflow: string | undefined;
  temperature: number | undefined;
}

const WORKFLOW_FILE = /\.(ts|mts|js|mjs|cjs)$/;

export const experiment: Command = async (args, io) => {
  const { values, positionals } = parseOptions(args, {
    variant: { type: "string", multiple: true },
    repeat: { type: "string" },
    baseline: { type: "string" },
    out: { type: "string" },
  });
  if (positionals.length === 0) throw new CasefileError("USAGE", "experiment needs eval case files or a folder of them");
  const variants = (values.variant ?? []).map(parseVariant);
  if (variants.length === 0)
    throw new CasefileError(
      "USAGE",
      "experiment needs at least one --variant NAME=SPEC (SPEC: recorded, a workflow file, or provider JSON)",
    );
  const dup = variants.find((v, i) => variants.findIndex((w) => w.name === v.name) !== i);
  if (dup) throw new CasefileError("USAGE", `--variant: the name "${dup.name}" is given twice`);
  const repeat = repeatOption(values.repeat);
  const baseline = values.baseline;
  if (baseline !== undefined && !variants.some((v) => v.name === baseline))
    throw new CasefileError("USAGE", `--baseline "${baseline}" is not a variant (variants: ${variants.map((v) => v.name).join(", ")})`);

  const cases = positionals.flatMap((p) => caseFilesIn(p, io)).flatMap((file) => loadCases(file).map((c) => ({ file, c })));
  if (cases.length === 0)
    throw new CasefileError("USAGE", `no eval cases (*.json, *.yaml, *.yml in a folder) in ${positionals.join(", ")}`);

  const runs: VariantRuns[] = [];
  for (const v of variants) {
    const runner = new CaseRunner(io, v.provider, v.workflow, {
      ...(v.temperature !== undefined ? { temperature: v.temperature } : {}),
      rebuildContext: v.workflow !== undefined,
    });
    const results: CaseResult[][] = [];
    try {
      for (const { file, c } of cases) {
        const each: CaseResult[] = [];
        for (let i = 0; i < repeat; i++) each.push(await runner.run(file, c));
        results.push(each);
      }
    } finally {
      runner.close();
    }
    runs.push({ name: v.name, spec: v.spec, results });
  }

  const out = path.resolve(
    values.out ?? path.join(folderOf(positionals[0]!), `${variants.map((v) => v.name).join("-vs-")}.experiment.json`),
  );
  const stem = out.replace(/(\.experiment)?\.json$/, "");
  const junit: Record<string, string> = {};
  for (const v of runs) {
    const file = `${stem}.${v.name}.junit.xml`;
    // One testcase per case and repeat: a repeat is its own run, named so.
    const flat = v.results.flatMap((each) => each.map((r, i) => (repeat > 1 ? { ...r, id: `${r.id} (run ${i + 1})` } : r)));
    writeOut(file, toJUnit(flat));
    junit[v.name] = file;
  }
  // Paths in the results file are relative to its folder: kept in a repository beside the cases, it moves with them.
  const rel = (p: string) => path.relative(path.dirname(out), p) || ".";
  const results = ExperimentResultsSchema.parse(
    buildResults({
      createdAt: new Date().toISOString(),
      repeat,
      baseline,
      cases: cases.map(({ file, c }) => ({ file: rel(file), c })),
      variants: runs.map((v) => (v.spec.workflow ? { ...v, spec: { ...v.spec, workflow: rel(v.spec.workflow) } } : v)),
      junit: Object.fromEntries(Object.entries(junit).map(([k, f]) => [k, rel(f)])),
      countContext: (messages, model) => countTokens(messages as Parameters<typeof countTokens>[0], model).count,
    }),
  );
  writeOut(out, JSON.stringify(results, null, 2) + "\n");

  io.out(formatExperiment(results));
  io.out("");
  for (const [name, file] of Object.entries(junit)) io.out(`JUnit (${name}): ${file}`);
  // Last, alone on its line: the Experiment panel opens this file (command casefile.openExperiment).
  io.out(`results: ${out}`);
  return results.regressions.length > 0 ? 1 : 0;
};

/** `NAME=SPEC`; the name goes into file names, so it is kept to letters, digits, `.`, `_` and `-`. */
function parseVariant(arg: string): Variant {
  const eq = arg.indexOf("=");
  const name = eq < 0 ? "" : arg.slice(0, eq);
  const spec = eq < 0 ? "" : arg.slice(eq + 1).trim();
  if (!/^[\w.-]+$/.test(name) || spec === "")
    throw new CasefileError(
      "USAGE",
      `--variant "${arg}" is not NAME=SPEC (a name of letters, digits, . _ -; SPEC: recorded, a workflow file, or provider JSON)`,
    );
  const what = `--variant ${name}`;
  if (spec === "recorded") return variant(name, undefined, undefined, undefined);
  if (!spec.startsWith("{")) return variant(name, undefined, workflowFile(spec, what), undefined);
  const raw = jsonOption(spec, `variant ${name}`) as Json;
  if (raw === null || typeof raw !== "object" || Array.isArray(raw))
    throw new CasefileError("USAGE", `${what}: the JSON must be an object`);
  const { workflow, temperature, ...rest } = raw;
  if (workflow !== undefined && typeof workflow !== "string") throw new CasefileError("USAGE", `${what}: "workflow" must be a file path`);
  if (temperature !== undefined && (typeof temperature !== "number" || !Number.isFinite(temperature) || temperature < 0))
    throw new CasefileError("USAGE", `${what}: "temperature" must be a number of 0 or more`);
  const provider = Object.keys(rest).length > 0 ? providerConfigOf(rest, what) : undefined;
  return variant(name, provider, workflow === undefined ? undefined : workflowFile(workflow, what), temperature);
}

function variant(
  name: string,
  provider: ProviderConfig | undefined,
  workflow: string | undefined,
  temperature: number | undefined,
): Variant {
  // What the results file says of the provider: its kind and what names it, never a key or its variable.
  const named: VariantSpec["provider"] = !provider
    ? { kind: "recorded" }
    : provider.kind === "openai"
      ? { kind: "openai", ...(provider.model ? { model: provider.model } : {}), ...(provider.baseUrl ? { baseUrl: provider.baseUrl } : {}) }
      : provider.kind === "azure"
        ? { kind: "azure", model: provider.deployment, baseUrl: provider.endpoint }
        : provider.kind === "vscode-lm"
          ? { kind: "vscode-lm", ...(provider.family ? { model: provider.family } : {}) }
          : { kind: provider.kind };
  const spec: VariantSpec = {
    provider: named,
    ...(temperature !== undefined ? { temperature } : {}),
    ...(workflow !== undefined ? { workflow } : {}),
  };
  return { name, spec, provider, workflow, temperature };
}

function workflowFile(file: string, what: string): string {
  const abs = path.resolve(file);
  if (!WORKFLOW_FILE.test(abs))
    throw new CasefileError("USAGE", `${what}: "${file}" is neither recorded, a workflow file (.ts, .js) nor provider JSON`);
  if (!existsSync(abs)) throw new CasefileError("USAGE", `${what}: workflow file ${abs} does not exist`, { file: abs });
  return abs;
}

function repeatOption(value: string | undefined): number {
  if (value === undefined) return 1;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 100)
    throw new CasefileError("USAGE", `--repeat must be a whole number from 1 to 100, not "${value}"`);
  return n;
}

/** Where the results go by default: the cases' folder (the first one named). */
function folderOf(arg: string): string {
  const abs = path.resolve(arg);
  return existsSync(abs) && statSync(abs).isDirectory() ? abs : path.dirname(abs);
}
