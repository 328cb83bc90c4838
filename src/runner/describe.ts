import { fork } from "node:child_process";
import path from "node:path";
import { errorMessage, isCasefileError, WorkflowDefinitionError, zodIssue } from "../engine/errors";
import { DescribedSchema, type Described, type WorkflowProblem } from "../protocol/describe";
import { z } from "zod";
import { loadWorkflow } from "./bundle";

/**
 * Bundles and builds a workflow file in this process and says what it is: its graph, or every
 * problem found (validation problems naming executor and key; a bundling error with its file, line
 * and column). Runs user code: call it only in a child process (describeMain.ts) or a test.
 */
export async function describeWorkflow(file: string): Promise<Described> {
  try {
    const { workflow, inputs } = await loadWorkflow(file);
    const inputSchema = workflow.input ? jsonSchemaOf(workflow.input) : undefined;
    return JSON.parse(
      JSON.stringify({ ok: true, name: workflow.name, version: workflow.version, graph: workflow.graph, inputs, inputSchema }),
    ) as Described;
  } catch (e) {
    return { ok: false, problems: problemsOf(e, path.resolve(file)) };
  }
}

/** The input schema as JSON Schema; undefined when zod cannot express it (a transform, a refinement on a custom type). */
function jsonSchemaOf(schema: z.ZodType): Record<string, unknown> | undefined {
  try {
    return z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

function problemsOf(e: unknown, file: string): WorkflowProblem[] {
  if (e instanceof WorkflowDefinitionError || (isCasefileError(e) && Array.isArray(e.details?.problems))) {
    const problems = (e as WorkflowDefinitionError).problems;
    if (problems.length) return problems.map((p) => ({ ...p, file }));
  }
  if (isCasefileError(e)) {
    const d = e.details ?? {};
    const where =
      e.code === "BUNDLE_FAILED" && typeof d.file === "string"
        ? { file: path.resolve(d.file), line: Number(d.line) || 1, column: Number(d.column) || 0 }
        : { file };
    return [{ code: e.code, message: e.message, ...where }];
  }
  return [{ code: "INVALID_WORKFLOW", message: errorMessage(e), file }];
}

/**
 * Forks dist/describe.js for one workflow file and returns what it reports. The child is killed
 * after `timeoutMs`; a child that dies or answers malformed JSON is reported as a problem.
 */
export function describeInChild(
  describePath: string,
  workflowPath: string,
  opts: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<Described> {
  return new Promise((resolve) => {
    const child = fork(describePath, [workflowPath], {
      execArgv: [],
      env: opts.env ?? process.env,
      cwd: path.dirname(workflowPath),
      stdio: ["ignore", "ignore", "pipe", "ipc"],
      serialization: "json",
    });
    let settled = false;
    const stderr: string[] = [];
    const settle = (d: Described): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(d);
    };
    const fail = (message: string): void => settle({ ok: false, problems: [{ code: "RUNNER_CRASHED", message, file: workflowPath }] });
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      fail(`loading the workflow took longer than ${opts.timeoutMs ?? 30000} ms`);
    }, opts.timeoutMs ?? 30000);
    child.stderr?.on("data", (d: Buffer) => stderr.push(d.toString("utf8")));
    child.on("message", (raw: unknown) => {
      const parsed = DescribedSchema.safeParse(raw);
      if (parsed.success) settle(parsed.data);
      else fail(`the describe process answered a malformed message: ${zodIssue(parsed.error).message}`);
    });
    child.on("exit", (code, signal) =>
      fail(`the describe process exited ${signal ? `on ${signal}` : `with code ${code}`}: ${stderr.join("").trim().slice(-2000)}`),
    );
  });
}
