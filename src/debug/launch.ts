import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import type { Json } from "../engine/records";
import { LaunchArgumentsSchema, type LaunchArguments } from "../protocol/debug";
import type { RunCommand } from "../protocol/runner";
import type { CaseReader } from "./caseReader";
import { scanExecutors, type ExecutorSource } from "./executorSources";

/**
 * A `launch` request made ready to run: the attributes parsed (LaunchArgumentsSchema), files
 * resolved against the adapter's working directory, the input file read, a resumed checkpoint
 * found, the executors' definitions scanned. Called by the session (session.ts) once per launch;
 * a bad launch throws a LaunchError naming the attribute at fault.
 */

export class LaunchError extends Error {
  readonly code = "INVALID_LAUNCH";
}

export interface Launch {
  args: LaunchArguments;
  caseFile: string;
  workflowFile: string;
  sources: ExecutorSource[];
}

/** `reader` opens the case file once `caseFile` (set first) names it. */
export async function prepareLaunch(raw: unknown, reader: CaseReader, setCaseFile: (file: string) => void): Promise<Launch> {
  const parsed = LaunchArgumentsSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const at = issue.path.join(".") || "(configuration)";
    throw new LaunchError(`launch attribute "${at}" is invalid: ${issue.message}`);
  }
  const args = parsed.data;
  const base = process.cwd();
  const workflow = args.workflow ? path.resolve(base, args.workflow) : undefined;
  if (workflow && !existsSync(workflow)) throw launchError("workflow", `no workflow file at ${workflow}`);
  const caseFile = path.resolve(base, args.resumeFrom?.caseFile ?? args.caseFile ?? workflow!.replace(/\.[cm]?[tj]s$/, "") + ".casefile");
  setCaseFile(caseFile);
  if (args.inputFile) {
    const file = path.resolve(base, args.inputFile);
    let textIn: string;
    try {
      textIn = readFileSync(file, "utf8");
    } catch (e) {
      throw launchError("inputFile", `cannot read ${file}: ${(e as Error).message}`);
    }
    try {
      args.input = JSON.parse(textIn) as Json;
    } catch (e) {
      throw launchError("inputFile", `${file} is not JSON: ${(e as Error).message}`);
    }
  }
  let recorded: string | undefined;
  if (args.resumeFrom) {
    if (!existsSync(caseFile)) throw launchError("resumeFrom.caseFile", `no case file at ${caseFile}`);
    const store = await reader.snapshot();
    const cp = store.getCheckpoint(args.resumeFrom.checkpoint);
    if (!cp) {
      const runs = store.listRuns().map((r) => r.id);
      throw launchError(
        "resumeFrom.checkpoint",
        `no checkpoint "${args.resumeFrom.checkpoint}" in ${caseFile}${runs.length ? ` (runs: ${runs.slice(0, 5).join(", ")})` : ""}`,
      );
    }
    recorded = store.getRun(cp.runId)?.workflow.path;
  }
  const file = workflow ?? recorded;
  if (!file) throw launchError("workflow", "the resumed run did not record its workflow file: set `workflow`");
  const workflowFile = path.resolve(file);
  const sources = existsSync(workflowFile) ? scanExecutors(readFileSync(workflowFile, "utf8")) : [];
  return { args, caseFile, workflowFile, sources };
}

/** The runner's first command: a new run, or a resume from `resumeFrom` (with its patch). */
export function firstCommand(l: Launch): RunCommand {
  const a = l.args;
  if (a.resumeFrom) {
    return {
      kind: "resume",
      caseFile: l.caseFile,
      checkpointId: a.resumeFrom.checkpoint,
      workflowPath: l.workflowFile,
      ...(a.patch ? { patch: a.patch } : {}),
    };
  }
  return { kind: "run", workflowPath: l.workflowFile, caseFile: l.caseFile, ...(a.input !== undefined ? { input: a.input } : {}) };
}

function launchError(attribute: string, message: string): LaunchError {
  return new LaunchError(`launch attribute "${attribute}": ${message}`);
}
