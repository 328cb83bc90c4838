import { z } from "zod";
import { describeReturned, WorkflowDefinitionError, type ErrorCode } from "./errors";
import type { EdgeSpec, ExecutorSpec, ExtractKey, FactKey, KeyDecl, StateShape } from "./executors";
import { stableHash } from "./hash";
import type { Json, StepKind } from "./records";

const STEP_KINDS: readonly StepKind[] = ["code", "loader", "agent", "commit", "effect", "request"];

export interface WorkflowSpec {
  name: string;
  version: number;
  state: StateShape;
  executors: Record<string, ExecutorSpec>;
  edges: readonly EdgeSpec[];
  start: string;
  /** Schema of the run's input, delivered to `start` as its first message. */
  input?: z.ZodType;
  /**
   * How a case is named from its (parsed) input, e.g. `(input) => input.invoiceId`: a new run's
   * case file is then `cases/<caseId>.casefile` beside the workflow (caseName.ts), so each
   * invoice has its own history instead of showing as a branch of another's.
   */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the input's type is the workflow's own
  caseId?: (input: any) => string;
  /**
   * State migrations keyed by the version they migrate *to*: `{ 2: (state) => state }` turns a
   * version-1 checkpoint's state into version 2. Applied in order on resume. The object form also
   * routes the messages a checkpoint holds for executors the new version removed:
   * `{ 2: { state: (s) => s, messages: { review: "approve", audit: null } } }` (null drops them
   * on purpose); a message for a removed executor that no migration routes refuses the resume.
   */
  migrations?: Record<number, Migration>;
}

export type MigrateState = (state: Record<string, Json>) => Record<string, Json>;
export type Migration = MigrateState | { state?: MigrateState; messages?: Record<string, string | null> };

export interface Edge {
  /** Stable id: `from->to`, used to key fan-in buffers in checkpoints. */
  id: string;
  from: string[];
  to: string[];
  when?: EdgeSpec["when"];
  label?: string;
}

export interface Workflow extends Omit<WorkflowSpec, "edges"> {
  readonly edges: Edge[];
  /** key -> the executor that owns it. */
  readonly owners: Record<string, string>;
  readonly factKeys: ReadonlySet<string>;
  /** Extract key -> its declaration (the fact it is taken from and the extractor). */
  readonly extracts: Readonly<Record<string, ExtractKey>>;
  /** Hash of the graph's shape (executors, kinds, keys, edges), stored in every checkpoint. */
  readonly graphHash: string;
  /** A plain description of the graph, for the graph view and `inspect`. */
  readonly graph: GraphDescription;
}

export interface GraphDescription {
  start: string;
  executors: { id: string; kind: StepKind; reads: string[]; owns: string[]; description?: string }[];
  edges: { id: string; from: string[]; to: string[]; conditional: boolean; label?: string }[];
  /** `extractOf`: for an extract key, the fact key it is taken from (extracts have no owner). */
  keys: { key: string; fact: boolean; owner?: string; extractOf?: string }[];
}

export { ApprovalAnswer } from "./executors";

export function isFactKey(decl: KeyDecl): decl is FactKey {
  return typeof decl === "object" && decl !== null && (decl as FactKey).kind === "fact" && "schema" in decl;
}

export function isExtractKey(decl: KeyDecl): decl is ExtractKey {
  return typeof decl === "object" && decl !== null && (decl as ExtractKey).kind === "extract" && "schema" in decl;
}

const ProvenanceSchema = z.object({ source: z.string(), sourceVersion: z.string(), readAt: z.string() });

/** The schema a key's stored value must satisfy (facts are wrapped with provenance, extracts with their source). */
export function keySchema(decl: KeyDecl): z.ZodType {
  if (isFactKey(decl)) return z.object({ value: decl.schema, provenance: ProvenanceSchema });
  if (isExtractKey(decl))
    return z.object({
      value: decl.schema,
      from: z.string(),
      source: z.string(),
      sourceVersion: z.string(),
      sourceHash: z.string(),
      extractedAt: z.string(),
    });
  return decl;
}

/** What a failed parse says: the zod error's issues, or the one a throwing schema is turned into. */
export type ParseResult<T> = { success: true; data: T } | { success: false; error: { issues: { path: PropertyKey[]; message: string }[] } };

/**
 * A workflow author's schema parsing a value, with a throw inside the schema (a `refine` or
 * `transform` that throws) turned into a failed parse, "its schema threw: ...", at the root of
 * the value. Every parse of a value by a schema the workflow declares (state keys, input,
 * proposal, answer) goes through here, so a broken schema is reported by each caller's own typed
 * error naming the key or step, never as an untyped throw.
 */
export function parseSafely<T>(schema: z.ZodType<T>, value: unknown): ParseResult<T> {
  try {
    const r = schema.safeParse(value);
    return r.success ? { success: true, data: r.data } : { success: false, error: { issues: r.error.issues } };
  } catch (e) {
    return {
      success: false,
      error: { issues: [{ path: [], message: `its schema threw: ${e instanceof Error ? e.message : String(e)}` }] },
    };
  }
}

type Problem = { code: ErrorCode; message: string; executor?: string; key?: string };

/**
 * Builds a workflow and checks it as a whole. Every problem found is reported at once, each
 * naming the executor and key at fault; a workflow with any problem is never run.
 */
export function defineWorkflow(spec: WorkflowSpec): Workflow {
  const problems: Problem[] = [];
  const stateKeys = new Set(Object.keys(spec.state ?? {}));
  const executorIds = Object.keys(spec.executors ?? {});
  const owners: Record<string, string> = {};
  const factKeys = new Set([...stateKeys].filter((k) => isFactKey(spec.state[k]!)));
  const extracts: Record<string, ExtractKey> = {};
  for (const key of stateKeys) {
    const decl = spec.state[key]!;
    if (isExtractKey(decl)) {
      extracts[key] = decl;
      checkExtract(key, decl, spec.state, problems);
    } else if (!isFactKey(decl) && typeof (decl as { safeParse?: unknown } | null)?.safeParse !== "function") {
      // Plain JavaScript can declare anything (a misspelled schema import is undefined): found
      // here, where it would otherwise fail the run at the key's first write ("wrote unknown state key").
      problems.push({
        code: "INVALID_WORKFLOW",
        key,
        message: `state key "${key}" is declared as ${describeReturned(decl)}, not a zod schema, fact(schema) or extract(schema, ...)`,
      });
    }
  }

  if (!spec.name) problems.push({ code: "INVALID_WORKFLOW", message: "workflow has no name" });
  if (!Number.isInteger(spec.version) || spec.version < 1)
    problems.push({ code: "INVALID_WORKFLOW", message: `workflow "${spec.name}": version must be a positive integer` });

  for (const id of executorIds) {
    const ex = spec.executors[id]!;
    if (!STEP_KINDS.includes(ex.kind)) {
      // Plain JavaScript can name any kind: refused here, before a run does the steps before it
      // (effects included) and fails only on reaching this one.
      problems.push({
        code: "INVALID_WORKFLOW",
        executor: id,
        message: `executor "${id}" is of kind ${describeReturned(ex.kind)}; an executor is one of ${STEP_KINDS.join(", ")}`,
      });
      continue;
    }
    for (const key of ex.owns ?? []) {
      if (!stateKeys.has(key)) {
        problems.push({ code: "UNKNOWN_KEY", executor: id, key, message: `executor "${id}" owns unknown state key "${key}"` });
        continue;
      }
      if (extracts[key]) {
        problems.push({
          code: "EXTRACT_OWNED",
          executor: id,
          key,
          message: `executor "${id}" owns extract key "${key}": the engine makes extracts from their fact ("${extracts[key].from}"), no executor writes them`,
        });
        continue;
      }
      const other = owners[key];
      if (other !== undefined) {
        problems.push({
          code: "DUPLICATE_OWNER",
          executor: id,
          key,
          message: `state key "${key}" is owned by both "${other}" and "${id}": each key has exactly one owning executor`,
        });
      } else owners[key] = id;
      if (factKeys.has(key) && ex.kind !== "loader") {
        problems.push({
          code: "FACT_WRITER_NOT_LOADER",
          executor: id,
          key,
          message: `executor "${id}" (${ex.kind}) owns fact key "${key}": only loaders may write facts`,
        });
      }
    }
    for (const key of ex.reads ?? []) {
      if (!stateKeys.has(key))
        problems.push({ code: "UNKNOWN_KEY", executor: id, key, message: `executor "${id}" reads unknown state key "${key}"` });
    }
    if (ex.kind === "agent") checkProposalSchema(id, ex.proposal, problems);
  }

  const edges: Edge[] = [];
  (spec.edges ?? []).forEach((e, i) => {
    const from = ([] as string[]).concat(e.from);
    const to = ([] as string[]).concat(e.to);
    for (const end of [...from, ...to]) {
      if (!spec.executors?.[end])
        problems.push({
          code: "UNKNOWN_EXECUTOR",
          executor: end,
          message: `edge #${i} (${from.join("+")} -> ${to.join("+")}) names unknown executor "${end}"`,
        });
    }
    edges.push({ id: `${from.join("+")}->${to.join("+")}`, from, to, when: e.when, label: e.label });
  });

  if (!spec.executors?.[spec.start]) {
    problems.push({ code: "UNKNOWN_EXECUTOR", executor: spec.start, message: `start executor "${spec.start}" is not defined` });
  } else {
    // An executor no edge path leads to is named as such; a fan-in's target is not named too when
    // a source of it is: connecting the source is the fix.
    const linked = reach([spec.start], edges, "some");
    for (const id of executorIds) {
      if (!linked.has(id))
        problems.push({
          code: "UNREACHABLE_EXECUTOR",
          executor: id,
          message: `executor "${id}" is unreachable: no edge path leads to it from "${spec.start}"`,
        });
    }
    // The engine fires a fan-in only once every source has sent: one whose source is reached only
    // through its own target (directly, or through other fan-ins that wait on it) never fires, and
    // the run would end with the other sources' payloads left in its buffer.
    const runs = reach([spec.start], edges, "every");
    for (const e of edges) {
      if (e.from.length < 2 || e.from.every((f) => runs.has(f))) continue;
      const after = reach(e.to, edges, "some");
      const waiting = e.from.filter((f) => !runs.has(f) && after.has(f));
      if (waiting.length === 0) continue;
      const to = e.to.length === 1 ? e.to[0]! : `[${e.to.join(", ")}]`;
      problems.push({
        code: "UNREACHABLE_EXECUTOR",
        executor: e.to[0]!,
        message:
          `fan-in [${e.from.join(", ")}] → ${to} can never fire: ${words(waiting, "and")} ${waiting.length === 1 ? "is" : "are"} ` +
          `reached only through ${words(e.to, "or")}, which ${e.to.length === 1 ? "runs" : "run"} only once every source has sent`,
      });
    }
  }

  if (problems.length > 0) throw new WorkflowDefinitionError(problems);

  const graph: GraphDescription = {
    start: spec.start,
    executors: executorIds.map((id) => {
      const ex = spec.executors[id]!;
      return { id, kind: ex.kind, reads: [...(ex.reads ?? [])], owns: [...(ex.owns ?? [])], description: ex.description };
    }),
    edges: edges.map((e) => ({ id: e.id, from: e.from, to: e.to, conditional: e.when !== undefined, label: e.label })),
    keys: [...stateKeys].map((key) => ({
      key,
      fact: factKeys.has(key),
      owner: owners[key],
      ...(extracts[key] ? { extractOf: extracts[key].from } : {}),
    })),
  };
  // Only extract keys carry `extractOf`: the graph hash of a workflow without extracts is what it
  // was before extracts existed, so its case files resume without a "graph changed" warning.
  const graphHash = stableHash(graph).slice(0, 23);
  return { ...spec, edges, owners, factKeys, extracts, graphHash, graph };
}

/**
 * The executors reached from `from` along the edges. `some`: an edge is followed once any of its
 * sources is reached (a path exists at all). `every`: a fan-in is followed only once all of its
 * sources are, as the engine fires it.
 */
function reach(from: readonly string[], edges: readonly Edge[], sources: "some" | "every"): Set<string> {
  const reached = new Set(from);
  let grew = true;
  while (grew) {
    grew = false;
    for (const e of edges) {
      if (!(sources === "some" ? e.from.some((f) => reached.has(f)) : e.from.every((f) => reached.has(f)))) continue;
      for (const t of e.to) {
        if (!reached.has(t)) {
          reached.add(t);
          grew = true;
        }
      }
    }
  }
  return reached;
}

/** "b", "b and d", "b, d and e": names in a sentence. */
function words(names: readonly string[], last: "and" | "or"): string {
  return names.length === 1 ? names[0]! : `${names.slice(0, -1).join(", ")} ${last} ${names[names.length - 1]}`;
}

function checkExtract(key: string, decl: ExtractKey, state: StateShape, problems: Problem[]): void {
  const source = state[decl.from];
  if (typeof decl.from !== "string" || !source) {
    problems.push({
      code: "UNKNOWN_KEY",
      key,
      message: `extract "${key}" is taken from unknown state key ${JSON.stringify(decl.from)}; name the fact key holding the document`,
    });
  } else if (!isFactKey(source)) {
    problems.push({
      code: "EXTRACT_SOURCE_NOT_FACT",
      key,
      message: `extract "${key}" is taken from "${decl.from}", which is ${isExtractKey(source) ? "an extract" : "workflow state"}, not a fact: an extract needs a source id and version to be checked against`,
    });
  }
  if (typeof decl.run !== "function") {
    problems.push({ code: "INVALID_WORKFLOW", key, message: `extract "${key}" has no run(document, source) function` });
  }
}

function checkProposalSchema(id: string, schema: unknown, problems: Problem[]): void {
  const shape = (schema as { shape?: Record<string, unknown> } | undefined)?.shape;
  const missing = ["action", "reason", "facts"].filter((f) => !shape || !(f in shape));
  if (missing.length > 0) {
    problems.push({
      code: "INVALID_WORKFLOW",
      executor: id,
      message: `agent "${id}": proposal schema must be a z.object with ${missing.map((m) => `"${m}"`).join(", ")}`,
    });
  }
}

/** The fixed set of actions a proposal schema allows, when `action` is a z.enum. */
export function proposalActions(schema: z.ZodType): string[] | undefined {
  const action = (schema as unknown as { shape?: Record<string, { options?: unknown[] }> }).shape?.action;
  const options = action?.options;
  return Array.isArray(options) && options.every((o) => typeof o === "string") ? (options as string[]) : undefined;
}
