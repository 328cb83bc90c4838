/**
 * The Run Inspector's one state object and the callbacks its view calls. The view (view.ts and the
 * modules it composes) reads this state and returns DOM; only the controller (../inspector.ts)
 * changes it, in answer to a callback or a host message, then renders.
 */
import type {
  ContextView,
  EvalFormat,
  HostToInspectorReceived,
  InspectorToHost,
  ReceivedViewModel,
  ReplayMode,
  SuperstepDetailView,
} from "../../protocol/webview";
import { encodeTimeline, EvalFormatSchema, TimelineRows, TimelineSchema } from "../../protocol/webview";

export type Tab = "context" | "decision" | "state" | "intents";
export const TABS: { id: Tab; label: string; icon: string }[] = [
  { id: "context", label: "Context", icon: "comment-discussion" },
  { id: "decision", label: "Proposal vs Commit", icon: "law" },
  { id: "state", label: "State", icon: "database" },
  { id: "intents", label: "Intents", icon: "zap" },
];

/** What the person chose: kept by VS Code across reloads of the hidden panel (setState). */
export interface Selection {
  runId?: string;
  superstepIndex: number;
  stepIndex: number;
  tab: Tab;
  replayMode: ReplayMode;
  evalFormat: EvalFormat;
}

export type RunState = Extract<HostToInspectorReceived, { type: "runState" }>;
export type Absent = { absent: string };

export interface InspectorState {
  model: ReceivedViewModel | undefined;
  /** The model's timeline read row by row, for the rows drawn and the one selected. */
  rows: TimelineRows;
  selection: Selection;
  /** Superstep details the host has sent, by `detailKey`; "loading" while asked for. */
  details: Map<string, SuperstepDetailView | "loading">;
  /** Details received before the case file was last reloaded: shown until the fresh ones arrive. */
  stale: Set<string>;
  /** Other steps' contexts fetched for a diff, by agent call id; kept, since records never change. */
  otherContexts: Map<string, ContextView | Absent | "loading">;
  /** What each step's Context tab compares with (an agent call id), by step id. */
  compareWith: Map<string, string>;
  runState: RunState;
  /** The host's last notice; `at` is when it came (performance.now()), to tell a stale one. */
  notice: { level: "info" | "warning" | "error"; text: string; visible: boolean; at: number } | undefined;
  /** The timeline's scroll position and height, as last seen; undefined before the first layout. */
  timelineWindow: { top: number; height: number } | undefined;
  /** Answers being written or sent, by request id: the comment typed, and the host's refusal of the last one sent. */
  answers: Map<string, AnswerDraft>;
}

export interface AnswerDraft {
  comment: string;
  /** The option sent and not yet answered by the host. */
  sending: string | undefined;
  refusal: string | undefined;
}

/** The run's actions the detail pane offers: posted to the host as they are. */
export type RunAction = Extract<
  InspectorToHost,
  { type: "resumeFrom" | "debugFromHere" | "forkWithEditedState" | "replayStep" | "exportStepAsEval" }
>;

/** What the view calls when the person does something (from event handlers, never while rendering). */
export interface InspectorCallbacks {
  selectRun(runId: string): void;
  /** A superstep (and one of its steps) chosen: the timeline scrolls to keep it in view. */
  select(superstepIndex: number, stepIndex: number): void;
  selectTab(tab: Tab): void;
  /** The timeline scrolled or changed size. */
  scrolled(top: number, height: number): void;
  act(action: RunAction): void;
  setReplayMode(mode: ReplayMode): void;
  setEvalFormat(format: EvalFormat): void;
  /** The Context tab's picker: compare step `stepId`'s context with `agentCallId`'s (undefined: with nothing). */
  compare(stepId: string, agentCallId: string | undefined): void;
  control(action: "continue" | "step" | "stop"): void;
  /** A waiting request's option clicked: sent with the comment typed beside it. */
  answer(runId: string, requestId: string, option: string): void;
  /** The Restricted Mode banner's link. */
  manageTrust(): void;
  /** The header's Workflow Graph button. */
  showGraph(): void;
  /** The notice line's close button. */
  dismissNotice(): void;
  /** The comment box of a waiting request changed (kept in the state, not drawn again). */
  comment(requestId: string, text: string): void;
}

export const detailKey = (runId: string, superstep: number): string => `${runId}\0${superstep}`;

const TAB_IDS = new Set<string>(TABS.map((t) => t.id));
const REPLAY = new Set<string>(["recorded", "live", "edited"]);
const FORMATS = new Set<string>(EvalFormatSchema.options);

/** The selection VS Code kept for this page, each field checked (it is the page's own, but from an older build maybe). */
export function restoreSelection(saved: unknown): Selection {
  const s = (typeof saved === "object" && saved !== null ? saved : {}) as Record<string, unknown>;
  return {
    ...(typeof s.runId === "string" ? { runId: s.runId } : {}),
    superstepIndex: typeof s.superstepIndex === "number" ? s.superstepIndex : 0,
    stepIndex: typeof s.stepIndex === "number" ? s.stepIndex : 0,
    tab: typeof s.tab === "string" && TAB_IDS.has(s.tab) ? (s.tab as Tab) : "decision",
    replayMode: typeof s.replayMode === "string" && REPLAY.has(s.replayMode) ? (s.replayMode as ReplayMode) : "recorded",
    evalFormat: typeof s.evalFormat === "string" && FORMATS.has(s.evalFormat) ? (s.evalFormat as EvalFormat) : "json",
  };
}

export function initialState(saved: unknown): InspectorState {
  return {
    model: undefined,
    rows: new TimelineRows(TimelineSchema.parse(encodeTimeline([]))),
    selection: restoreSelection(saved),
    details: new Map(),
    stale: new Set(),
    otherContexts: new Map(),
    compareWith: new Map(),
    runState: { type: "runState", state: "idle" },
    notice: undefined,
    timelineWindow: undefined,
    answers: new Map(),
  };
}
