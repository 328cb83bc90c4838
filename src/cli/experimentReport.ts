import path from "node:path";
import type { EvalCase } from "../engine/evalCase";
import { runTokens, type ExperimentCell, type ExperimentResults, type ExperimentRun, type VariantSpec } from "../protocol/experiment";
import type { CaseResult } from "./evalReport";

/**
 * What `casefile experiment` makes of its runs (pure: results in, results file and text out;
 * experimentCommand.ts runs the cases and writes the files). A cell is one case under one
 * variant over its repeats; it passes when every repeat passed. A regression is a case the
 * `--baseline` variant passes and another variant does not.
 */

export interface VariantRuns {
  name: string;
  spec: VariantSpec;
  /** Per case (in case order), one result per repeat. */
  results: CaseResult[][];
}

/** One run as the results file keeps it; `countContext` counts a request's messages with the model's tokenizer. */
export function experimentRun(
  r: CaseResult,
  countContext: (messages: { role: string; content: string }[], model: string) => number,
): ExperimentRun {
  const got = r.got;
  return {
    ...(got ? { action: got.action, verdict: got.verdict, reason: got.reason } : {}),
    passed: r.passed,
    ...(r.error ? { error: `${r.error.code}: ${r.error.message}` } : {}),
    tokens: {
      ...(got?.request ? { context: countContext(got.request.messages, got.request.model) } : {}),
      ...(got?.usage?.promptTokens !== undefined ? { prompt: got.usage.promptTokens } : {}),
      ...(got?.usage?.completionTokens !== undefined ? { completion: got.usage.completionTokens } : {}),
    },
    latencyMs: got?.modelMs ?? 0,
    notes: r.notes,
  };
}

/**
 * How the results file names each case: its eval id, or, when another case of the set has the same
 * id (a corrected copy of an export keeps the step's id), the id with its file's name, so each row
 * of the matrix and each regression is that case's own.
 */
function caseKeys(cases: { file: string; c: EvalCase }[]): string[] {
  const count = new Map<string, number>();
  for (const { c } of cases) count.set(c.id, (count.get(c.id) ?? 0) + 1);
  return cases.map(({ file, c }) => (count.get(c.id)! > 1 ? `${c.id} (${path.basename(file)})` : c.id));
}

export function buildResults(input: {
  createdAt: string;
  repeat: number;
  baseline: string | undefined;
  cases: { file: string; c: EvalCase }[];
  variants: VariantRuns[];
  junit: Record<string, string>;
  countContext: Parameters<typeof experimentRun>[1];
}): ExperimentResults {
  const keys = caseKeys(input.cases);
  const cells: ExperimentCell[] = [];
  input.cases.forEach((_, i) => {
    for (const v of input.variants) {
      const results = v.results[i]!;
      const runs = results.map((r) => experimentRun(r, input.countContext));
      const request = results.find((r) => r.got?.request)?.got?.request;
      const passedRuns = runs.filter((r) => r.passed).length;
      cells.push({
        case: keys[i]!,
        variant: v.name,
        runs,
        passRate: passedRuns / runs.length,
        passed: passedRuns === runs.length,
        ...(request ? { request } : {}),
      });
    }
  });
  const totals = input.variants.map((v) => {
    const mine = cells.filter((cell) => cell.variant === v.name);
    const runs = mine.flatMap((cell) => cell.runs);
    return {
      variant: v.name,
      passRate: runs.length ? runs.filter((r) => r.passed).length / runs.length : 0,
      casesPassed: mine.filter((cell) => cell.passed).length,
      cases: mine.length,
      tokens: runs.reduce((t, r) => t + runTokens(r), 0),
      meanLatencyMs: runs.length ? Math.round(runs.reduce((t, r) => t + r.latencyMs, 0) / runs.length) : 0,
    };
  });
  const regressions: ExperimentResults["regressions"] = [];
  if (input.baseline !== undefined) {
    for (const id of keys) {
      const base = cells.find((cell) => cell.case === id && cell.variant === input.baseline);
      if (!base?.passed) continue;
      for (const cell of cells)
        if (cell.case === id && cell.variant !== input.baseline && !cell.passed) regressions.push({ case: id, variant: cell.variant });
    }
  }
  return {
    format: "casefile-experiment",
    v: 1,
    createdAt: input.createdAt,
    repeat: input.repeat,
    ...(input.baseline !== undefined ? { baseline: input.baseline } : {}),
    cases: input.cases.map(({ file, c }, i) => ({
      id: keys[i]!,
      file,
      step: c.step,
      expected: { action: c.expected.action, verdict: c.expected.verdict },
    })),
    variants: input.variants.map((v) => ({ name: v.name, spec: v.spec })),
    cells,
    totals,
    regressions,
    junit: input.junit,
  };
}

const outcome = (o: { action: string | null; verdict: string }) => `${o.action ?? "(none)"} / ${o.verdict}`;

/** A cell as the matrix prints it: PASS/FAIL (with the pass rate over repeats), what the model did, tokens and latency. */
export function cellText(cell: ExperimentCell, repeat: number): string {
  const first = cell.runs.find((r) => !r.error) ?? cell.runs[0]!;
  const did = first.error ? `error ${first.error.split(":")[0]}` : outcome({ action: first.action ?? null, verdict: first.verdict ?? "?" });
  const rate = repeat > 1 ? ` ${cell.runs.filter((r) => r.passed).length}/${cell.runs.length}` : "";
  const tokens = Math.round(cell.runs.reduce((t, r) => t + runTokens(r), 0) / cell.runs.length);
  const ms = Math.round(cell.runs.reduce((t, r) => t + r.latencyMs, 0) / cell.runs.length);
  return `${cell.passed ? "PASS" : "FAIL"}${rate} ${did}  ${tokens} tok  ${ms} ms`;
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  return rows
    .map((row) =>
      row
        .map((cell, i) => cell.padEnd(widths[i]!))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}

/** The matrix (case x variant), the totals per variant, and the regressions against the baseline. */
export function formatExperiment(r: ExperimentResults): string {
  const names = r.variants.map((v) => v.name);
  const matrix = table([
    ["case", "expected", ...names.map((n) => (n === r.baseline ? `${n} (baseline)` : n))],
    ...r.cases.map((c) => [
      c.id,
      outcome(c.expected),
      ...names.map((n) => {
        const cell = r.cells.find((x) => x.case === c.id && x.variant === n);
        return cell ? cellText(cell, r.repeat) : "-";
      }),
    ]),
  ]);
  const totals = table([
    ["variant", "pass rate", "cases passed", "tokens", "mean latency"],
    ...r.totals.map((t) => [
      t.variant,
      `${Math.round(t.passRate * 100)}%`,
      `${t.casesPassed}/${t.cases}`,
      String(t.tokens),
      `${t.meanLatencyMs} ms`,
    ]),
  ]);
  const lines = [matrix, "", totals];
  // Notes and errors, once per cell, so a failing cell says why.
  const said = r.cells.flatMap((cell) => {
    const notes = [...new Set(cell.runs.flatMap((run) => [...run.notes, ...(run.error ? [run.error] : [])]))];
    return notes.length ? [`  ${cell.case} / ${cell.variant}: ${notes.join("; ")}`] : [];
  });
  if (said.length) lines.push("", "notes:", ...said);
  if (r.regressions.length)
    lines.push(
      "",
      ...r.regressions.map((g) => `regression: case ${g.case} passes under baseline "${r.baseline}" and fails under "${g.variant}"`),
    );
  return lines.join("\n");
}
