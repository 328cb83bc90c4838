import path from "node:path";
import { CasefileError, zodIssue } from "./errors";
import type { Json } from "./records";
import { parseSafely, type WorkflowSpec } from "./workflow";

/**
 * Where a new run's case is kept: one case file per case. Called by the runner before it opens
 * (and so creates) the case file, and by the CLI and the editor when no case file is named.
 * Pure: no file is touched, so an input refused here leaves nothing behind.
 */

/** Characters a case id may keep in a file name; anything else becomes `_` (a slash never makes a folder). */
const UNSAFE = /[^A-Za-z0-9._-]+/g;

/**
 * The input checked against the workflow's input schema (INVALID_INPUT naming the field), then
 * the workflow's `caseId` applied to the parsed input: the case's id as a file-name-safe string,
 * or undefined when the workflow declares no `caseId`.
 */
export function caseIdOf(workflow: Pick<WorkflowSpec, "name" | "input" | "caseId">, input: Json | undefined): string | undefined {
  let value: unknown = input ?? null;
  if (workflow.input) {
    const parsed = parseSafely(workflow.input, value);
    if (!parsed.success) {
      const { at, message } = zodIssue(parsed.error);
      throw new CasefileError("INVALID_INPUT", `input of workflow "${workflow.name}" is invalid at "${at}": ${message}`);
    }
    value = parsed.data;
  }
  if (!workflow.caseId) return undefined;
  let id: unknown;
  try {
    id = workflow.caseId(value);
  } catch (e) {
    throw new CasefileError("INVALID_INPUT", `caseId of workflow "${workflow.name}" threw: ${(e as Error).message}`);
  }
  const raw = typeof id === "number" ? String(id) : id;
  if (typeof raw !== "string" || raw.trim() === "")
    throw new CasefileError(
      "INVALID_INPUT",
      `caseId of workflow "${workflow.name}" gave ${JSON.stringify(id) ?? "undefined"}, not a non-empty string`,
    );
  const safe = raw.trim().replace(UNSAFE, "_").replace(/^\.+/, "_");
  return safe;
}

/**
 * The default case file of a run of `workflowPath`:
 *   with a case id: `<folder>/<caseId>.casefile`, folder `cases/` beside the workflow unless given;
 *   without one: `<folder>/<workflow>.casefile`, folder the workflow's own unless given.
 * `folder` (the casefile.caseFileFolder setting, or the CLI's --case-folder) is relative to `root`.
 */
export function defaultCaseFile(workflowPath: string, caseId: string | undefined, opts: { folder?: string; root?: string } = {}): string {
  const dir = path.dirname(path.resolve(workflowPath));
  const name = caseId !== undefined ? `${caseId}.casefile` : path.basename(workflowPath).replace(/\.[cm]?[tj]s$/, "") + ".casefile";
  if (opts.folder) return path.resolve(opts.root ?? dir, opts.folder, name);
  return caseId !== undefined ? path.join(dir, "cases", name) : path.join(dir, name);
}
