import * as path from "node:path";
import { describeError } from "../engine/errors";
import type { EvalCase } from "../engine/evalCase";
import { evalCasesOfText } from "../engine/evalFile";
import type { EvalCaseRun } from "../protocol/evalRun";

/**
 * The Testing view's items, without `vscode` so it is tested in plain Node: the workspace's eval
 * files (path and text) become a tree workflow -> step -> case, and one case's result from
 * `casefile eval --json` becomes what the view shows (passed, or expected against actual).
 * evalTests.ts reads the files, turns these nodes into TestItems and runs the CLI. Parsing a
 * case runs no workflow code, so the tree is built in Restricted Mode too.
 */

export interface EvalFileText {
  /** Absolute path. */
  path: string;
  text: string;
}

export interface EvalCaseNode {
  /** The TestItem id: the file and the case's id, unique across the workspace. */
  id: string;
  caseId: string;
  file: string;
  /** 0-based line of the case in its file (its `id`), for the item's range and a failure's location. */
  line: number;
  step: string;
  /** What the case expects, as the item's description. */
  description: string;
  /** The workflow file the case runs with (absolute), when it names one; continuous runs watch it. */
  workflowFile?: string;
  provenance: EvalCase["provenance"];
}

export interface EvalStepNode {
  id: string;
  step: string;
  cases: EvalCaseNode[];
}

export interface EvalWorkflowNode {
  id: string;
  name: string;
  /** The workflow versions its cases were exported from ("v1", "v1, v2"). */
  description: string;
  steps: EvalStepNode[];
}

/** A file that looks like an eval file but does not parse: listed with the reason, never run. */
export interface EvalFileProblem {
  id: string;
  file: string;
  message: string;
}

export interface EvalTree {
  workflows: EvalWorkflowNode[];
  problems: EvalFileProblem[];
}

/** The globs the Testing view lists and watches: our JSON, and YAML that may be promptfoo tests. */
export const EVAL_FILE_GLOBS = ["**/*.eval.json", "**/*.{yaml,yml}"] as const;

/**
 * Whether a file is an eval file at all. `*.eval.json` always is (a broken one is a problem to
 * show); a YAML file only when it holds Casefile's metadata, since a workspace's other YAML (CI,
 * compose files) is none of ours and is not listed.
 */
export function isEvalFile(file: string, text: string): boolean {
  if (file.endsWith(".eval.json")) return true;
  return /\.ya?ml$/.test(file) && /^\s*casefile:\s*$/m.test(text);
}

/** Builds the tree from the files' texts; files that are not eval files are left out. Sorted, so the view is stable. */
export function buildEvalTree(files: readonly EvalFileText[]): EvalTree {
  const workflows = new Map<string, { versions: Set<number>; steps: Map<string, EvalCaseNode[]> }>();
  const problems: EvalFileProblem[] = [];
  for (const f of [...files].sort((a, b) => a.path.localeCompare(b.path))) {
    if (!isEvalFile(f.path, f.text)) continue;
    let cases: EvalCase[];
    try {
      cases = evalCasesOfText(f.text, f.path);
    } catch (e) {
      const { code, message } = describeError(e);
      problems.push({ id: `problem:${f.path}`, file: f.path, message: `${code}: ${message}` });
      continue;
    }
    for (const c of cases) {
      let wf = workflows.get(c.workflow.name);
      if (!wf) workflows.set(c.workflow.name, (wf = { versions: new Set(), steps: new Map() }));
      wf.versions.add(c.workflow.version);
      const list = wf.steps.get(c.step) ?? [];
      wf.steps.set(c.step, list);
      list.push(caseNode(f, c));
    }
  }
  return {
    workflows: [...workflows.entries()]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([name, wf]) => ({
        id: `workflow:${name}`,
        name,
        description: [...wf.versions]
          .sort((a, b) => a - b)
          .map((v) => `v${v}`)
          .join(", "),
        steps: [...wf.steps.entries()]
          .sort(([a], [b]) => a.localeCompare(b))
          .map(([step, cases]) => ({ id: `step:${name}/${step}`, step, cases })),
      })),
    problems,
  };
}

function caseNode(f: EvalFileText, c: EvalCase): EvalCaseNode {
  const e = c.expected;
  return {
    id: caseItemId(f.path, c.id),
    caseId: c.id,
    file: f.path,
    line: lineOfCase(f.text, c.id),
    step: c.step,
    description: `expects ${e.action ?? "no valid proposal"} (${e.verdict})${e.corrected ? ", corrected" : ""}`,
    ...(c.workflow.file !== undefined ? { workflowFile: path.resolve(path.dirname(f.path), c.workflow.file) } : {}),
    provenance: c.provenance,
  };
}

/** The id of a case's TestItem; a result line from `eval --json` names the same file and case id. */
export function caseItemId(file: string, caseId: string): string {
  return `case:${file}#${caseId}`;
}

/** The line holding the case's `id` (JSON `"id": "x"`, YAML `id: x`); 0 when not found. */
export function lineOfCase(text: string, caseId: string): number {
  const escaped = caseId.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const re = new RegExp(`(^|[\\s"'{,])"?id"?\\s*:\\s*["']?${escaped}["']?\\s*,?\\s*$`);
  const i = text.split("\n").findIndex((l) => re.test(l));
  return Math.max(0, i);
}

/** Every case of the tree, flat. */
export function allCases(tree: EvalTree): EvalCaseNode[] {
  return tree.workflows.flatMap((w) => w.steps.flatMap((s) => s.cases));
}

/**
 * The cases a saved file re-runs in a continuous run: the cases that run with that workflow file,
 * or, for a saved eval file, its own cases.
 */
export function casesAffectedBy(tree: EvalTree, saved: string): EvalCaseNode[] {
  return allCases(tree).filter((c) => c.workflowFile === saved || c.file === saved);
}

// ---- results ----------------------------------------------------------------------------------

export type CaseOutcome =
  | { kind: "passed"; durationMs: number }
  | { kind: "failed"; durationMs: number; message: string; expected: string; actual: string }
  | { kind: "errored"; durationMs: number; message: string };

/**
 * What the view shows for one case's result. A failure compares, as text a diff editor shows line
 * by line, the action, the verdict and the commit rules' results. An eval case records no rule
 * results of its own: for an expected `accepted` every rule passes (that is what accepted means);
 * otherwise the expected side says the case does not record which rule fails, rather than
 * inventing one.
 */
export function outcomeOf(r: EvalCaseRun): CaseOutcome {
  const durationMs = r.durationMs;
  if (r.error) return { kind: "errored", durationMs, message: `${r.error.code}: ${r.error.message}` };
  if (!r.got) return { kind: "errored", durationMs, message: "the CLI gave no result for this case" };
  if (r.passed) return { kind: "passed", durationMs };
  const rules = r.got.rules;
  const expectedRules =
    r.expected.verdict === "accepted"
      ? rules.map((rule) => `  ${rule.name}: pass`)
      : [`  (not recorded in the eval case: a rule ${r.expected.verdict === "rejected" ? "rejects" : "escalates"})`];
  const expected = [`action: ${r.expected.action ?? "(no valid proposal)"}`, `verdict: ${r.expected.verdict}`, "rules:", ...expectedRules];
  const actual = [
    `action: ${r.got.action ?? "(no valid proposal)"}`,
    `verdict: ${r.got.verdict}`,
    "rules:",
    ...(rules.length
      ? rules.map((rule) => `  ${rule.name}: ${rule.ok ? "pass" : `FAIL: ${rule.message}`}`)
      : [`  (none ran: ${r.got.reason})`]),
  ];
  const what = [
    r.expected.action !== r.got.action ? `action ${r.got.action ?? "(none)"}, expected ${r.expected.action ?? "(none)"}` : "",
    r.expected.verdict !== r.got.verdict ? `verdict ${r.got.verdict}, expected ${r.expected.verdict}` : "",
  ].filter(Boolean);
  const notes = r.notes.length ? ` (${r.notes.join("; ")})` : "";
  return {
    kind: "failed",
    durationMs,
    message: `${r.id}: ${what.join("; ")}${notes}`,
    expected: expected.join("\n") + "\n",
    actual: actual.join("\n") + "\n",
  };
}
