/**
 * Loads the Run Inspector's module (and with it zod) on first use, and keeps the run state the
 * panels show until then: a run that starts while no inspector was ever opened loads nothing, and
 * an inspector opened during the run still learns where it is.
 */
type InspectorModule = typeof import("./inspectorPanel.js");
type RunState = { state: "idle" | "running" | "paused"; runId?: string; superstep?: number };

let loaded: InspectorModule | undefined;
let latest: RunState = { state: "idle" };

export async function loadInspector(): Promise<InspectorModule> {
  if (!loaded) {
    loaded = await import("./inspectorPanel.js");
    loaded.InspectorPanel.showRunState({ type: "runState", ...latest });
  }
  return loaded;
}

/** Called on every change of the run's state: kept, and sent to open inspectors once the module is loaded. */
export function inspectorRunState(state: RunState): void {
  latest = state;
  loaded?.InspectorPanel.showRunState({ type: "runState", ...state });
}
