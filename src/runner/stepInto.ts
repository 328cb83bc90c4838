import inspector from "node:inspector";
import type { ExecutorSpec } from "../engine/executors";
import type { Workflow } from "../engine/workflow";

/**
 * Step Into at a superstep boundary, for the debugger's executor-code mode: the runner runs under
 * --inspect with js-debug attached (debugExecutorCode), and the host asks it to step *into* the
 * next superstep (HostToRunner `stepInto`). The first executor function the superstep calls
 * (`run`, an agent's `context`, an effect's `intent`/`check`/`act`, a commit's rules and `apply`)
 * gets a one-shot breakpoint on its call, set through this process's own inspector session
 * (`Debugger.setBreakpointOnFunctionCall`): V8 pauses on its first line, and the attached
 * debugger shows it there, mapped to the workflow file by the bundle's source map. Armed once per
 * request; disarmed at the next boundary if nothing was called. The runner (runnerMain.ts) arms
 * it; runSession wraps the workflow's executor functions with `withStepInto`.
 */
export class StepInto {
  private session?: inspector.Session;
  private armed = false;

  /** Whether this process has an inspector a debugger can be attached to (started with --inspect). */
  static available(): boolean {
    return inspector.url() !== undefined;
  }

  /** The next executor function called pauses on its first line. */
  arm(): void {
    this.armed = true;
  }

  /** A boundary: a superstep that called no executor function leaves nothing armed for the next. */
  disarm(): void {
    this.armed = false;
  }

  /** Calls an executor function, with the one-shot breakpoint on it if armed. */
  call(fn: (...args: unknown[]) => unknown, self: unknown, args: unknown[]): unknown {
    if (!this.armed) return fn.apply(self, args);
    this.armed = false;
    const breakpointId = this.breakOnCall(fn);
    try {
      return fn.apply(self, args);
    } finally {
      if (breakpointId) this.post("Debugger.removeBreakpoint", { breakpointId });
    }
  }

  private breakOnCall(fn: (...args: unknown[]) => unknown): string | undefined {
    if (!StepInto.available()) return undefined;
    const slot = "__casefileStepInto";
    const g = globalThis as Record<string, unknown>;
    try {
      if (!this.session) {
        this.session = new inspector.Session();
        this.session.connect();
        this.post("Debugger.enable");
      }
      g[slot] = fn;
      const found = this.post("Runtime.evaluate", { expression: `globalThis.${slot}`, objectGroup: "casefile-step-into" }) as {
        result: { objectId?: string };
      };
      if (!found.result.objectId) return undefined;
      const set = this.post("Debugger.setBreakpointOnFunctionCall", { objectId: found.result.objectId }) as { breakpointId: string };
      this.post("Runtime.releaseObjectGroup", { objectGroup: "casefile-step-into" });
      return set.breakpointId;
    } catch {
      // No inspector to pause with: the superstep runs as a Next would.
      return undefined;
    } finally {
      delete g[slot];
    }
  }

  /** Posts to this process's own inspector: the same thread answers before post returns. */
  private post(method: string, params?: object): unknown {
    let result: unknown;
    let error: Error | null = null;
    this.session!.post(method, params ?? {}, (e, r) => {
      error = e;
      result = r;
    });
    if (error) throw error;
    return result;
  }
}

/** The workflow with every executor function called through `step.call`, so Step Into can pause in the first one called. */
export function withStepInto(workflow: Workflow, step: StepInto): Workflow {
  const wrap = (fn: unknown): unknown =>
    typeof fn === "function"
      ? function (this: unknown, ...args: unknown[]) {
          return step.call(fn as (...a: unknown[]) => unknown, this, args);
        }
      : fn;
  const executors: Record<string, ExecutorSpec> = {};
  for (const [id, spec] of Object.entries(workflow.executors)) {
    const copy: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(spec)) copy[k] = wrap(v);
    if (spec.kind === "commit") copy.rules = Object.fromEntries(Object.entries(spec.rules).map(([name, fn]) => [name, wrap(fn)]));
    executors[id] = copy as unknown as ExecutorSpec;
  }
  return { ...workflow, executors };
}
