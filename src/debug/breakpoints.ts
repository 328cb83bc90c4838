import path from "node:path";
import { evaluate, ExpressionError, hitConditionMet, interpolate } from "./expression";
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
  /** Conditions that could not be evaluated: said in the Debug Console, treated as false. */
  problems: string[];
}

/** What the executors due at a boundary see: the state and each one's pending message. */
export interface BoundaryScope {
  executors: readonly string[];
  /** Loaded only when a breakpoint with a condition or a logpoint needs it. */
  scope?: (executor: string) => { state: unknown; message: unknown };
}

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
   * Called at a superstep boundary going forwards: counts hits, prints logpoints, says which
   * breakpoints stop. `count: false` (reverse continue) checks conditions only.
   */
  check(at: BoundaryScope, opts: { count?: boolean } = {}): BoundaryHit {
    const count = opts.count ?? true;
    const hit: BoundaryHit = { stop: [], logs: [], problems: [] };
    for (const b of this.on(at.executors)) {
      const scope = at.scope?.(b.executor!) ?? { state: undefined, message: undefined };
      if (b.condition !== undefined) {
        try {
          if (!evaluate(b.condition, scope)) continue;
        } catch (e) {
          hit.problems.push(`breakpoint on ${b.executor}: condition "${b.condition}": ${(e as Error).message}`);
          continue;
        }
      }
      if (count) b.hits++;
      if (count && b.hitCondition !== undefined && !hitConditionMet(b.hitCondition, b.hits)) continue;
      if (b.logMessage !== undefined) {
        if (count) hit.logs.push(interpolate(b.logMessage, scope));
        continue;
      }
      hit.stop.push(b);
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
  try {
    if (w.condition) evaluate(w.condition, { state: {}, message: {} });
  } catch (e) {
    // Only syntax matters here: reading a key an empty state lacks is fine.
    if (e instanceof ExpressionError && /unexpected|expected|unterminated|ends too early|calls are not supported/.test(e.message))
      return `condition "${w.condition}": ${e.message}`;
  }
  try {
    if (w.hitCondition) hitConditionMet(w.hitCondition, 1);
  } catch (e) {
    return (e as Error).message;
  }
  return undefined;
}

function key(file: string): string {
  const r = path.resolve(file);
  return process.platform === "win32" ? r.toLowerCase() : r;
}

export function samePath(a: string, b: string): boolean {
  return key(a) === key(b);
}
