/**
 * The top of the Run Inspector: the run's title and status, the branch picker, the status line
 * for the host's notices, the step-mode bar (Continue, Step, Stop) and the Restricted Mode banner.
 */
import type { ReceivedViewModel as InspectorViewModel } from "../../protocol/webview";
import { el, icon, nothing } from "../dom";
import type { InspectorCallbacks, InspectorState } from "./state";

export function header(m: InspectorViewModel, on: InspectorCallbacks): HTMLElement {
  const select = el("select", {
    className: "branch-select",
    title: "Branch",
    ariaLabel: "Branch",
    onchange: (e) => on.selectRun((e.currentTarget as HTMLSelectElement).value),
  });
  for (const b of m.branches) {
    const depth = branchDepth(m, b.runId);
    const option = el("option", { value: b.runId }, `${"\u00a0\u00a0".repeat(depth)}${depth ? "↳ " : ""}${b.runId} (${b.status})`);
    if (b.runId === m.run.id) option.selected = true;
    select.append(option);
  }
  const parent =
    m.run.parentRunId !== null
      ? el("span", { className: "muted branch-of" }, [
          icon("git-branch"),
          ` branch of ${m.run.parentRunId}${m.run.parentCheckpointId ? ` at checkpoint ${m.run.parentCheckpointId}` : ""}`,
        ])
      : nothing();
  return el("header", { className: "header" }, [
    el("div", { className: "title" }, [
      icon("checklist"),
      el("strong", {}, `${m.run.workflow.name}`),
      el("span", { className: "muted" }, ` v${m.run.workflow.version}`),
      el("span", { className: `status status-${m.run.status}` }, m.run.status.replace("_", " ")),
      parent,
    ]),
    el("div", { className: "header-right" }, [graphButton(m, on), el("span", { className: "muted" }, m.caseFile.name), select]),
    m.run.error ? el("div", { className: "run-error" }, [icon("error"), ` ${m.run.error.code}: ${m.run.error.message}`]) : nothing(),
  ]);
}

/** Opens the run's workflow as a graph; disabled, saying why, where that is not possible. */
function graphButton(m: InspectorViewModel, on: InspectorCallbacks): HTMLElement {
  const why = !m.canRun.ok ? m.canRun.reason : m.run.workflow.path === null ? "This run did not record its workflow file." : undefined;
  return el(
    "button",
    {
      className: "header-action show-graph",
      ...(why ? { disabled: true, title: why } : { title: `Workflow Graph of ${m.run.workflow.path}`, onclick: () => on.showGraph() }),
    },
    [icon("type-hierarchy"), " Graph"],
  );
}

function branchDepth(m: InspectorViewModel, runId: string): number {
  let depth = 0;
  let cur = m.branches.find((b) => b.runId === runId);
  while (cur?.parentRunId && depth < 50) {
    depth++;
    const parentId = cur.parentRunId;
    cur = m.branches.find((b) => b.runId === parentId);
  }
  return depth;
}

/** The status line: the outcome of the last action, or why it could not run. Kept (hidden) once seen. */
export function noticeLine(state: InspectorState, on: InspectorCallbacks): HTMLElement {
  const n = state.notice;
  return el(
    "div",
    { className: n ? `notice${n.visible ? ` visible ${n.level}` : ""}` : "notice", id: "notice", role: "status", ariaLive: "polite" },
    n?.visible
      ? [
          icon(n.level === "info" ? "info" : n.level),
          el("span", { className: "notice-text" }, ` ${n.text}`),
          el("button", { className: "notice-close", title: "Dismiss", ariaLabel: "Dismiss notice", onclick: () => on.dismissNotice() }, [
            icon("close"),
          ]),
        ]
      : n
        ? [el("span", { className: "notice-text" }, ` ${n.text}`)]
        : [],
  );
}

/** The step-mode bar: where the run waits, with Continue, Step and Stop. */
export function runControls(state: InspectorState, on: InspectorCallbacks): HTMLElement {
  const rs = state.runState;
  if (rs.state === "idle") return el("div", { className: "run-controls", id: "run-controls", data: { state: "idle" } });
  const where = rs.runId
    ? ` ${rs.runId}${rs.superstep !== undefined ? `${rs.state === "paused" ? " before" : ", at"} superstep ${rs.superstep}` : ""}`
    : "";
  const button = (action: "continue" | "step" | "stop", label: string, codicon: string): HTMLElement =>
    el(
      "button",
      {
        className: "control",
        title: label,
        disabled: action !== "stop" && rs.state !== "paused",
        onclick: () => on.control(action),
        data: { control: action },
      },
      [icon(codicon), ` ${label}`],
    );
  return el("div", { className: "run-controls", id: "run-controls", data: { state: rs.state } }, [
    el("span", { className: "run-state" }, [
      icon(rs.state === "paused" ? "debug-pause" : "sync"),
      ` ${rs.state === "paused" ? "Paused" : "Running"}${where}`,
    ]),
    button("continue", "Continue", "debug-continue"),
    button("step", "Step", "debug-step-over"),
    button("stop", "Stop", "debug-stop"),
  ]);
}

/**
 * Restricted Mode: what is disabled and why, and the way out as a link (VS Code's Workspace Trust
 * editor). The reason's own "(Manage Workspace Trust)" becomes the link rather than repeating it.
 */
export function restrictedBanner(reason: string, on: InspectorCallbacks): HTMLElement {
  const text = reason.replace(/\s*\(Manage Workspace Trust\)/, "");
  const link = el(
    "a",
    { className: "manage-trust", href: "#", role: "button", onclick: (e) => (e.preventDefault(), on.manageTrust()) },
    "Manage Workspace Trust",
  );
  return el("div", { className: "banner", role: "note" }, [icon("shield"), el("span", {}, ` Restricted Mode. ${text} `), link]);
}
