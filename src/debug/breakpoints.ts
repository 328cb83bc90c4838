import path from "node:path";
import type { Evaluation, EvaluationScope } from "../protocol/debug";
import { syntaxProblem } from "../runner/evaluate";
import { hitConditionMet, templateParts, text } from "./expression";
import { executorAtLine, type ExecutorSource } from "./executorSources";

/**
 * The session's breakpoints: line breakpoints in the workflow file (each bound to the executor
 * whose definition holds it, placed on its first line), function breakpoints by executor name,
 * and the exception filters. Asked at every superstep boundary which of them the executors due
 * next hit (session.ts). Pure bookkeeping; the session sends what it says.
 */

export interface BreakpointSpec {
  condition?: string;
  hitCondition?: string;
  logMessage?: string;
}

export interface BoundBreakpoint extends BreakpointSpec {
  id: number;
  /** The executor it stops before; undefined when unverified. */
  executor?: string;
  verified: boolean;
  line?: number;
  message?: string;
  hits: number;
  kind: "line" | "function";
}

/** What a boundary's check found: breakpoints that stop, and logpoint lines to print. */
export interface BoundaryHit {
  stop: BoundBreakpoint[];
  logs: string[];
  /**
   * Conditions that failed (threw, did not parse, ran over the time limit): their breakpoints
   * stop, as VS Code's JavaScript debugger does, and this says why (Debug Console and the stop).
   */
  problems: string[];
}

/** What the executors due at a boundary see: the state and each one's pending message. */
export interface BoundaryScope {
  executors: readonly string[];
  /** Loaded only when a breakpoint with a condition or a logpoint needs it. */
  scope?: (executor: string) => EvaluationScope;
}

/** Evaluates JavaScript expressions over a scope (the debug helper, src/debug/debugHelper.ts). */
export type Evaluator = (expressions: readonly string[], scope: EvaluationScope) => Promise<Evaluation[]>;

export class Breakpoints {
  private nextId = 1;
  private readonly lines = new Map<string, BoundBreakpoint[]>();
  private functions: BoundBreakpoint[] = [];

  constructor(
    private workflowFile: string | undefined,
    private sources: readonly ExecutorSource[],
  ) {}

  /** Called when the launch names the workflow; the line breakpoints already set are bound again. */
  setWorkflow(file: string, sources: readonly ExecutorSource[]): void {
    this.workflowFile = file;
    this.sources = sources;
  }

  /** Replaces the line breakpoints of one file (DAP setBreakpoints). */
  setLineBreakpoints(file: string, wanted: readonly (BreakpointSpec & { line: number })[]): BoundBreakpoint[] {
    const inWorkflow = this.workflowFile !== undefined && samePath(file, this.workflowFile);
    const bound = wanted.map((w): BoundBreakpoint => {
      const base = { id: this.nextId++, hits: 0, kind: "line" as const, ...spec(w) };
      if (!inWorkflow) {
        return {
          ...base,
          verified: false,
          line: w.line,
          message: this.workflowFile
            ? `not the workflow file: Casefile breakpoints go in ${path.basename(this.workflowFile)}, inside an executor's definition`
            : "no workflow is being debugged",
        };
      }
      const ex = executorAtLine(this.sources, w.line);
      if (!ex) {
        return {
          ...base,
          verified: false,
          line: w.line,
          message: `line ${w.line} is not inside an executor's definition: Casefile pauses at superstep boundaries, before an executor runs`,
        };
      }
      const problem = checkSpec(w);
      if (problem) return { ...base, verified: false, line: ex.line, executor: ex.name, message: problem };
      return { ...base, verified: true, line: ex.line, executor: ex.name };
    });
    this.lines.set(key(file), bound);
    return bound;
  }

  /** Replaces the function breakpoints (DAP setFunctionBreakpoints): one per executor name. */
  setFunctionBreakpoints(wanted: readonly (BreakpointSpec & { name: string })[], executors: readonly string[]): BoundBreakpoint[] {
    this.functions = wanted.map((w): BoundBreakpoint => {
      const base = { id: this.nextId++, hits: 0, kind: "function" as const, ...spec(w) };
      const known = executors.length === 0 || executors.includes(w.name);
      if (!known) {
        return { ...base, verified: false, message: `no executor "${w.name}" in the workflow; executors: ${executors.join(", ")}` };
      }
      const problem = checkSpec(w);
      const where = this.sources.find((s) => s.name === w.name);
      return {
        ...base,
        executor: w.name,
        verified: !problem,
        ...(where ? { line: where.line } : {}),
        ...(problem ? { message: problem } : {}),
      };
    });
    return this.functions;
  }

  /** Every verified breakpoint on these executors. */
  private on(executors: readonly string[]): BoundBreakpoint[] {
    const due = new Set(executors);
    return [...[...this.lines.values()].flat(), ...this.functions].filter((b) => b.verified && b.executor && due.has(b.executor));
  }

  /** Does any breakpoint on the executors due at this boundary need the state? */
  needsScope(executors: readonly string[]): boolean {
    return this.on(executors).some((b) => b.condition !== undefined || b.logMessage !== undefined);
  }

  /**
   * Called at a superstep boundary going forwards: evaluates conditions (one request per executor
   * due), counts hits, prints logpoints, says which breakpoints stop. `count: false` (reverse
   * continue) checks conditions only. A condition that fails stops its breakpoint, saying why.
   */
  async check(at: BoundaryScope, evaluate: Evaluator, opts: { count?: boolean } = {}): Promise<BoundaryHit> {
    const count = opts.count ?? true;
    const hit: BoundaryHit = { stop: [], logs: [], problems: [] };
    const none: EvaluationScope = { state: {}, message: null };
    for (const executor of at.executors) {
      const mine = this.on([executor]);
      if (!mine.length) continue;
      const scope = at.scope?.(executor) ?? none;
      const conditions = mine.filter((b) => b.condition !== undefined);
      const said = await evaluate(
        conditions.map((b) => b.condition!),
        scope,
      );
      const passing: BoundBreakpoint[] = [];
      for (const b of mine) {
        const i = conditions.indexOf(b);
        const r = i >= 0 ? said[i]! : undefined;
        if (r && !r.ok) {
          hit.problems.push(`breakpoint on ${b.executor}: condition "${b.condition}" failed: ${r.error}`);
          hit.stop.push(b);
          continue;
        }
        if (r && !r.truthy) continue;
        if (count) b.hits++;
        if (count && b.hitCondition !== undefined && !hitConditionMet(b.hitCondition, b.hits)) continue;
        passing.push(b);
      }
      for (const b of passing) {
        if (b.logMessage === undefined) hit.stop.push(b);
        else if (count) hit.logs.push(await interpolate(b.logMessage, scope, evaluate));
      }
    }
    return hit;
  }

  /** Restart starts counting again. */
  resetHits(): void {
    for (const b of [...[...this.lines.values()].flat(), ...this.functions]) b.hits = 0;
  }
}

function spec(w: BreakpointSpec): BreakpointSpec {
  return {
    ...(w.condition ? { condition: w.condition } : {}),
    ...(w.hitCondition ? { hitCondition: w.hitCondition } : {}),
    ...(w.logMessage ? { logMessage: w.logMessage } : {}),
  };
}

/** A condition that does not parse, or a hit condition that is not a count, leaves the breakpoint unverified, saying why. */
function checkSpec(w: BreakpointSpec): string | undefined {
  // Only syntax is checked here (compiled, never run): what a condition reads is known at a boundary.
  const syntax = w.condition ? syntaxProblem(w.condition) : undefined;
  if (syntax) return `condition "${w.condition}": ${syntax}`;
  for (const part of w.logMessage ? templateParts(w.logMessage) : []) {
    const problem = typeof part === "string" ? undefined : syntaxProblem(part.expr);
    if (problem) return `log message part {${(part as { expr: string }).expr}}: ${problem}`;
  }
  try {
    if (w.hitCondition) hitConditionMet(w.hitCondition, 1);
  } catch (e) {
    return (e as Error).message;
  }
  return undefined;
}

/** A logpoint's message with each `{expression}` replaced by its value; an expression that fails says why in its place. */
async function interpolate(template: string, scope: EvaluationScope, evaluate: Evaluator): Promise<string> {
  const parts = templateParts(template);
  const exprs = parts.flatMap((p) => (typeof p === "string" ? [] : [p.expr]));
  const said = await evaluate(exprs, scope);
  let i = 0;
  return parts
    .map((p) => {
      if (typeof p === "string") return p;
      const r = said[i++]!;
      return r.ok ? (r.value !== undefined ? text(r.value) : (r.display ?? "undefined")) : `<${r.error}>`;
    })
    .join("");
}

function key(file: string): string {
  const r = path.resolve(file);
  return process.platform === "win32" ? r.toLowerCase() : r;
}

export function samePath(a: string, b: string): boolean {
  return key(a) === key(b);
}
