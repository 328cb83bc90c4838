/**
 * The timeline: a virtualised list of the run's supersteps; only the rows in view (plus a few)
 * exist in the DOM, so a run of 10,000 supersteps paints as fast as one of ten. Rows are keyed by
 * index, so a scroll moves the rows that stay instead of drawing them again.
 */
import type { DecisionView, StepView } from "../../protocol/webview";
import { clamp, el, icon, nothing } from "../dom";
import { ROW_HEIGHT, visibleRange } from "../timelineWindow";
import type { InspectorCallbacks, InspectorState } from "./state";

export const KIND_ICON: Record<StepView["kind"], string> = {
  code: "code",
  loader: "cloud-download",
  agent: "sparkle",
  commit: "law",
  effect: "zap",
  request: "person",
};
export const VERDICT_ICON: Record<DecisionView["verdict"], string> = { accepted: "pass", rejected: "error", escalated: "warning" };

export function timelinePane(state: InspectorState, on: InspectorCallbacks): HTMLElement {
  const { rows } = state;
  const title = el("div", { className: "pane-title" }, [
    icon("history"),
    ` Supersteps `,
    // The opening part of a long run: its earlier supersteps are on their way.
    state.model?.partial
      ? el("span", { className: "count", title: "Earlier supersteps are still being read" }, `${rows.length}+`)
      : el("span", { className: "count" }, String(rows.length)),
  ]);
  if (rows.length === 0)
    return el("nav", { className: "timeline" }, [title, el("p", { className: "absent" }, "This run has no supersteps recorded yet.")]);
  // Before the first layout the viewport's size is not asked for (that would force a layout of the
  // whole page only to be done again for the frame): the rows a window's height holds are drawn,
  // and the resize the controller observes draws them again with the real size in the same frame.
  const w = state.timelineWindow;
  const { first, last } = w ? visibleRange(w.top, w.height || 600, rows.length) : visibleRange(0, window.innerHeight, rows.length);
  const out: HTMLElement[] = [];
  for (let i = first; i < last; i++) out.push(row(state, i));
  const spacer = el("div", { className: "timeline-spacer" });
  spacer.style.height = `${rows.length * ROW_HEIGHT}px`;
  const list = el(
    "div",
    {
      className: "timeline-rows",
      role: "presentation",
      onclick: (e) => {
        const r = (e.target as HTMLElement).closest<HTMLElement>(".timeline-row");
        if (r) on.select(Number(r.dataset.index), 0);
      },
    },
    out,
  );
  list.style.transform = `translateY(${first * ROW_HEIGHT}px)`;
  const viewport = el(
    "div",
    {
      className: "timeline-viewport",
      tabIndex: 0,
      role: "listbox",
      ariaLabel: `Supersteps (${rows.length})`,
      // Handlers read the element they fire on (currentTarget): after a patch that is the mounted
      // element, not the one this render built.
      onscroll: (e) => {
        const v = e.currentTarget as HTMLElement;
        on.scrolled(v.scrollTop, v.clientHeight);
      },
      onkeydown: (e) => onKey(e, state, on),
    },
    [spacer, list],
  );
  return el("nav", { className: "timeline" }, [title, viewport]);
}

function row(state: InspectorState, i: number): HTMLElement {
  const s = state.rows.at(i)!;
  const selected = i === state.selection.superstepIndex;
  const verdicts = s.steps.flatMap((st) => (st.kind === "commit" && st.verdict !== null ? [st.verdict] : []));
  const failed = s.steps.some((st) => st.status === "failed");
  const r = el(
    "div",
    {
      className: `timeline-row${selected ? " selected" : ""}${failed ? " failed" : ""}`,
      role: "option",
      ariaSelected: String(selected),
      data: { index: String(i), key: String(i) },
    },
    [
      el("span", { className: "superstep-number" }, `#${s.superstep}`),
      el(
        "span",
        { className: "row-steps" },
        s.steps.map((st) =>
          el("span", { className: `step-chip kind-${st.kind}`, title: `${st.kind} step` }, [icon(KIND_ICON[st.kind]), st.executor]),
        ),
      ),
      el(
        "span",
        { className: "row-badges" },
        verdicts.map((v) => el("span", { className: `verdict verdict-${v}` }, [icon(VERDICT_ICON[v]), v])),
      ),
      s.checkpointId === null ? el("span", { className: "muted", title: "No checkpoint recorded" }, [icon("circle-slash")]) : nothing(),
    ],
  );
  r.style.height = `${ROW_HEIGHT}px`;
  return r;
}

/** Arrow keys, Page Up/Down, Home and End move the selection. */
function onKey(e: KeyboardEvent, state: InspectorState, on: InspectorCallbacks): void {
  const height = (e.currentTarget as HTMLElement).clientHeight;
  const page = Math.max(1, Math.floor(height / ROW_HEIGHT) - 1);
  const moves: Record<string, number> = { ArrowDown: 1, ArrowUp: -1, PageDown: page, PageUp: -page };
  const current = state.selection.superstepIndex;
  let next: number | undefined;
  if (e.key in moves) next = current + moves[e.key]!;
  else if (e.key === "Home") next = 0;
  else if (e.key === "End") next = state.rows.length - 1;
  if (next === undefined) return;
  e.preventDefault();
  on.select(clamp(next, 0, state.rows.length - 1), 0);
}

/** The scroll position that keeps row `index` in a viewport at `top` of `height` (keyboard, programmatic selection). */
export function revealTop(index: number, top: number, height: number): number {
  const rowTop = index * ROW_HEIGHT;
  const bottom = rowTop + ROW_HEIGHT;
  if (rowTop < top) return rowTop;
  if (bottom > top + height) return bottom - height;
  return top;
}
