import { z } from "zod";

/**
 * Messages between the extension host and the Workflow Graph webview, and the graph's view model.
 * Both sides import this module and parse what they receive; whatever fails to parse is dropped
 * and logged, and the panel keeps what it shows.
 *
 * The view model is the workflow's own GraphDescription (src/engine/workflow.ts: `workflow.graph`)
 * as the runner reports it, with the file it came from and what is running now, if anything.
 */

const Name = z.string().min(1).max(200);

export const ExecutorKindSchema = z.enum(["code", "loader", "agent", "commit", "effect", "request"]);

export const GraphExecutorSchema = z.object({
  id: Name,
  kind: ExecutorKindSchema,
  reads: z.array(Name),
  owns: z.array(Name),
  description: z.string().optional(),
});

export const GraphEdgeSchema = z.object({
  id: Name,
  from: z.array(Name).min(1),
  to: z.array(Name).min(1),
  conditional: z.boolean(),
  label: z.string().optional(),
});

/** `extractOf`: an extract from a long document, made by the engine from that fact key (no owner). */
export const GraphKeySchema = z.object({ key: Name, fact: z.boolean(), owner: Name.optional(), extractOf: Name.optional() });

/**
 * What is running. `runner`: the executors of the superstep a run is executing now, as its events
 * say. `checkpoint`: no run is going; the executors pending at the latest checkpoint of the case
 * file (the superstep that runs next on resume).
 */
export const GraphLiveSchema = z.object({
  source: z.enum(["runner", "checkpoint"]),
  runId: z.string(),
  superstep: z.number().int().nonnegative(),
  executors: z.array(Name),
});

export const GraphViewModelSchema = z.object({
  v: z.literal(1),
  workflow: z.object({ name: z.string(), version: z.number().int(), file: z.string() }),
  start: Name,
  executors: z.array(GraphExecutorSchema),
  edges: z.array(GraphEdgeSchema),
  keys: z.array(GraphKeySchema),
  live: GraphLiveSchema.nullable(),
});

export const HostToGraphSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("load"), model: GraphViewModelSchema }),
  z.object({ type: z.literal("live"), live: GraphLiveSchema.nullable() }),
  z.object({ type: z.literal("notice"), level: z.enum(["info", "warning", "error"]), message: z.string() }),
]);

export const GraphToHostSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("ready") }),
  /** The person clicked a node: the host reveals the executor's definition in the workflow file. */
  z.object({ type: z.literal("revealExecutor"), executor: Name }),
]);

export type GraphViewModel = z.infer<typeof GraphViewModelSchema>;
export type GraphExecutorView = z.infer<typeof GraphExecutorSchema>;
export type GraphEdgeView = z.infer<typeof GraphEdgeSchema>;
export type GraphLive = z.infer<typeof GraphLiveSchema>;
export type HostToGraph = z.infer<typeof HostToGraphSchema>;
export type GraphToHost = z.infer<typeof GraphToHostSchema>;

type Parsed<T> = { ok: true; message: T } | { ok: false; error: string };

function parse<T>(schema: z.ZodType<T>, data: unknown): Parsed<T> {
  const r = schema.safeParse(data);
  return r.success ? { ok: true, message: r.data } : { ok: false, error: z.prettifyError(r.error) };
}

/** Parses a message from the graph webview (host side). */
export const parseGraphMessage = (data: unknown): Parsed<GraphToHost> => parse(GraphToHostSchema, data);
/** Parses a message from the host (webview side). */
export const parseGraphHostMessage = (data: unknown): Parsed<HostToGraph> => parse(HostToGraphSchema, data);

/** The graph description a workflow carries (`workflow.graph`, src/engine/workflow.ts), as plain JSON. */
export interface GraphDescriptionJson {
  start: string;
  executors: { id: string; kind: GraphExecutorView["kind"]; reads: string[]; owns: string[]; description?: string }[];
  edges: { id: string; from: string[]; to: string[]; conditional: boolean; label?: string }[];
  keys: { key: string; fact: boolean; owner?: string }[];
}

/** The view model for a workflow's graph; optional fields left undefined are dropped, so it is plain JSON. */
export function graphViewModel(
  workflow: { name: string; version: number; file: string },
  graph: GraphDescriptionJson,
  live: GraphLive | null,
): GraphViewModel {
  return GraphViewModelSchema.parse(JSON.parse(JSON.stringify({ v: 1, workflow, ...graph, live })));
}
