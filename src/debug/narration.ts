import type { ExceptionFilter } from "../protocol/debug";
import type { RunnerToHost } from "../protocol/runner";
import type { Json } from "../engine/records";
import { text } from "./expression";

/**
 * What a run's events say in the Debug Console, and which exception filters they fire. Pure: the
 * session (session.ts) calls `narrate` for every event the runner streams and prints the lines;
 * the exceptions are kept until the next superstep boundary decides whether to stop on them.
 */

export type RunEvent = Extract<RunnerToHost, { type: "event" }>["event"];

export interface Narration {
  lines: { text: string; category: "console" | "stderr" }[];
  /** Exception filters this event fires (stopped on at the next boundary when the filter is on). */
  exceptions: { filter: ExceptionFilter; description: string }[];
  /** A commit or agent step completed: the proposal filter looks for a rejection at the boundary. */
  judged: boolean;
}

export function narrate(e: RunEvent): Narration {
  const out: Narration = { lines: [], exceptions: [], judged: false };
  const data = (e.data ?? {}) as Record<string, Json>;
  const say = (line: string, category: "console" | "stderr" = "console"): void => void out.lines.push({ text: line, category });
  const fires = (filter: ExceptionFilter, description: string): void => void out.exceptions.push({ filter, description });
  switch (e.type) {
    case "run_started": {
      const branch = data.branchOf as { run?: string; checkpoint?: string } | null | undefined;
      if (branch?.run) {
        const patched = Array.isArray(data.patched) && data.patched.length ? ` with edited ${data.patched.join(", ")}` : "";
        say(`branch run ${e.runId} of ${branch.run}, from checkpoint ${branch.checkpoint}${patched}: the parent run is unchanged`);
      } else say(`run ${e.runId} started`);
      break;
    }
    case "run_resumed":
      say(`run ${e.runId} goes on from checkpoint ${String(data.from)}`);
      break;
    case "superstep_started":
      say(`#${e.superstep} ${(data.executors as string[] | undefined)?.join(", ") ?? ""}`);
      break;
    case "step_completed":
      if (data.kind === "commit" || data.kind === "agent") out.judged = true;
      break;
    case "step_failed":
      fires("stepFailed", `step ${String(data.executor)} failed: ${describe(data.error)}`);
      say(`#${e.superstep} ${String(data.executor)} failed: ${describe(data.error)}`, "stderr");
      break;
    case "request_waiting":
      fires("waitingForPerson", `${String(data.executor)} waits for a person: ${(data.prompt as { title?: string } | null)?.title ?? ""}`);
      break;
    case "intent":
      // The effect's check found the live record changed: in a field it relies on (replanning) or not (it goes on, logged).
      if (data.status === "needs_replanning" || /drift/.test(String(data.what)))
        fires("drift", `effect ${String(data.executor)}: the record changed under it (${String(data.what ?? data.status)})`);
      break;
    case "extract":
      if (data.stale === true) fires("drift", `extract "${String(data.key)}" went stale: ${String(data.reason)}`);
      break;
    case "warning":
      say(`warning: ${String(data.message)}`, "stderr");
      break;
    case "output":
      say(`output of ${String(data.executor)}: ${JSON.stringify(data.output)}`);
      break;
    case "run_failed":
    case "run_needs_replanning":
      if (e.type === "run_needs_replanning") fires("drift", `run ${e.runId} needs replanning: ${describe(data.error)}`);
      say(`run ${e.runId} ${e.type === "run_failed" ? "failed" : "needs replanning"}: ${describe(data.error)}`, "stderr");
      break;
    case "run_completed":
    case "run_waiting":
    case "run_stopped":
      say(`run ${e.runId} ${e.type.slice(4)} at checkpoint ${String(data.checkpoint)}`);
      break;
    default:
      break;
  }
  return out;
}

function describe(error: Json | undefined): string {
  const e = error as { code?: string; message?: string } | null | undefined;
  return e?.code ? `${e.code}: ${e.message ?? ""}` : text(error);
}
