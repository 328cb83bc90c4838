/**
 * A person's request in the detail pane: in the superstep that asked it, the prompt, its options
 * as buttons and a comment box while it waits (a refused answer is shown here, under the buttons);
 * in the superstep where the answer arrived, who answered, what and when. The answer is checked
 * by the runner against the request step's own answer schema, so the refusal is the workflow's.
 */
import type { RequestView, SuperstepDetailView } from "../../protocol/webview";
import { el, icon, jsonInline, nothing } from "../dom";
import type { InspectorCallbacks, InspectorState } from "./state";

/** The options a request without its own offers: the default answer schema's decisions. */
const DEFAULT_OPTIONS = ["approve", "reject"];

export function requestCards(state: InspectorState, on: InspectorCallbacks, detail: SuperstepDetailView): Node {
  if (detail.requests.length === 0) return nothing();
  return el(
    "div",
    { className: "requests" },
    detail.requests.map((r) => requestCard(state, on, detail, r)),
  );
}

function requestCard(state: InspectorState, on: InspectorCallbacks, detail: SuperstepDetailView, r: RequestView): HTMLElement {
  const askedHere = r.askedIn.runId === detail.runId && r.askedIn.superstep === detail.superstep;
  const head = el("h3", {}, [icon("person"), ` ${r.prompt.title}`]);
  const where = el(
    "div",
    { className: "muted" },
    askedHere
      ? `asked by ${r.executor} (request ${r.id})${r.askedAt ? ` at ${r.askedAt}` : ""}`
      : `asked by ${r.executor} in superstep ${r.askedIn.superstep}${r.askedIn.runId !== detail.runId ? ` of run ${r.askedIn.runId}` : ""}`,
  );
  const children: Node[] = [head, where];
  if (r.prompt.detail) children.push(el("p", { className: "request-detail" }, r.prompt.detail));
  if (r.answer) children.push(answeredLine(r, detail));
  else if (r.status === "waiting") children.push(answerForm(state, on, r));
  else children.push(el("p", { className: "muted" }, "Not answered, and no longer waiting: the run went on without this request."));
  return el("section", { className: `request-card request-${r.status}`, data: { key: r.id, request: r.id } }, children);
}

/** Who answered, what and when; and, from the superstep that asked, where the answer arrived. */
function answeredLine(r: RequestView, detail: SuperstepDetailView): HTMLElement {
  const a = r.answer!;
  const value = a.value as { decision?: unknown; choice?: unknown; comment?: unknown } | null;
  const word =
    value && typeof value === "object" && !Array.isArray(value)
      ? value.decision === "choose" && typeof value.choice === "string"
        ? value.choice
        : typeof value.decision === "string"
          ? value.decision
          : undefined
      : undefined;
  const arrivedHere = a.runId === detail.runId && a.superstep === detail.superstep;
  return el("div", { className: "request-answered" }, [
    el(
      "p",
      { className: "answered-by" },
      [
        icon("pass"),
        " Answered by ",
        el("strong", {}, a.by ?? "a person (no name was recorded)"),
        word !== undefined ? [": ", el("strong", { className: "answer-word" }, word)] : [],
        ` at ${a.at}`,
        arrivedHere ? "" : ` (in superstep ${a.superstep}${a.runId !== detail.runId ? ` of run ${a.runId}` : ""})`,
      ].flat(),
    ),
    value && typeof value.comment === "string" && value.comment
      ? el("blockquote", { className: "answer-comment" }, value.comment)
      : nothing(),
    el("details", { className: "answer-raw" }, [el("summary", {}, "The answer as recorded"), jsonInline(a.value)]),
  ]);
}

function answerForm(state: InspectorState, on: InspectorCallbacks, r: RequestView): HTMLElement {
  const m = state.model!;
  const draft = state.answers.get(r.id);
  const blocked = m.canRun.ok ? undefined : m.canRun.reason;
  const options = r.prompt.options.length ? r.prompt.options : DEFAULT_OPTIONS;
  const commentId = `comment-${r.id}`;
  return el("div", { className: "answer-form" }, [
    el("label", { htmlFor: commentId, className: "muted" }, "Comment (optional, recorded with your answer, your name and the time)"),
    el("textarea", {
      id: commentId,
      className: "request-comment",
      rows: 2,
      value: draft?.comment ?? "",
      disabled: blocked !== undefined,
      oninput: (e) => on.comment(r.id, (e.currentTarget as HTMLTextAreaElement).value),
    }),
    el(
      "div",
      { className: "request-options", role: "group", ariaLabel: "Answer" },
      options.map((o) =>
        el(
          "button",
          {
            className: `action request-option${o === options[0] ? " primary" : ""}`,
            data: { option: o },
            ...(blocked || draft?.sending
              ? { disabled: true, title: blocked ?? `Sending "${draft!.sending}"…` }
              : { onclick: () => on.answer(m.run.id, r.id, o) }),
          },
          [draft?.sending === o ? icon("loading codicon-modifier-spin") : nothing(), draft?.sending === o ? ` ${o}` : o],
        ),
      ),
    ),
    blocked ? el("p", { className: "muted" }, blocked) : nothing(),
    draft?.refusal
      ? el("p", { className: "error-text request-refusal", role: "alert" }, [icon("error"), ` Refused: ${draft.refusal}`])
      : nothing(),
  ]);
}
