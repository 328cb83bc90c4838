/**
 * The Run Inspector's webview script (bundled to media/inspector.js). It renders the view model
 * the host sends and posts back what the person asks for. Plain DOM, no framework: the only heavy
 * part is the timeline, which is virtualised (only the rows in view exist), so a run of 10,000
 * supersteps paints as fast as one of ten.
 *
 * Every message from the host is parsed with the shared schema (src/protocol/webview.ts); one that
 * does not parse is dropped and logged to the console, and the panel keeps what it shows.
 */
// First: configures zod before any schema is built.
import "./zodJitless";
import type {
  ContextRefView,
  ContextView,
  DecisionView,
  HostToInspectorReceived as HostToInspector,
  InspectorToHost,
  ReceivedViewModel as InspectorViewModel,
  IntentConflictView,
  IntentView,
  StateView,
  StepView,
  SuperstepDetailView,
  SuperstepView,
} from "../protocol/webview";
import { encodeTimeline, EvalFormatSchema, parseHostMessage, ReplayModeSchema, TimelineRows, TimelineSchema } from "../protocol/webview";
import { diffContexts } from "./contextDiff";
import type { MessageDiff, Segment } from "./contextDiff";
import { ROW_HEIGHT, visibleRange } from "./timelineWindow";

interface VsCodeApi {
  postMessage(message: InspectorToHost): void;
  getState(): unknown;
  setState(state: unknown): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

type Tab = "context" | "decision" | "state" | "intents";
const TABS: { id: Tab; label: string; icon: string }[] = [
  { id: "context", label: "Context", icon: "comment-discussion" },
  { id: "decision", label: "Proposal vs Commit", icon: "law" },
  { id: "state", label: "State", icon: "database" },
  { id: "intents", label: "Intents", icon: "zap" },
];

const KIND_ICON: Record<StepView["kind"], string> = {
  code: "code",
  loader: "cloud-download",
  agent: "sparkle",
  commit: "law",
  effect: "zap",
  request: "person",
};
const VERDICT_ICON: Record<DecisionView["verdict"], string> = { accepted: "pass", rejected: "error", escalated: "warning" };

interface UiState {
  runId?: string;
  superstepIndex: number;
  stepIndex: number;
  tab: Tab;
}

const vscode = acquireVsCodeApi();
const app = document.getElementById("app")!;
let model: InspectorViewModel | undefined;
/** The model's timeline read row by row, for the rows drawn and the one selected. */
let rows = new TimelineRows(TimelineSchema.parse(encodeTimeline([])));
let ui: UiState = restoreUiState();
let timeline: Timeline | undefined;
/** When the message being handled arrived: the paint time reported for a load counts from here. */
let receivedAt = 0;
let parsedAt = 0;

function post(message: InspectorToHost): void {
  vscode.postMessage(message);
}

window.addEventListener("message", (event: MessageEvent<unknown>) => {
  receivedAt = performance.now();
  const parsed = parseHostMessage(event.data);
  parsedAt = performance.now();
  if (!parsed.ok) {
    console.warn(`Run Inspector: dropped a malformed message from the host: ${parsed.error}`);
    return;
  }
  receive(parsed.message);
});

function receive(message: HostToInspector): void {
  switch (message.type) {
    case "load": {
      const started = receivedAt;
      const parseMs = parsedAt - receivedAt;
      if (message.model.run.id !== ui.runId) ui = { runId: message.model.run.id, superstepIndex: 0, stepIndex: 0, tab: ui.tab };
      model = message.model;
      rows = new TimelineRows(model.timeline);
      // A reloaded case file may hold records not seen before (a verdict, an intent's reference):
      // each detail shown is asked for again, and the one already shown stays until the answer
      // replaces it, so a reload while the person reads never blanks the panel.
      for (const key of details.keys()) staleDetails.add(key);
      render();
      const renderMs = performance.now() - started;
      // Read by the webview tests: from the message's arrival to the end of the frame that shows
      // it (a task queued from requestAnimationFrame runs after that frame's layout and paint).
      requestAnimationFrame(() =>
        setTimeout(() => {
          document.body.dataset.parseMs = parseMs.toFixed(1);
          document.body.dataset.renderMs = renderMs.toFixed(1);
          document.body.dataset.paintMs = (performance.now() - started).toFixed(1);
          document.body.dataset.loaded = message.model.run.id;
        }, 0),
      );
      return;
    }
    case "superstep": {
      const { runId, superstep } = message.detail;
      details.set(detailKey(runId, superstep), message.detail);
      if (model?.run.id === runId && rows.at(ui.superstepIndex)?.superstep === superstep) renderDetail();
      return;
    }
    case "context":
      receiveContext(message.requestId, message.context);
      return;
    case "notice":
      showNotice(message.level, message.message);
      return;
    case "runState":
      runState = message;
      renderRunControls();
      return;
    default: {
      const never: never = message;
      console.warn(`Run Inspector: unhandled message ${JSON.stringify(never)}`);
    }
  }
}

function restoreUiState(): UiState {
  const s = vscode.getState() as Partial<UiState> | undefined;
  const tab = TABS.some((t) => t.id === s?.tab) ? (s!.tab as Tab) : "decision";
  return {
    ...(typeof s?.runId === "string" ? { runId: s.runId } : {}),
    superstepIndex: typeof s?.superstepIndex === "number" ? s.superstepIndex : 0,
    stepIndex: typeof s?.stepIndex === "number" ? s.stepIndex : 0,
    tab,
  };
}

function saveUiState(): void {
  vscode.setState(ui);
}

// ---------------------------------------------------------------------------------------------
// Layout

function render(): void {
  if (!model) return;
  const m = model;
  ui.superstepIndex = clamp(ui.superstepIndex, 0, Math.max(0, rows.length - 1));
  // A re-render (the case file changed on disk, often because the action just answered wrote to
  // it) keeps the notice the person has not yet seen go.
  const notice = document.getElementById("notice") ?? el("div", { className: "notice", id: "notice", role: "status", ariaLive: "polite" });
  app.replaceChildren(
    header(m),
    notice,
    el("div", { className: "run-controls", id: "run-controls" }),
    m.canRun.ok ? nothing() : restrictedBanner(m.canRun.reason),
    el("div", { className: "main" }, [timelinePane(rows), el("section", { className: "detail", id: "detail" })]),
  );
  renderDetail();
  renderRunControls();
}

let runState: Extract<HostToInspector, { type: "runState" }> = { type: "runState", state: "idle" };

/** The step-mode bar: where the run waits, with Continue, Step and Stop (they post `control`). */
function renderRunControls(): void {
  const bar = document.getElementById("run-controls");
  if (!bar) return;
  if (runState.state === "idle") {
    bar.replaceChildren();
    bar.dataset.state = "idle";
    return;
  }
  const where = runState.runId
    ? ` ${runState.runId}${runState.superstep !== undefined ? `${runState.state === "paused" ? " before" : ", at"} superstep ${runState.superstep}` : ""}`
    : "";
  const button = (action: "continue" | "step" | "stop", label: string, codicon: string): HTMLElement => {
    const b = el("button", { className: "control", title: label }, [icon(codicon), ` ${label}`]);
    b.dataset.control = action;
    if (action !== "stop" && runState.state !== "paused") (b as HTMLButtonElement).disabled = true;
    b.addEventListener("click", () => post({ type: "control", action }));
    return b;
  };
  bar.dataset.state = runState.state;
  bar.replaceChildren(
    el("span", { className: "run-state" }, [
      icon(runState.state === "paused" ? "debug-pause" : "sync"),
      ` ${runState.state === "paused" ? "Paused" : "Running"}${where}`,
    ]),
    button("continue", "Continue", "debug-continue"),
    button("step", "Step", "debug-step-over"),
    button("stop", "Stop", "debug-stop"),
  );
}

function header(m: InspectorViewModel): HTMLElement {
  const select = el("select", { className: "branch-select", title: "Branch", ariaLabel: "Branch" });
  for (const b of m.branches) {
    const depth = branchDepth(m, b.runId);
    const option = el("option", { value: b.runId }, `${"\u00a0\u00a0".repeat(depth)}${depth ? "↳ " : ""}${b.runId} (${b.status})`);
    if (b.runId === m.run.id) option.selected = true;
    select.append(option);
  }
  select.addEventListener("change", () => post({ type: "selectRun", runId: select.value }));
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
    el("div", { className: "header-right" }, [el("span", { className: "muted" }, m.caseFile.name), select]),
    m.run.error ? el("div", { className: "run-error" }, [icon("error"), ` ${m.run.error.code}: ${m.run.error.message}`]) : nothing(),
  ]);
}

function restrictedBanner(reason: string): HTMLElement {
  return el("div", { className: "banner", role: "note" }, [icon("shield"), el("span", {}, ` Restricted Mode. ${reason}`)]);
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

// ---------------------------------------------------------------------------------------------
// Timeline: a virtualised list; only the rows in view (plus a few) exist in the DOM.

class Timeline {
  readonly root: HTMLElement;
  private readonly viewport: HTMLElement;
  private readonly spacer: HTMLElement;
  private readonly rows: HTMLElement;
  private frame = 0;

  constructor(private readonly supersteps: TimelineRows) {
    this.spacer = el("div", { className: "timeline-spacer" });
    this.spacer.style.height = `${supersteps.length * ROW_HEIGHT}px`;
    this.rows = el("div", { className: "timeline-rows", role: "presentation" });
    this.viewport = el("div", {
      className: "timeline-viewport",
      tabIndex: 0,
      role: "listbox",
      ariaLabel: `Supersteps (${supersteps.length})`,
    });
    this.viewport.append(this.spacer, this.rows);
    this.viewport.addEventListener("scroll", () => this.schedule());
    this.viewport.addEventListener("keydown", (e) => this.onKey(e));
    this.rows.addEventListener("click", (e) => {
      const row = (e.target as HTMLElement).closest<HTMLElement>(".timeline-row");
      if (row) select(Number(row.dataset.index), 0);
    });
    new ResizeObserver(() => this.schedule()).observe(this.viewport);
    this.root = this.viewport;
  }

  private schedule(): void {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.paint();
    });
  }

  /**
   * Renders the rows in view; called on scroll, resize and selection. The first paint, before the
   * page has been laid out, does not ask the viewport for its size (that would force a layout of
   * the whole page only to be done again for the frame): it draws the rows a window's height
   * holds, and the ResizeObserver repaints with the real size in the same frame.
   */
  paint(beforeLayout = false): void {
    const { first, last } = beforeLayout
      ? visibleRange(0, window.innerHeight, this.supersteps.length)
      : visibleRange(this.viewport.scrollTop, this.viewport.clientHeight || 600, this.supersteps.length);
    const out: HTMLElement[] = [];
    for (let i = first; i < last; i++) out.push(this.row(i));
    this.rows.style.transform = `translateY(${first * ROW_HEIGHT}px)`;
    this.rows.replaceChildren(...out);
  }

  private row(i: number): HTMLElement {
    const s = this.supersteps.at(i)!;
    const selected = i === ui.superstepIndex;
    const verdicts = s.steps.flatMap((st) => (st.kind === "commit" && st.verdict !== null ? [st.verdict] : []));
    const failed = s.steps.some((st) => st.status === "failed");
    const row = el("div", {
      className: `timeline-row${selected ? " selected" : ""}${failed ? " failed" : ""}`,
      role: "option",
      ariaSelected: String(selected),
    });
    row.dataset.index = String(i);
    row.style.height = `${ROW_HEIGHT}px`;
    row.append(
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
    );
    return row;
  }

  /** Keeps the selected row in view (keyboard navigation, programmatic selection). */
  reveal(index: number): void {
    const top = index * ROW_HEIGHT;
    const bottom = top + ROW_HEIGHT;
    if (top < this.viewport.scrollTop) this.viewport.scrollTop = top;
    else if (bottom > this.viewport.scrollTop + this.viewport.clientHeight) this.viewport.scrollTop = bottom - this.viewport.clientHeight;
    this.paint();
  }

  private onKey(e: KeyboardEvent): void {
    const page = Math.max(1, Math.floor(this.viewport.clientHeight / ROW_HEIGHT) - 1);
    const moves: Record<string, number> = { ArrowDown: 1, ArrowUp: -1, PageDown: page, PageUp: -page };
    let next: number | undefined;
    if (e.key in moves) next = ui.superstepIndex + moves[e.key]!;
    else if (e.key === "Home") next = 0;
    else if (e.key === "End") next = this.supersteps.length - 1;
    if (next === undefined) return;
    e.preventDefault();
    select(clamp(next, 0, this.supersteps.length - 1), 0);
  }
}

function timelinePane(rows: TimelineRows): HTMLElement {
  const title = el("div", { className: "pane-title" }, [
    icon("history"),
    ` Supersteps `,
    el("span", { className: "count" }, String(rows.length)),
  ]);
  if (rows.length === 0) {
    timeline = undefined;
    return el("nav", { className: "timeline" }, [title, el("p", { className: "absent" }, "This run has no supersteps recorded yet.")]);
  }
  timeline = new Timeline(rows);
  const nav = el("nav", { className: "timeline" }, [title, timeline.root]);
  // Paint once the timeline is in the document; the ResizeObserver repaints once it has a size.
  queueMicrotask(() => timeline?.paint(true));
  return nav;
}

function select(superstepIndex: number, stepIndex: number): void {
  ui.superstepIndex = superstepIndex;
  ui.stepIndex = stepIndex;
  saveUiState();
  timeline?.reveal(superstepIndex);
  renderDetail();
}

// ---------------------------------------------------------------------------------------------
// Detail: the selected superstep, its steps, the tabs and the actions.

function renderDetail(): void {
  const detail = document.getElementById("detail");
  if (!detail || !model) return;
  const s = rows.at(ui.superstepIndex);
  if (!s) {
    detail.replaceChildren(el("p", { className: "absent" }, "Select a superstep."));
    return;
  }
  ui.stepIndex = clamp(ui.stepIndex, 0, Math.max(0, s.steps.length - 1));
  const step = s.steps[ui.stepIndex];
  const stepPicker = el(
    "div",
    { className: "step-picker", role: "tablist", ariaLabel: "Steps in this superstep" },
    s.steps.map((st, i) => {
      const b = el("button", { className: `step-button kind-${st.kind}${i === ui.stepIndex ? " selected" : ""}`, role: "tab" }, [
        icon(KIND_ICON[st.kind]),
        ` ${st.executor}`,
        el("span", { className: "muted" }, ` ${st.kind}`),
        st.status === "ok" ? nothing() : el("span", { className: `step-status status-${st.status}` }, ` ${st.status}`),
      ]);
      b.setAttribute("aria-selected", String(i === ui.stepIndex));
      b.addEventListener("click", () => select(ui.superstepIndex, i));
      return b;
    }),
  );
  const tabs = el(
    "div",
    { className: "tabs", role: "tablist" },
    TABS.map((t) => {
      const b = el("button", { className: `tab${t.id === ui.tab ? " active" : ""}`, role: "tab" }, [icon(t.icon), ` ${t.label}`]);
      b.dataset.tab = t.id;
      b.setAttribute("aria-selected", String(t.id === ui.tab));
      b.addEventListener("click", () => {
        ui.tab = t.id;
        saveUiState();
        renderDetail();
      });
      return b;
    }),
  );
  const body = el("div", { className: `tab-body tab-${ui.tab}`, role: "tabpanel" });
  const loaded = superstepDetail(s);
  if (loaded === "loading") body.append(loadingNote(s.superstep));
  else if (ui.tab === "state") body.append(stateTab(s, loaded.state));
  else if (!step) body.append(el("p", { className: "absent" }, `No step ran in superstep ${s.superstep}.`));
  else {
    const d = loaded.steps.find((x) => x.stepId === step.id);
    if (!d)
      body.append(
        absent(loaded.state && "absent" in loaded.state ? loaded.state.absent : "The details of this step are not in the case file."),
      );
    else if (ui.tab === "context") body.append(contextTab(d.context, step.id));
    else if (ui.tab === "decision") body.append(decisionTab(d.decision));
    else body.append(intentsTab(d.intents));
  }

  detail.replaceChildren(
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
    actions(s, step),
    tabs,
    body,
  );
}

function stepSummary(step: StepView): HTMLElement {
  return el("div", { className: "step-summary muted" }, [
    `${step.durationMs} ms`,
    step.writes.length ? ` · writes ${step.writes.join(", ")}` : " · writes nothing",
    step.error ? el("span", { className: "error-text" }, ` · ${step.error.code}: ${step.error.message}`) : nothing(),
  ]);
}

function actions(s: SuperstepView, step: StepView | undefined): HTMLElement {
  const m = model!;
  const runBlocked = m.canRun.ok ? undefined : m.canRun.reason;
  const noCheckpoint = s.checkpointId === null ? `No checkpoint was recorded after superstep ${s.superstep}.` : undefined;
  const notAgent = step?.kind === "agent" ? undefined : "Only agent steps can be replayed or exported as eval cases.";

  const resume = button("debug-restart", "Resume from here", "resume", runBlocked ?? noCheckpoint, () =>
    post({ type: "resumeFrom", runId: m.run.id, checkpointId: s.checkpointId! }),
  );
  resume.classList.add("primary");
  const fork = button("repo-forked", "Fork with edited state", "fork", runBlocked ?? noCheckpoint, () =>
    post({ type: "forkWithEditedState", runId: m.run.id, checkpointId: s.checkpointId! }),
  );
  const debug = button("debug-alt", "Debug from here", "debug", runBlocked ?? noCheckpoint, () =>
    post({ type: "debugFromHere", runId: m.run.id, checkpointId: s.checkpointId! }),
  );
  const modeSelect = el("select", { className: "replay-mode", ariaLabel: "Replay mode" });
  for (const mode of ReplayModeSchema.options) modeSelect.append(el("option", { value: mode }, mode));
  const replay = button("debug-rerun", "Replay step", "replay", runBlocked ?? notAgent, () =>
    post({ type: "replayStep", runId: m.run.id, stepId: step!.id, mode: ReplayModeSchema.parse(modeSelect.value) }),
  );
  const formatSelect = el("select", { className: "eval-format", ariaLabel: "Eval format" });
  for (const f of EvalFormatSchema.options) formatSelect.append(el("option", { value: f }, f));
  const exportButton = button("export", "Export as eval", "export", notAgent, () =>
    post({ type: "exportStepAsEval", runId: m.run.id, stepId: step!.id, format: EvalFormatSchema.parse(formatSelect.value) }),
  );
  modeSelect.disabled = replay.disabled;
  formatSelect.disabled = exportButton.disabled;
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
  onClick: () => void,
): HTMLButtonElement {
  const b = el("button", { className: "action" }, [icon(iconName), ` ${label}`]);
  b.dataset.action = action;
  if (disabledReason) {
    b.disabled = true;
    b.title = disabledReason;
  } else {
    b.addEventListener("click", onClick);
  }
  return b;
}

function contextTab(c: ContextView | { absent: string }, stepId: string): HTMLElement {
  if ("absent" in c) return absent(c.absent);
  const chosen = compareChoice.get(stepId);
  const compared = c.compareWith.find((r) => r.agentCallId === chosen);
  const budget = c.tokens
    ? el("div", { className: "budget" }, [
        el("span", { className: "token-total" }, `${c.tokens.count.toLocaleString("en-US")} tokens`),
        c.tokens.soft !== null || c.tokens.hard !== null
          ? el(
              "span",
              { className: "muted" },
              ` of budget ${[c.tokens.soft !== null ? `${c.tokens.soft} soft` : "", c.tokens.hard !== null ? `${c.tokens.hard} hard` : ""].filter(Boolean).join(" / ")}`,
            )
          : el("span", { className: "muted" }, " (no budget set)"),
        el("span", { className: "muted" }, ` · ${c.tokens.tokenizer}`),
        meter(c.tokens.count, c.tokens.hard ?? c.tokens.soft),
      ])
    : el("div", { className: "budget absent" }, "No token count was recorded for this call.");
  return el("div", {}, [
    el("div", { className: "kv" }, [
      kv("model", c.model),
      kv("provider", c.provider),
      kv("mode", c.mode),
      kv("context hash", c.hash),
      c.originalHash ? kv("replaces context", c.originalHash) : nothing(),
    ]),
    budget,
    c.summarised
      ? el("p", { className: "summarised" }, [
          icon("fold"),
          ` Working context summarised by the step: ${c.summarised.tokensBefore.toLocaleString("en-US")} tokens in ${c.summarised.messagesBefore} messages before (hash ${c.summarised.hashBefore}); the case file keeps every record whole.`,
        ])
      : nothing(),
    c.extracts.length > 0
      ? el("div", { className: "extracts" }, [
          el("span", { className: "muted" }, "Extracts used: "),
          ...c.extracts.map((x) =>
            el(
              "span",
              { className: "extract", title: `taken from the fact "${x.from}"` },
              `${x.key} (extract of ${x.source}@${x.sourceVersion})`,
            ),
          ),
        ])
      : nothing(),
    comparePicker(c, stepId),
    compared
      ? contextDiffView(c, compared)
      : el(
          "ol",
          { className: "messages" },
          c.messages.map((msg) =>
            el("li", { className: `message role-${msg.role}` }, [
              el("div", { className: "message-head" }, [
                el("span", { className: "role" }, msg.role),
                el("span", { className: "muted tokens" }, msg.tokens === null ? "tokens not counted" : `${msg.tokens} tokens`),
              ]),
              el("pre", { className: "message-content" }, msg.content),
            ]),
          ),
        ),
    c.raw !== null ? el("details", { className: "raw" }, [el("summary", {}, "Raw model answer"), el("pre", {}, c.raw)]) : nothing(),
  ]);
}

// ---------------------------------------------------------------------------------------------
// Context diff: the shown context against another agent step's (the same executor in another
// branch, or another agent step of this run), fetched from the host with `loadContext`.

/** Other steps' contexts fetched for a diff, by agent call id; kept, since records never change. */
const otherContexts = new Map<string, ContextView | { absent: string } | "loading">();
/** What each step's Context tab compares with (an agent call id), by step id. */
const compareChoice = new Map<string, string>();
/** `loadContext` requests not answered yet, by request id. */
const pendingContexts = new Map<string, { agentCallId: string; timer: ReturnType<typeof setTimeout> }>();
const CONTEXT_TIMEOUT_MS = 30_000;
let contextRequests = 0;

function requestContext(ref: ContextRefView): void {
  const known = otherContexts.get(ref.agentCallId);
  if (known !== undefined && (known === "loading" || !("absent" in known))) return;
  const requestId = `context-${++contextRequests}`;
  otherContexts.set(ref.agentCallId, "loading");
  const timer = setTimeout(() => {
    if (!pendingContexts.delete(requestId)) return;
    otherContexts.set(ref.agentCallId, {
      absent: `The extension did not answer within ${CONTEXT_TIMEOUT_MS / 1000} s. Choose the context again to retry.`,
    });
    renderDetail();
  }, CONTEXT_TIMEOUT_MS);
  pendingContexts.set(requestId, { agentCallId: ref.agentCallId, timer });
  post({ type: "loadContext", requestId, runId: ref.runId, superstep: ref.superstep, agentCallId: ref.agentCallId });
}

/** Called for the host's `context` answer. */
function receiveContext(requestId: string, context: ContextView | { absent: string }): void {
  const pending = pendingContexts.get(requestId);
  if (!pending) {
    console.warn(`Run Inspector: dropped an answer to a context request it did not make (${requestId})`);
    return;
  }
  clearTimeout(pending.timer);
  pendingContexts.delete(requestId);
  otherContexts.set(pending.agentCallId, context);
  if (ui.tab === "context") renderDetail();
}

function refLabel(r: ContextRefView, shown: ContextView): string {
  const kin = r.relation === "branch" ? ` (${kinship(r.runId)})` : "";
  return `${r.runId}${kin} · superstep ${r.superstep} · ${r.executor}${r.hash === shown.hash ? " · same context" : ""}`;
}

/** How another run of the case file relates to the one shown, from the branch tree. */
function kinship(runId: string): string {
  const m = model!;
  const parentOf = (id: string | null): string | null => m.branches.find((b) => b.runId === id)?.parentRunId ?? null;
  if (runId === m.run.parentRunId) return "parent run";
  if (parentOf(runId) === m.run.id) return "branch of this run";
  if (m.run.parentRunId !== null && parentOf(runId) === m.run.parentRunId) return "sibling branch";
  return "other branch";
}

function comparePicker(c: ContextView, stepId: string): HTMLElement {
  if (c.compareWith.length === 0) {
    return el("p", { className: "compare muted" }, [
      icon("diff"),
      " Nothing to compare with: this executor ran in no other branch, and this run has no other agent step.",
    ]);
  }
  const select = el("select", { className: "compare-select", ariaLabel: "Compare this context with" });
  select.append(el("option", { value: "" }, "nothing: show this context"));
  const groups: [ContextRefView["relation"], string][] = [
    ["branch", "The same executor in other branches"],
    ["run", "Other agent steps in this run"],
  ];
  for (const [relation, label] of groups) {
    const refs = c.compareWith.filter((r) => r.relation === relation);
    if (refs.length === 0) continue;
    const group = el("optgroup", { label });
    for (const r of refs) {
      const option = el("option", { value: r.agentCallId }, refLabel(r, c));
      option.selected = r.agentCallId === compareChoice.get(stepId);
      group.append(option);
    }
    select.append(group);
  }
  select.addEventListener("change", () => {
    const ref = c.compareWith.find((r) => r.agentCallId === select.value);
    if (ref) {
      compareChoice.set(stepId, ref.agentCallId);
      requestContext(ref);
    } else {
      compareChoice.delete(stepId);
    }
    renderDetail();
  });
  return el("div", { className: "compare" }, [
    icon("diff"),
    el("span", {}, " Compare with "),
    select,
    c.compareMore > 0 ? el("span", { className: "muted small" }, ` (${c.compareMore} more, further away, not listed)`) : nothing(),
  ]);
}

function contextDiffView(c: ContextView, ref: ContextRefView): HTMLElement {
  const other = otherContexts.get(ref.agentCallId);
  if (other === undefined) requestContext(ref);
  if (other === undefined || other === "loading") {
    return el("p", { className: "muted loading-detail" }, [
      icon("loading codicon-modifier-spin"),
      ` Reading the context of ${ref.executor} in superstep ${ref.superstep} of ${ref.runId}…`,
    ]);
  }
  if ("absent" in other) return absent(other.absent);
  const d = diffContexts(other, c);
  const tokens = (x: ContextView): string => (x.tokens ? x.tokens.count.toLocaleString("en-US") : "not counted");
  const delta = c.tokens && other.tokens ? signed(c.tokens.count - other.tokens.count) : "";
  const sides = table(
    ["", "context", "hash", "tokens", "model"],
    [
      [
        el("span", { className: "diff-sign diff-removed" }, "−"),
        `${ref.runId}${ref.relation === "branch" ? ` (${kinship(ref.runId)})` : ""} · superstep ${ref.superstep} · ${ref.executor}`,
        other.hash,
        tokens(other),
        other.model,
      ],
      [el("span", { className: "diff-sign diff-added" }, "+"), "this step", c.hash, `${tokens(c)}${delta ? ` (${delta})` : ""}`, c.model],
    ],
    "diff-sides",
  );
  const counts = (change: MessageDiff["change"]): number => d.messages.filter((m) => m.change === change).length;
  const summary = d.sameHash
    ? el("p", { className: "diff-verdict diff-identical" }, [icon("pass"), ` Same context: both requests have hash ${c.hash}.`])
    : d.sameMessages
      ? el("p", { className: "diff-verdict" }, [
          icon("info"),
          ` The messages are the same; the hashes differ, so the ${other.model !== c.model ? `model (${other.model} vs ${c.model})` : "model parameters or the response schema"} differ.`,
        ])
      : el(
          "p",
          { className: "diff-verdict" },
          [
            `${counts("changed")} changed`,
            `${counts("added")} only in this step`,
            `${counts("removed")} only in the other`,
            `${counts("same")} the same`,
          ].join(" · ") + ` (of ${c.messages.length} messages here, ${other.messages.length} there)`,
        );
  return el("div", { className: "context-diff" }, [
    sides,
    summary,
    d.sameHash ? nothing() : el("ol", { className: "messages diff-messages" }, d.messages.map(messageDiffItem)),
  ]);
}

function messageDiffItem(m: MessageDiff): HTMLElement {
  const role = m.before && m.after && m.before.role !== m.after.role ? `${m.before.role} → ${m.after.role}` : (m.after ?? m.before)!.role;
  const label = { same: "same", changed: "changed", added: "only in this step", removed: "only in the other" }[m.change];
  const t = (x: { tokens: number | null } | undefined): string => (x?.tokens === null || x === undefined ? "?" : String(x.tokens));
  const tokens =
    m.change === "added"
      ? `${t(m.after)} tokens`
      : m.change === "removed"
        ? `${t(m.before)} tokens`
        : m.before!.tokens !== null && m.after!.tokens !== null && m.before!.tokens !== m.after!.tokens
          ? `${m.before!.tokens} → ${m.after!.tokens} tokens (${signed(m.after!.tokens - m.before!.tokens)})`
          : m.after!.tokens === null
            ? "tokens not counted"
            : `${m.after!.tokens} tokens`;
  const item = el("li", { className: `message diff-${m.change}` }, [
    el("div", { className: "message-head" }, [
      el("span", {}, [el("span", { className: "role" }, role), el("span", { className: `diff-badge diff-badge-${m.change}` }, label)]),
      el("span", { className: "muted tokens" }, tokens),
    ]),
    el("pre", { className: "message-content" }, m.segments.map(segmentNode)),
  ]);
  item.dataset.change = m.change;
  return item;
}

/** Marks added and removed text; unchanged text longer than a dozen lines shows its ends and folds the middle (a click unfolds it). */
function segmentNode(s: Segment): Node {
  if (s.change !== "same") {
    // Line breaks at the edges stay unmarked: a mark that only holds a line end is a stray box.
    const [, lead, body, trail] = /^(\n*)([\s\S]*?)(\n*)$/.exec(s.text)!;
    const mark = s.change === "added" ? el("ins", { className: "diff-added" }, body) : el("del", { className: "diff-removed" }, body);
    return el("span", {}, [lead!, mark, trail!]);
  }
  const lines = s.text.split("\n");
  if (lines.length <= 12) return document.createTextNode(s.text);
  const fold = el("button", { className: "diff-fold", title: "Show the unchanged lines" }, `⋯ ${lines.length - 6} unchanged lines ⋯`);
  const hidden = lines.slice(3, -3).join("\n");
  fold.addEventListener("click", () => fold.replaceWith(document.createTextNode(`${hidden}\n`)));
  return el("span", {}, [`${lines.slice(0, 3).join("\n")}\n`, fold, `\n${lines.slice(-3).join("\n")}`]);
}

function signed(n: number): string {
  return n > 0 ? `+${n}` : n < 0 ? `−${-n}` : "±0";
}

function meter(count: number, limit: number | null): HTMLElement | Text {
  if (limit === null || limit <= 0) return nothing();
  const pct = Math.min(100, (count / limit) * 100);
  const bar = el("span", { className: `meter${count > limit ? " over" : ""}`, title: `${pct.toFixed(0)}% of ${limit}` });
  const fill = el("span", { className: "meter-fill" });
  fill.style.width = `${pct}%`;
  bar.append(fill);
  return bar;
}

function decisionTab(d: DecisionView | { absent: string }): HTMLElement {
  if ("absent" in d) return absent(d.absent);
  const proposal = el("section", { className: "column proposal" }, [
    el("h3", {}, [icon("sparkle"), " Proposal"]),
    el(
      "div",
      { className: "muted" },
      d.proposedBy ? `by ${d.proposedBy.executor} (call ${d.proposedBy.agentCallId})` : "no agent call linked to this verdict",
    ),
    d.rejection
      ? el("div", { className: "error-text" }, [icon("error"), ` refused before the rules: ${d.rejection.code}: ${d.rejection.message}`])
      : nothing(),
    d.proposal === null ? absent("No proposal was recorded.") : jsonBlock(d.proposal, "proposal-json"),
  ]);
  const commit = el("section", { className: "column commit" }, [
    el("h3", {}, [icon("law"), ` Commit by ${d.committedBy}`]),
    el("div", { className: `verdict verdict-${d.verdict} verdict-large` }, [icon(VERDICT_ICON[d.verdict]), ` ${d.verdict}`]),
    el("p", { className: "reason" }, d.reason),
    el(
      "ul",
      { className: "rules" },
      d.rules.map((r) =>
        el("li", { className: `rule ${r.ok ? "ok" : "broken"}` }, [
          icon(r.ok ? "pass" : "error"),
          el("span", { className: "rule-name" }, ` ${r.name}`),
          el("span", { className: "muted" }, ` ${r.message}`),
        ]),
      ),
    ),
    businessRulesSection(d.businessRules),
    el("h4", {}, "State diff"),
    d.diff.length === 0
      ? el("p", { className: "muted" }, "The commit changed no state.")
      : table(
          ["key", "before", "after"],
          d.diff.map((row) => [
            row.key,
            row.hadBefore ? jsonInline(row.before) : el("span", { className: "muted" }, "(unset)"),
            jsonInline(row.after),
          ]),
          "diff",
        ),
  ]);
  return el("div", { className: "columns" }, [proposal, commit]);
}

/** Superstep details the host has sent, by run and superstep; each asked for when first shown, and again after a reload. */
const details = new Map<string, SuperstepDetailView | "loading">();
/** Details received before the case file was last reloaded: shown until the fresh ones arrive. */
const staleDetails = new Set<string>();
const detailKey = (runId: string, superstep: number): string => `${runId}\0${superstep}`;

function superstepDetail(s: SuperstepView): SuperstepDetailView | "loading" {
  const runId = model!.run.id;
  const key = detailKey(runId, s.superstep);
  const d = details.get(key);
  if (d !== undefined && !staleDetails.delete(key)) return d;
  if (d === undefined) details.set(key, "loading");
  post({ type: "loadSuperstep", runId, superstep: s.superstep });
  return d ?? "loading";
}

function loadingNote(superstep: number): HTMLElement {
  return el("p", { className: "muted loading-detail" }, [
    icon("loading codicon-modifier-spin"),
    ` Reading superstep ${superstep} from the case file…`,
  ]);
}

function stateTab(s: SuperstepView, state: StateView): HTMLElement {
  const runId = model!.run.id;
  if ("absent" in state) return absent(state.absent);
  const compared = state.comparedWith;
  return el("div", {}, [
    el(
      "p",
      { className: "muted" },
      compared
        ? `State after superstep ${s.superstep}; marks compare with superstep ${compared.superstep}${compared.runId !== runId ? ` of ${compared.runId} (the fork point)` : ""}.`
        : `State after superstep ${s.superstep}.`,
    ),
    table(
      ["key", "value", "version", "provenance"],
      state.entries.map((e) => {
        const mark = e.change;
        return [
          el("span", {}, [e.key, mark ? " " : "", mark ? el("span", { className: `mark mark-${mark}` }, mark) : nothing()]),
          // A fact's stored value carries its provenance too; that is shown in its own column.
          jsonInline(e.provenance && isFactShaped(e.value) ? e.value.value : e.value),
          el("span", {}, [
            `v${e.version}`,
            e.writtenBy !== model!.run.id ? el("div", { className: "muted small" }, `from ${e.writtenBy}`) : nothing(),
          ]),
          e.provenance
            ? el("span", { className: "provenance" }, [
                icon("cloud-download"),
                ` fact of record from ${e.provenance.source}`,
                el("div", { className: "muted small" }, `version ${e.provenance.sourceVersion} · read ${e.provenance.readAt}`),
              ])
            : el("span", { className: "muted" }, "workflow state"),
        ];
      }),
      "state",
    ),
  ]);
}

function isFactShaped(v: unknown): v is { value: unknown; provenance: unknown } {
  return typeof v === "object" && v !== null && !Array.isArray(v) && "value" in v && "provenance" in v;
}

function intentsTab(i: IntentView[] | { absent: string }): HTMLElement {
  if (!Array.isArray(i)) return absent(i.absent);
  if (i.length === 0) return absent("This effect step recorded no intent.");
  return el(
    "div",
    { className: "intents" },
    i.map((intent) =>
      el("section", { className: `intent intent-${intent.status}` }, [
        el("h3", {}, [
          icon("zap"),
          ` ${intent.action} → ${intent.target} `,
          el("span", { className: `status status-${intent.status}` }, intent.status.replace("_", " ")),
        ]),
        el("div", { className: "kv" }, [
          kv("idempotency key", intent.key),
          intent.id !== intent.key ? kv("record", intent.id) : nothing(),
          kv("created", intent.createdAt),
          kv("updated", intent.updatedAt),
        ]),
        intent.reusedFrom
          ? el("p", { className: "reused" }, [
              icon("references"),
              " Reused the reference of run ",
              el("code", {}, intent.reusedFrom.run),
              "'s intent ",
              el("code", {}, intent.reusedFrom.intent),
              ": the same action, target, payload and relied-on values under the same key; not acted again.",
            ])
          : nothing(),
        intent.conflict ? conflictBlock(intent.conflict) : nothing(),
        el("h4", {}, "Payload"),
        jsonBlock(intent.payload),
        el("h4", {}, "Relies on"),
        jsonBlock(intent.reliesOn),
        intent.reference !== null ? el("div", {}, [el("h4", {}, "Reference"), jsonBlock(intent.reference)]) : nothing(),
        intent.error ? el("div", { className: "error-text" }, `${intent.error.code}: ${intent.error.message}`) : nothing(),
        intent.drift !== null ? el("div", {}, [el("h4", {}, "Live record changed"), jsonBlock(intent.drift)]) : nothing(),
      ]),
    ),
  );
}

/** A refused intent beside the one another run holds under its key, differing rows marked. */
function conflictBlock(c: IntentConflictView): HTMLElement {
  const show = (v: unknown): string => (v === null ? "—" : typeof v === "string" ? v : JSON.stringify(v));
  const differing = c.rows.filter((r) => r.differs).length;
  return el("div", { className: "conflict" }, [
    el("p", { className: "error-text" }, [
      icon("error"),
      ` Not acted, not adopted: key `,
      el("code", {}, c.key),
      ` is held by run `,
      el("code", {}, c.existing.run),
      `'s ${c.existing.status} intent, which differs in ${differing} field${differing === 1 ? "" : "s"}.`,
    ]),
    el("table", { className: "grid conflict-sides" }, [
      el("thead", {}, [
        el("tr", {}, [el("th", {}, "field"), el("th", {}, `existing (${c.existing.status})`), el("th", {}, "proposed (this run)")]),
      ]),
      el(
        "tbody",
        {},
        c.rows.map((r) =>
          el("tr", { className: r.differs ? "differs" : "" }, [
            el("td", {}, [r.differs ? icon("diff-modified") : nothing(), ` ${r.path}`]),
            el("td", {}, [el("code", {}, show(r.existing))]),
            el("td", {}, [el("code", {}, show(r.proposed))]),
          ]),
        ),
      ),
    ]),
    c.existing.reference !== null
      ? el("div", { className: "muted small" }, [`existing reference: `, el("code", {}, JSON.stringify(c.existing.reference))])
      : el(
          "div",
          { className: "muted small" },
          "The existing intent has no reference yet: its outcome was unknown when this one was refused.",
        ),
  ]);
}

// ---------------------------------------------------------------------------------------------
// Small DOM helpers

let noticeTimer: ReturnType<typeof setTimeout> | undefined;
function showNotice(level: "info" | "warning" | "error", text: string): void {
  const n = document.getElementById("notice");
  if (!n) {
    app.replaceChildren(el("p", { className: `notice-standalone ${level}` }, text));
    return;
  }
  n.className = `notice visible ${level}`;
  n.replaceChildren(icon(level === "info" ? "info" : level), ` ${text}`);
  if (noticeTimer) clearTimeout(noticeTimer);
  if (level === "info") noticeTimer = setTimeout(() => (n.className = "notice"), 8000);
}

/** The business rules the commit step was given, each marked with the commit rules that read it. */
function businessRulesSection(b: DecisionView["businessRules"]): HTMLElement {
  if ("absent" in b) return el("div", { className: "business-rules" }, [el("h4", {}, "Business rules"), absent(b.absent)]);
  const source =
    b.from === "agent call" ? "as recorded with the agent call it judged" : "in force when the commit ran (no agent call recorded them)";
  return el("div", { className: "business-rules" }, [
    el("h4", {}, `Business rules (${b.given.length}, ${source})`),
    b.given.length === 0
      ? el("p", { className: "muted" }, "No business rule was in force.")
      : el(
          "ul",
          { className: "rules" },
          b.given.map((r) =>
            el("li", { className: `business-rule ${r.used ? "used" : "unused"}` }, [
              icon(r.used ? "check" : "circle-outline"),
              el("span", { className: "rule-name" }, ` ${r.id}`),
              el("span", { className: "business-rule-statement" }, ` ${r.statement} `),
              jsonInline(r.value),
              el(
                "span",
                { className: "muted" },
                ` ${r.used ? `used by ${r.usedBy.join(", ")}` : "given, not read"}; confirmed by ${r.confirmedBy} at ${r.confirmedAt}${r.expiresAt ? `; expires ${r.expiresAt}` : ""}`,
              ),
            ]),
          ),
        ),
  ]);
}

function absent(text: string): HTMLElement {
  return el("p", { className: "absent" }, [icon("info"), ` ${text}`]);
}

function kv(key: string, value: string): HTMLElement {
  return el("span", { className: "kv-item" }, [el("span", { className: "muted" }, `${key} `), el("code", {}, value)]);
}

function jsonBlock(value: unknown, className = ""): HTMLElement {
  return el("pre", { className: `json ${className}` }, JSON.stringify(value, null, 2));
}

function jsonInline(value: unknown): HTMLElement {
  const text = JSON.stringify(value, null, 2);
  return el("pre", { className: "json inline" }, text.length > 2000 ? `${text.slice(0, 2000)}…` : text);
}

function table(headers: string[], rows: (string | Node)[][], className: string): HTMLElement {
  return el("table", { className: `grid ${className}` }, [
    el("thead", {}, [
      el(
        "tr",
        {},
        headers.map((h) => el("th", {}, h)),
      ),
    ]),
    el(
      "tbody",
      {},
      rows.map((r) =>
        el(
          "tr",
          {},
          r.map((c) => el("td", {}, [c])),
        ),
      ),
    ),
  ]);
}

function icon(name: string): HTMLElement {
  return el("span", { className: `codicon codicon-${name}`, ariaHidden: "true" });
}

function nothing(): Text {
  return document.createTextNode("");
}

type Props<K extends keyof HTMLElementTagNameMap> = Partial<Omit<HTMLElementTagNameMap[K], "style">>;
function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Props<K> = {},
  children: string | (string | Node)[] = [],
): HTMLElementTagNameMap[K] {
  const node = Object.assign(document.createElement(tag), props);
  if (typeof children === "string") node.textContent = children;
  else node.append(...children);
  return node;
}

function clamp(n: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, Number.isFinite(n) ? n : lo));
}

post({ type: "ready" });
