import { createRequire } from "node:module";
import path from "node:path";
import vm from "node:vm";
import * as runtime from "../engine/index";
import * as zod from "zod";
import { CasefileError, errorMessage, isCasefileError } from "../engine/errors";
import type { Workflow } from "../engine/workflow";
import { buildWorkflow, type WorkflowBuild } from "./bundleCache";

/** The modules a workflow file may import without an npm install of its own. */
const PROVIDED: Record<string, unknown> = { casefile: runtime, zod };

export interface LoadedWorkflow {
  workflow: Workflow;
  path: string;
  /** Files the bundle was built from, for watching and for diagnostics. */
  inputs: string[];
}

/**
 * Bundles a workflow `.ts` file with esbuild and evaluates it. Imports of `casefile` and `zod`
 * resolve to the copies inside the extension (the runner's own modules, so the workflow and
 * the engine share one runtime); anything else is bundled from the user's folder. Only the
 * runner calls this, and only for a workflow file in a trusted workspace: it runs user code.
 */
export async function loadWorkflow(file: string): Promise<LoadedWorkflow> {
  const abs = path.resolve(file);
  let result: WorkflowBuild;
  try {
    // esbuild is loaded (by buildWorkflow) only when the bundle is not cached: it is heavy.
    result = await buildWorkflow({
      entryPoints: [abs],
      bundle: true,
      write: false,
      metafile: true,
      platform: "node",
      format: "cjs",
      target: "node18",
      // Inline, with `sources` relative to the workflow's folder (the output file named here is
      // never written): js-debug, attached to the runner for breakpoints in executor code, finds
      // the user's own file through it.
      sourcemap: "inline",
      sourcesContent: false,
      outfile: bundleFileOf(abs),
      logLevel: "silent",
      external: Object.keys(PROVIDED),
    });
  } catch (e) {
    const errors = (e as { errors?: import("esbuild").Message[] }).errors ?? [];
    const first = errors[0];
    const where = first?.location ? `${first.location.file}:${first.location.line}:${first.location.column + 1}` : abs;
    throw new CasefileError("BUNDLE_FAILED", `cannot bundle workflow ${where}: ${first?.text ?? errorMessage(e)}`, {
      file: first?.location?.file ?? abs,
      line: first?.location?.line ?? 0,
      column: first?.location?.column ?? 0,
    });
  }
  const code = result.outputFiles[0]!.text;
  const userRequire = createRequire(abs);
  const module = { exports: {} as Record<string, unknown> };
  // The wrapper stays on the bundle's first line so the source map's lines still hold. The script
  // is named as the bundle, not as the .ts file: a debugger would otherwise bind a breakpoint set
  // in workflow.ts at that line of the bundle as well as at its mapped place.
  const wrapper = vm.runInThisContext(`(function (exports, require, module, __filename, __dirname) {${code}\n})`, {
    filename: bundleFileOf(abs),
  });
  const req = (id: string): unknown => (id in PROVIDED ? PROVIDED[id] : userRequire(id));
  try {
    wrapper(module.exports, req, module, abs, path.dirname(abs));
  } catch (e) {
    // defineWorkflow's own refusals are typed already; anything else the file's top level threw
    // (a text file, a missing import, a bug) is said in one line naming the file.
    if (isCasefileError(e)) throw e;
    throw new CasefileError("INVALID_WORKFLOW", `loading workflow ${abs} threw: ${errorMessage(e)}`, { file: abs });
  }

  const exported = module.exports.default ?? module.exports.workflow;
  if (!isWorkflow(exported)) {
    throw new CasefileError("INVALID_WORKFLOW", `${abs} does not export a workflow: write \`export default defineWorkflow({ ... })\``, {
      file: abs,
    });
  }
  return { workflow: exported, path: abs, inputs: Object.keys(result.metafile.inputs).map((p) => path.resolve(p)) };
}

/** The name a workflow's bundle runs under, beside the workflow file (never written to disk). */
export function bundleFileOf(workflowFile: string): string {
  return path.join(path.dirname(workflowFile), `${path.basename(workflowFile).replace(/\.[cm]?ts$/, "")}.casefile-bundle.js`);
}

function isWorkflow(v: unknown): v is Workflow {
  return (
    typeof v === "object" && v !== null && typeof (v as Workflow).graphHash === "string" && typeof (v as Workflow).executors === "object"
  );
}
