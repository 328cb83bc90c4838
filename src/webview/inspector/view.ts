/**
 * The Run Inspector's one render path: reads the state and returns the page's DOM (new, detached
 * nodes the controller patches the page with). It posts nothing and changes nothing; what the
 * person does reaches the controller through the callbacks.
 */
import { el, nothing } from "../dom";
import { detailPane } from "./detail";
import { header, noticeLine, restrictedBanner, runControls } from "./header";
import type { InspectorCallbacks, InspectorState } from "./state";
import { timelinePane } from "./timeline";

/** The page's children; undefined leaves the page as it is (the host's "Loading…" before a run arrives). */
export function render(state: InspectorState, on: InspectorCallbacks): Node[] | undefined {
  const m = state.model;
  if (!m) {
    // Nothing to show a notice beside (the case file could not be read): the notice is the page.
    const n = state.notice;
    return n ? [el("p", { className: `notice-standalone ${n.level}` }, n.text)] : undefined;
  }
  return [
    header(m, on),
    noticeLine(state, on),
    runControls(state, on),
    m.canRun.ok ? nothing() : restrictedBanner(m.canRun.reason, on),
    el("div", { className: "main" }, [timelinePane(state, on), detailPane(state, on)]),
  ];
}
