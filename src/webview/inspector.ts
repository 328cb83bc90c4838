/**
 * The Run Inspector's webview script (bundled to media/inspector.js): the controller. It holds the
 * panel's one state object (inspector/state.ts), changes it in answer to the host's messages and
 * to the view's callbacks, asks the host for what the state lacks (a superstep's details, another
 * step's context) through `request`, and draws: `render` (inspector/view.ts) reads the state and
 * returns DOM, and `patch` makes the page that DOM while keeping the nodes that stay, so a select's
 * value, keyboard focus and the timeline's scroll survive every re-render.
 *
 * Every message from the host is parsed with the shared schema (src/protocol/webview.ts) by the
 * host channel (host.ts); one that does not parse is dropped and logged to the console, and the
 * panel keeps what it shows.
 */
// First: configures zod before any schema is built.
import "./zodJitless";
import type { ContextRefView, HostToInspectorReceived, InspectorToHost, SuperstepDetailView } from "../protocol/webview";
import { answerFromOption, parseHostMessage, TimelineRows } from "../protocol/webview";
import { clamp, patch } from "./dom";
import { connectHost } from "./host";
import type { Arrival } from "./host";
import type { InspectorCallbacks } from "./inspector/state";
import { detailKey, initialState } from "./inspector/state";
import { revealTop } from "./inspector/timeline";
import { ROW_HEIGHT } from "./timelineWindow";
import { render } from "./inspector/view";

/** When this script started to run (epoch ms): beside the page's own start, for the e2e suite's cold-open timing. */
const scriptAt = performance.timeOrigin + performance.now();
const app = document.getElementById("app")!;
const host = connectHost<InspectorToHost, HostToInspectorReceived>({ name: "Run Inspector", parse: parseHostMessage, receive });
const state = initialState(host.saved);
/** Where the timeline is to scroll once drawn (a selection revealed, another run shown). */
let scrollTo: number | undefined;
let noticeTimer: ReturnType<typeof setTimeout> | undefined;
/** A step the host asked to show (`reveal`) before the panel showed its run: selected when that run loads. */
let pendingReveal: Extract<HostToInspectorReceived, { type: "reveal" }> | undefined;

function receive(message: HostToInspectorReceived, arrival: Arrival): void {
  switch (message.type) {
    case "load": {
      const m = message.model;
      const rows = new TimelineRows(m.timeline);
      const before = state.model;
      if (m.run.id !== state.selection.runId) {
        state.selection = { ...state.selection, runId: m.run.id, ...openingSelection(rows, m.run.status === "waiting") };
        // Another run opens with the row it opens on in view, a third of the window from the top
        // (the viewport's own height is not asked for: before the first layout that would force one).
        const top = Math.max(0, state.selection.superstepIndex * ROW_HEIGHT - Math.floor(window.innerHeight / 3));
        state.timelineWindow = { top, height: state.timelineWindow?.height ?? 0 };
        scrollTo = top;
      } else if (before?.run.id === m.run.id) keepPlace(rows);
      // A notice is about what the panel showed when it came: once the run has moved on (another
      // run, a new status, new records), a notice older than this load is stale and goes.
      const shown = before?.run;
      if (shown && (shown.id !== m.run.id || shown.status !== m.run.status || shown.updatedAt !== m.run.updatedAt)) hideStaleNotice();
      state.model = m;
      state.rows = rows;
      // A step to reveal that the opening part lacks waits for the whole timeline.
      if (pendingReveal?.runId === m.run.id && (reveal(pendingReveal) || !m.partial)) pendingReveal = undefined;
      // A reloaded case file may hold records not seen before (a verdict, an intent's reference):
      // each detail shown is asked for again, and the one already shown stays until the answer
      // replaces it, so a reload while the person reads never blanks the panel. The whole timeline
      // that follows a run's opening part is no reload: what was read for that part stands.
      if (!before?.partial || before.run.id !== m.run.id) for (const key of state.details.keys()) state.stale.add(key);
      update();
      const renderMs = performance.now() - arrival.receivedAt;
      // Read by the webview tests: from the message's arrival to the end of the frame that shows
      // it (a task queued from requestAnimationFrame runs after that frame's layout and paint).
      requestAnimationFrame(() =>
        setTimeout(() => {
          document.body.dataset.parseMs = (arrival.parsedAt - arrival.receivedAt).toFixed(1);
          document.body.dataset.renderMs = renderMs.toFixed(1);
          document.body.dataset.paintMs = (performance.now() - arrival.receivedAt).toFixed(1);
          // Epoch times (the extension host's clock is the same machine's) for the cold-open timing.
          const epoch = (t: number): string => (performance.timeOrigin + t).toFixed(1);
          document.body.dataset.pageAt = performance.timeOrigin.toFixed(1);
          document.body.dataset.scriptAt = scriptAt.toFixed(1);
          document.body.dataset.receivedAt = epoch(arrival.receivedAt);
          document.body.dataset.paintedAt = epoch(performance.now());
          document.body.dataset.loaded = m.run.id;
          host.post({ type: "painted", runId: m.run.id });
        }, 0),
      );
      return;
    }
    case "superstep":
      // Details the host sent unasked (answers to `loadSuperstep` come through `request`).
      keepDetail(message.detail);
      update();
      return;
    case "context":
    case "answered":
      // Always an answer (its requestId is required): the host channel resolves the request.
      return;
    case "notice":
      state.notice = { level: message.level, text: message.message, visible: true, at: performance.now() };
      clearTimeout(noticeTimer);
      if (message.level === "info")
        noticeTimer = setTimeout(() => {
          if (state.notice) state.notice = { ...state.notice, visible: false };
          draw();
        }, 8000);
      draw();
      return;
    case "runState":
      // "No workflow is running" and the like are stale once a run starts or ends.
      if (message.state !== state.runState.state) hideStaleNotice();
      state.runState = message;
      draw();
      return;
    case "reveal": {
      // Kept for the run's next load when that run is not shown yet, or only its opening part is
      // and the step lies before it.
      const shown = state.model?.run.id === message.runId;
      if (!shown || (!reveal(message) && state.model?.partial)) pendingReveal = message;
      return;
    }
    default: {
      const never: never = message;
      console.warn(`Run Inspector: unhandled message ${JSON.stringify(never)}`);
    }
  }
}

const on: InspectorCallbacks = {
  selectRun: (runId) => host.post({ type: "selectRun", runId }),
  select(superstepIndex, stepIndex) {
    state.selection = { ...state.selection, superstepIndex, stepIndex };
    const w = state.timelineWindow ?? measuredTimeline();
    if (w) {
      const top = revealTop(superstepIndex, w.top, w.height);
      state.timelineWindow = { top, height: w.height };
      if (top !== w.top) scrollTo = top;
    }
    update();
  },
  selectTab(tab) {
    state.selection = { ...state.selection, tab };
    update();
  },
  scrolled(top, height) {
    const w = state.timelineWindow;
    if (w && w.top === top && w.height === height) return;
    state.timelineWindow = { top, height };
    draw();
  },
  act: (action) => host.post(action),
  setReplayMode(replayMode) {
    state.selection = { ...state.selection, replayMode };
    update();
  },
  setEvalFormat(evalFormat) {
    state.selection = { ...state.selection, evalFormat };
    update();
  },
  compare(stepId, agentCallId) {
    if (agentCallId === undefined) state.compareWith.delete(stepId);
    else {
      state.compareWith.set(stepId, agentCallId);
      // Chosen again after it could not be read: asked for again.
      const known = state.otherContexts.get(agentCallId);
      if (known !== undefined && known !== "loading" && "absent" in known) state.otherContexts.delete(agentCallId);
    }
    update();
  },
  control: (action) => host.post({ type: "control", action }),
  manageTrust: () => host.post({ type: "manageTrust" }),
  showGraph: () => host.post({ type: "showGraph" }),
  dismissNotice() {
    if (state.notice) state.notice = { ...state.notice, visible: false };
    draw();
  },
  comment(requestId, text) {
    const draft = state.answers.get(requestId);
    state.answers.set(requestId, { comment: text, sending: draft?.sending, refusal: draft?.refusal });
  },
  answer(runId, requestId, option) {
    const comment = state.answers.get(requestId)?.comment ?? "";
    state.answers.set(requestId, { comment, sending: option, refusal: undefined });
    draw();
    // The run goes on with the answer before the host replies: a minute or two is not unusual.
    host.request({ type: "answerRequest", runId, request: requestId, answer: answerFromOption(option, comment) }, "answered", 300_000).then(
      (reply) => {
        if (reply.outcome.ok) state.answers.delete(requestId);
        else state.answers.set(requestId, { comment, sending: undefined, refusal: reply.outcome.reason });
        draw();
      },
      (err: Error) => {
        state.answers.set(requestId, { comment, sending: undefined, refusal: err.message });
        draw();
      },
    );
  },
};

/** After a change of state: keeps the selection in range, asks for what it shows and lacks, saves it, draws. */
function update(): void {
  const sel = state.selection;
  const superstepIndex = clamp(sel.superstepIndex, 0, Math.max(0, state.rows.length - 1));
  const steps = state.rows.at(superstepIndex)?.steps.length ?? 0;
  state.selection = { ...sel, superstepIndex, stepIndex: clamp(sel.stepIndex, 0, Math.max(0, steps - 1)) };
  host.save(state.selection);
  fetchMissing();
  draw();
}

/** Asks the host for the selected superstep's details and the context its picker compares with, when not at hand. */
function fetchMissing(): void {
  const m = state.model;
  const s = m && state.rows.at(state.selection.superstepIndex);
  if (!m || !s) return;
  const key = detailKey(m.run.id, s.superstep);
  const detail = state.details.get(key);
  if (detail === undefined || state.stale.delete(key)) {
    if (detail === undefined) state.details.set(key, "loading");
    askSuperstep(m.run.id, s.superstep);
  }
  if (state.selection.tab !== "context" || detail === undefined || detail === "loading") return;
  const step = s.steps[state.selection.stepIndex];
  const chosen = step && state.compareWith.get(step.id);
  if (!chosen || state.otherContexts.has(chosen)) return;
  const context = detail.steps.find((d) => d.stepId === step.id)?.context;
  const ref = context && !("absent" in context) ? context.compareWith.find((r) => r.agentCallId === chosen) : undefined;
  if (ref) askContext(ref);
}

function askSuperstep(runId: string, superstep: number): void {
  const key = detailKey(runId, superstep);
  host.request({ type: "loadSuperstep", runId, superstep }, "superstep").then(
    (reply) => {
      keepDetail(reply.detail);
      update();
    },
    (err: Error) => {
      if (state.details.get(key) !== "loading") return;
      // Shown until the superstep is selected again, which asks again.
      state.details.set(key, {
        runId,
        superstep,
        steps: [],
        state: { absent: `${err.message} Select the superstep again to retry.` },
        requests: [],
      });
      state.stale.add(key);
      draw();
    },
  );
}

function askContext(ref: ContextRefView): void {
  const { runId, superstep, agentCallId } = ref;
  state.otherContexts.set(agentCallId, "loading");
  host.request({ type: "loadContext", runId, superstep, agentCallId }, "context").then(
    (reply) => {
      state.otherContexts.set(agentCallId, reply.context);
      draw();
    },
    (err: Error) => {
      state.otherContexts.set(agentCallId, { absent: `${err.message} Choose the context again to retry.` });
      draw();
    },
  );
}

/** Hides the notice unless it has just come (an action's outcome arrives right after the load it caused). */
function hideStaleNotice(): void {
  const n = state.notice;
  if (n?.visible && performance.now() - n.at > 1000) state.notice = { ...n, visible: false };
}

function keepDetail(detail: SuperstepDetailView): void {
  state.details.set(detailKey(detail.runId, detail.superstep), detail);
}

// ---------------------------------------------------------------------------------------------
// Drawing

let observed: HTMLElement | null = null;
/** The timeline's size, once laid out and whenever it changes: the rows in view follow it. */
const resize = new ResizeObserver(() => {
  if (observed) on.scrolled(observed.scrollTop, observed.clientHeight);
});

function measuredTimeline(): { top: number; height: number } | undefined {
  const vp = app.querySelector<HTMLElement>(".timeline-viewport");
  return vp ? { top: vp.scrollTop, height: vp.clientHeight } : undefined;
}

/** Renders the state and patches the page with it; then the timeline scrolls where it should be and is watched for resizes. */
function draw(): void {
  const page = render(state, on);
  if (page) patch(app, page);
  const vp = app.querySelector<HTMLElement>(".timeline-viewport");
  if (vp !== observed) {
    resize.disconnect();
    if (vp) resize.observe(vp);
    observed = vp;
  }
  if (vp && scrollTo !== undefined) vp.scrollTop = scrollTo;
  scrollTo = undefined;
}

host.post({ type: "ready" });

/**
 * Where a run opens (called on the first load of each run): a run waiting for a person on the
 * request it waits on (its buttons are there); else on its decision, the last step with a
 * verdict, in the Proposal vs Commit tab; without one, on the first superstep where a step ran.
 * Superstep #0 of a run that starts from its input often ran nothing, and opening there showed
 * "No step ran" to someone who came to see what was decided.
 */
/**
 * Selects the step the host named, on its Decision tab, and says whether it did; a step not in
 * the timeline leaves the selection as it is.
 */
function reveal(where: { superstep: number; executor: string }): boolean {
  const i = state.rows.indexOf(where.superstep);
  const j = state.rows.at(i)?.steps.findIndex((st) => st.executor === where.executor) ?? -1;
  if (j < 0) return false;
  state.selection = { ...state.selection, tab: "decision" };
  on.select(i, j);
  return true;
}

/**
 * A new timeline of the run shown (the whole one after its opening part, or the case file
 * reloaded): the selection and the rows in view stay on the same supersteps, wherever their rows
 * now are, so rows added before them move nothing the person sees.
 */
function keepPlace(next: TimelineRows): void {
  const old = state.rows;
  const moved = (index: number): number => {
    const row = old.at(index);
    const i = row ? next.indexOf(row.superstep) : -1;
    return i < 0 ? index : i;
  };
  state.selection = { ...state.selection, superstepIndex: moved(state.selection.superstepIndex) };
  const w = state.timelineWindow;
  if (!w) return;
  const topRow = Math.floor(w.top / ROW_HEIGHT);
  const top = w.top + (moved(topRow) - topRow) * ROW_HEIGHT;
  if (top === w.top) return;
  state.timelineWindow = { ...w, top };
  scrollTo = top;
}

function openingSelection(rows: TimelineRows, waiting: boolean): Pick<typeof state.selection, "superstepIndex" | "stepIndex" | "tab"> {
  let firstRan: number | undefined;
  let decision: { superstepIndex: number; stepIndex: number } | undefined;
  let asked: { superstepIndex: number; stepIndex: number } | undefined;
  for (let i = 0; i < rows.length; i++) {
    const steps = rows.at(i)?.steps ?? [];
    if (firstRan === undefined && steps.length > 0) firstRan = i;
    const w = steps.findIndex((st) => st.kind === "request" && st.status === "waiting");
    if (w >= 0) asked = { superstepIndex: i, stepIndex: w };
    const j = steps.findIndex((st) => st.verdict !== null && st.kind === "commit");
    const k = j >= 0 ? j : steps.findIndex((st) => st.verdict !== null);
    if (k >= 0) decision = { superstepIndex: i, stepIndex: k };
  }
  if (waiting && asked) return { ...asked, tab: state.selection.tab };
  if (decision) return { ...decision, tab: "decision" };
  return { superstepIndex: firstRan ?? 0, stepIndex: 0, tab: state.selection.tab };
}
