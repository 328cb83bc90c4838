import { z } from "zod";
import { GraphEdgeSchema, GraphExecutorSchema, GraphKeySchema } from "./graph";

/**
 * What the describe child process (dist/describe.js, src/runner/describeMain.ts) reports about one
 * workflow file: its graph, or every problem that stops it from building. Loading a workflow runs
 * its code, so the extension asks a child process, and only in a trusted workspace. One message,
 * parsed by the host with this schema.
 */

export const WorkflowProblemSchema = z.object({
  code: z.string(),
  message: z.string(),
  executor: z.string().optional(),
  key: z.string().optional(),
  /** Where a bundling error points (1-based line, 0-based column, as esbuild reports them). */
  file: z.string().optional(),
  line: z.number().int().optional(),
  column: z.number().int().optional(),
});
export type WorkflowProblem = z.infer<typeof WorkflowProblemSchema>;

export const DescribedSchema = z.discriminatedUnion("ok", [
  z.object({
    ok: z.literal(true),
    name: z.string(),
    version: z.number().int(),
    graph: z.object({
      start: z.string(),
      executors: z.array(GraphExecutorSchema),
      edges: z.array(GraphEdgeSchema),
      keys: z.array(GraphKeySchema),
    }),
    /** Files the bundle was built from. */
    inputs: z.array(z.string()),
    /**
     * The JSON Schema of the run's input (zod 4's `toJSONSchema` of the workflow's `input`), for
     * the forms that ask for it (F5 with no launch.json). Absent when the workflow declares no
     * input schema or it has no JSON Schema form (a transform, a custom check).
     */
    inputSchema: z.record(z.string(), z.unknown()).optional(),
  }),
  z.object({ ok: z.literal(false), problems: z.array(WorkflowProblemSchema).min(1) }),
]);
export type Described = z.infer<typeof DescribedSchema>;
