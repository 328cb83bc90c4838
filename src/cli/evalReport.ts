import type { ChatMessage, RuleResult, Verdict } from "../engine/records";

/**
 * How `casefile eval` reports its cases: a table on stdout and, with --junit, a JUnit XML file
 * for CI. Pure: results in, text out (evalCommands.ts runs the cases and writes the file).
 */

/** One eval case's outcome, as runEval gathers it. */
export interface CaseResult {
  file: string;
  id: string;
  step: string;
  workflow: { name: string; version: number };
  expected: { action: string | null; verdict: Verdict };
  /** The proposal's action, the commit rules' verdict and reason, and each rule's result. */
  got?: {
    action: string | null;
    verdict: Verdict;
    reason: string;
    /** Each commit rule's result. */
    rules: Pick<RuleResult, "name" | "ok" | "message">[];
    /** What was sent: the messages (recorded, or rebuilt by an experiment's workflow), model and hash. */
    request?: { messages: ChatMessage[]; model: string; hash: string };
    /** As the provider reported it (the recorded answer reports none). */
    usage?: { promptTokens?: number; completionTokens?: number; totalTokens?: number };
    /** How long the model call took. */
    modelMs?: number;
  };
  /** Set when the case could not be run at all (workflow, provider or case file fault). */
  error?: { code: string; message: string };
  /** Where the case was recorded (the eval case's provenance). */
  provenance: { caseFile: string; runId: string; superstep: number; agentCallId: string };
  notes: string[];
  passed: boolean;
  durationMs: number;
}

/** The table printed after the cases ran: one row per case, expected against got, with notes. */
export function formatTable(results: CaseResult[]): string {
  const fmt = (o: { action: string | null; verdict: string } | undefined) => (o ? `${o.action ?? "(none)"} / ${o.verdict}` : "-");
  const rows = [
    ["result", "case", "step", "expected", "got", "notes"],
    ...results.map((r) => [
      r.passed ? "PASS" : "FAIL",
      r.id,
      r.step,
      fmt(r.expected),
      r.error ? "error" : fmt(r.got),
      [...r.notes, r.error ? errorText(r.error) : ""].filter(Boolean).join("; "),
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

const errorText = (e: { code: string; message: string }) => `${e.code}: ${e.message}`;

function xml(s: string): string {
  return s
    .replace(/[<>&"']/g, (ch) => ({ "<": "&lt;", ">": "&gt;", "&": "&amp;", '"': "&quot;", "'": "&apos;" })[ch]!)
    .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f]/g, "");
}

/** One testsuite, one testcase per eval case: a wrong action or verdict is a failure, a case that could not run an error. */
export function toJUnit(results: CaseResult[]): string {
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
    if (r.error) lines.push(`      <error message="${xml(errorText(r.error))}"/>`);
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
