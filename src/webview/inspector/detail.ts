/**
 * The detail pane: the selected superstep, its steps, the actions on it (resume, fork, replay,
 * export) and the tabs. Each tab is its own module; this one picks what the selected tab shows.
 */
import type { StepView, SuperstepView } from "../../protocol/webview";
import { EvalFormatSchema, ReplayModeSchema } from "../../protocol/webview";
import { absent, clamp, el, icon, nothing } from "../dom";
import { contextTab } from "./contextTab";
import { decisionTab } from "./decisionTab";
import type { InspectorCallbacks, InspectorState } from "./state";
import { detailKey, TABS } from "./state";
import { stateTab } from "./stateTab";
import { intentsTab } from "./intentsTab";
import { requestCards } from "./requestCard";
import { KIND_ICON } from "./timeline";

export function detailPane(state: InspectorState, on: InspectorCallbacks): HTMLElement {
  const pane = (children: (string | Node)[]): HTMLElement => el("section", { className: "detail", id: "detail" }, children);
  const sel = state.selection;
  const s = state.rows.at(sel.superstepIndex);
  if (!s) return pane([el("p", { className: "absent" }, "Select a superstep.")]);
  const stepIndex = clamp(sel.stepIndex, 0, Math.max(0, s.steps.length - 1));
  const step = s.steps[stepIndex];
  const stepPicker = el(
    "div",
    { className: "step-picker", role: "tablist", ariaLabel: "Steps in this superstep" },
    s.steps.map((st, i) =>
      el(
        "button",
        {
          className: `step-button kind-${st.kind}${i === stepIndex ? " selected" : ""}`,
          role: "tab",
          ariaSelected: String(i === stepIndex),
          onclick: () => on.select(sel.superstepIndex, i),
        },
        [
          icon(KIND_ICON[st.kind]),
          ` ${st.executor}`,
          el("span", { className: "muted" }, ` ${st.kind}`),
          st.status === "ok" ? nothing() : el("span", { className: `step-status status-${st.status}` }, ` ${stepStatusLabel(st, state)}`),
        ],
      ),
    ),
  );
  const tabs = el(
    "div",
    { className: "tabs", role: "tablist" },
    TABS.map((t) =>
      el(
        "button",
        {
          className: `tab${t.id === sel.tab ? " active" : ""}`,
          role: "tab",
          ariaSelected: String(t.id === sel.tab),
          onclick: () => on.selectTab(t.id),
          data: { tab: t.id },
        },
        [icon(t.icon), ` ${t.label}`],
      ),
    ),
  );
  return pane([
    el("div", { className: "detail-head" }, [
      el("h2", {}, [`Superstep ${s.superstep}`]),
      el(
        "span",
        { className: "muted" },
        s.checkpointId ? ` checkpoint ${s.checkpointId}${s.at ? ` · ${s.at}` : ""}` : " no checkpoint recorded",
      ),
    ]),
    stepPicker,
    step ? stepSummary(step) : nothing(),
    requestsOf(state, on, s),
    actions(state, on, s, step),
    tabs,
    el("div", { className: `tab-body tab-${sel.tab}`, role: "tabpanel" }, [tabBody(state, on, s, step)]),
  ]);
}

function tabBody(state: InspectorState, on: InspectorCallbacks, s: SuperstepView, step: StepView | undefined): Node {
  const runId = state.model!.run.id;
  const loaded = state.details.get(detailKey(runId, s.superstep)) ?? "loading";
  const tab = state.selection.tab;
  if (loaded === "loading") return loadingNote(s.superstep);
  if (tab === "state") return stateTab(runId, s, loaded.state);
  if (!step) return el("p", { className: "absent" }, `No step ran in superstep ${s.superstep}.`);
  const d = loaded.steps.find((x) => x.stepId === step.id);
  if (!d) return absent("absent" in loaded.state ? loaded.state.absent : "The details of this step are not in the case file.");
  if (tab === "context") return contextTab(state, on, d.context, step.id);
  if (tab === "decision") return decisionTab(d.decision);
  return intentsTab(d.intents);
}

/** A request step that waited reads "waited" once the run waits no more (answered, or gone on): "waiting" there misled. */
function stepStatusLabel(st: StepView, state: InspectorState): string {
  return st.status === "waiting" && state.model?.run.status !== "waiting" ? "waited" : st.status;
}

/** The requests asked or answered in the superstep, once its details are here. */
function requestsOf(state: InspectorState, on: InspectorCallbacks, s: SuperstepView): Node {
  const loaded = state.details.get(detailKey(state.model!.run.id, s.superstep));
  return loaded && loaded !== "loading" ? requestCards(state, on, loaded) : nothing();
}

function loadingNote(superstep: number): HTMLElement {
  return el("p", { className: "muted loading-detail" }, [
    icon("loading codicon-modifier-spin"),
    ` Reading superstep ${superstep} from the case file…`,
  ]);
}

function stepSummary(step: StepView): HTMLElement {
  return el("div", { className: "step-summary muted" }, [
    `${step.durationMs} ms`,
    step.writes.length ? ` · writes ${step.writes.join(", ")}` : " · writes nothing",
    step.error ? el("span", { className: "error-text" }, ` · ${step.error.code}: ${step.error.message}`) : nothing(),
  ]);
}

function actions(state: InspectorState, on: InspectorCallbacks, s: SuperstepView, step: StepView | undefined): HTMLElement {
  const m = state.model!;
  const sel = state.selection;
  const runBlocked = m.canRun.ok ? undefined : m.canRun.reason;
  const noCheckpoint = s.checkpointId === null ? `No checkpoint was recorded after superstep ${s.superstep}.` : undefined;
  const notAgent = step?.kind === "agent" ? undefined : "Only agent steps can be replayed or exported as eval cases.";
  const runId = m.run.id;
  const checkpointId = s.checkpointId ?? "";
  const stepId = step?.id ?? "";

  const resume = button("debug-restart", "Resume from here", "resume", runBlocked ?? noCheckpoint, () =>
    on.act({ type: "resumeFrom", runId, checkpointId }),
  );
  resume.classList.add("primary");
  const fork = button("repo-forked", "Fork with edited state", "fork", runBlocked ?? noCheckpoint, () =>
    on.act({ type: "forkWithEditedState", runId, checkpointId }),
  );
  const debug = button("debug-alt", "Debug from here", "debug", runBlocked ?? noCheckpoint, () =>
    on.act({ type: "debugFromHere", runId, checkpointId }),
  );
  const replay = button("debug-rerun", "Replay step", "replay", runBlocked ?? notAgent, () =>
    on.act({ type: "replayStep", runId, stepId, mode: sel.replayMode }),
  );
  const modeSelect = el(
    "select",
    {
      className: "replay-mode",
      ariaLabel: "Replay mode",
      disabled: replay.disabled,
      onchange: (e) => on.setReplayMode(ReplayModeSchema.parse((e.currentTarget as HTMLSelectElement).value)),
    },
    ReplayModeSchema.options.map((mode) => el("option", { value: mode, selected: mode === sel.replayMode }, mode)),
  );
  // Exporting loads the workflow file (its proposal schema and rules): workflow code, like a replay.
  const exportButton = button("export", "Export as eval", "export", runBlocked ?? notAgent, () =>
    on.act({ type: "exportStepAsEval", runId, stepId, format: sel.evalFormat }),
  );
  const formatSelect = el(
    "select",
    {
      className: "eval-format",
      ariaLabel: "Eval format",
      disabled: exportButton.disabled,
      onchange: (e) => on.setEvalFormat(EvalFormatSchema.parse((e.currentTarget as HTMLSelectElement).value)),
    },
    EvalFormatSchema.options.map((f) => el("option", { value: f, selected: f === sel.evalFormat }, f)),
  );
  return el("div", { className: "actions" }, [
    resume,
    debug,
    fork,
    el("span", { className: "group" }, [replay, modeSelect]),
    el("span", { className: "group" }, [exportButton, formatSelect]),
  ]);
}

/** A button that, when disabled, says why in its tooltip and its accessible description. */
function button(
  iconName: string,
  label: string,
  action: string,
  disabledReason: string | undefined,
  onclick: () => void,
): HTMLButtonElement {
  return el(
    "button",
    {
      className: "action",
      data: { action },
      ...(disabledReason ? { disabled: true, title: disabledReason } : { onclick }),
    },
    [icon(iconName), ` ${label}`],
  );
}
