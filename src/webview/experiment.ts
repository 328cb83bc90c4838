/**
 * The Experiment panel's webview script (bundled to media/experiment.js). It shows one results
 * file of `casefile experiment`: the totals per variant (pass rate, tokens, latency), the matrix
 * (case x variant: pass or fail, the rate over repeats, action and verdict, tokens, latency, a
 * regression against the baseline marked), and for a chosen case the context diff between two
 * chosen variants (the Run Inspector's diff, src/webview/contextDiff.ts): what the model was sent
 * under each.
 *
 * One state object and one render path: render reads the state and returns DOM, which is
 * patched into the page (selects keep their value and focus). Every message from the host is
 * parsed with the shared schema (src/protocol/experiment.ts); one that does not parse is dropped.
 */
// First: configures zod before any schema is built.
import "./zodJitless";
import type { ExperimentCell, ExperimentResults, ExperimentToHost, HostToExperiment } from "../protocol/experiment";
import { parseExperimentHostMessage, runTokens } from "../protocol/experiment";
import { diffContexts, type MessageDiff, type Segment } from "./contextDiff";
import { el, icon, nothing, patch, type Child } from "./dom";
import { connectHost } from "./host";

interface State {
  file: string;
  results: ExperimentResults;
  /** The case whose contexts are compared, and the two variants compared (before, after). */
  caseId: string;
  before: string;
  after: string;
  notice?: { level: string; message: string };
}

const app = document.getElementById("app")!;
let state: State | undefined;
const host = connectHost<ExperimentToHost, HostToExperiment>({ name: "Experiment", parse: parseExperimentHostMessage, receive });

function receive(message: HostToExperiment): void {
  switch (message.type) {
    case "load":
      state = initial(message.file, message.results, state, message.case);
      render();
      document.body.dataset.loaded = message.file;
      return;
    case "notice":
      if (!state) {
        app.replaceChildren(el("p", { className: `notice ${message.level}`, role: "status" }, message.message));
        return;
      }
      state = { ...state, notice: message };
      render();
      return;
    default: {
      const never: never = message;
      console.warn(`Experiment: unhandled message ${JSON.stringify(never)}`);
    }
  }
}

/** What a newly loaded file shows first: the first regression (else the first case), baseline against the variant that regressed. */
function initial(file: string, results: ExperimentResults, prev: State | undefined, focus: string | undefined): State {
  const names = results.variants.map((v) => v.name);
  const keep = (v: string | undefined): v is string => v !== undefined && names.includes(v);
  if (
    focus === undefined &&
    prev &&
    prev.file === file &&
    results.cases.some((c) => c.id === prev.caseId) &&
    keep(prev.before) &&
    keep(prev.after)
  )
    return { ...prev, results, notice: undefined };
  const focused = results.cases.find((c) => c.id === focus)?.id;
  const first = results.regressions.find((g) => focused === undefined || g.case === focused);
  const before = results.baseline ?? names[0]!;
  return {
    file,
    results,
    caseId: focused ?? first?.case ?? results.cases[0]?.id ?? "",
    before,
    after: first?.variant ?? names.find((n) => n !== before) ?? before,
  };
}

function update(change: Partial<State>): void {
  if (!state) return;
  state = { ...state, ...change };
  render();
}

function render(): void {
  if (!state) return;
  patch(app, view(state));
}

function view(s: State): Node[] {
  const r = s.results;
  return [
    el("header", { className: "header" }, [
      icon("beaker"),
      el("span", { className: "title" }, "Experiment"),
      el("span", { className: "file" }, s.file),
      el(
        "span",
        { className: "muted" },
        `${r.cases.length} case${r.cases.length === 1 ? "" : "s"} × ${r.variants.length} variants` +
          `${r.repeat > 1 ? `, ${r.repeat} runs each` : ""}${r.baseline ? `, baseline ${r.baseline}` : ""}, ${r.createdAt}`,
      ),
    ]),
    s.notice ? el("p", { className: `notice ${s.notice.level}`, role: "status" }, s.notice.message) : nothing(),
    el("main", { className: "main" }, [totals(r), matrix(s), comparison(s)]),
  ];
}

function section(title: string, id: string, children: Child[]): HTMLElement {
  return el("section", { className: "section", id }, [el("h2", {}, title), ...children]);
}

function totals(r: ExperimentResults): HTMLElement {
  const rows = r.totals.map((t) =>
    el("tr", { data: { variant: t.variant } }, [
      el("th", { scope: "row" }, t.variant === r.baseline ? `${t.variant} (baseline)` : t.variant),
      el("td", { className: "num pass-rate" }, `${Math.round(t.passRate * 100)}%`),
      el("td", { className: "num" }, `${t.casesPassed}/${t.cases}`),
      el("td", { className: "num tokens" }, String(t.tokens)),
      el("td", { className: "num" }, `${t.meanLatencyMs} ms`),
      el("td", { className: "spec muted" }, specText(r, t.variant)),
    ]),
  );
  return section("Totals per variant", "totals", [
    el("table", { className: "grid totals" }, [
      el("thead", {}, [
        el(
          "tr",
          {},
          ["variant", "pass rate", "cases passed", "tokens", "mean latency", "spec"].map((h) => el("th", {}, h)),
        ),
      ]),
      el("tbody", {}, rows),
    ]),
  ]);
}

function specText(r: ExperimentResults, name: string): string {
  const spec = r.variants.find((v) => v.name === name)?.spec;
  if (!spec) return "";
  const p = spec.provider;
  const provider = p.kind === "recorded" ? "recorded answer" : [p.kind, p.model, p.baseUrl].filter(Boolean).join(" ");
  return [
    provider,
    spec.temperature !== undefined ? `temperature ${spec.temperature}` : "",
    spec.workflow ? `workflow ${spec.workflow}` : "",
  ]
    .filter(Boolean)
    .join(", ");
}

function matrix(s: State): HTMLElement {
  const r = s.results;
  const names = r.variants.map((v) => v.name);
  const rows = r.cases.map((c) =>
    el("tr", { className: c.id === s.caseId ? "selected" : "", data: { key: c.id, case: c.id } }, [
      el("th", { scope: "row" }, [
        el(
          "button",
          { className: "link case", title: `Compare this case's contexts below (${c.step})`, onclick: () => update({ caseId: c.id }) },
          c.id,
        ),
        el(
          "button",
          {
            className: "icon-button",
            title: `Open ${c.file}`,
            ariaLabel: `Open the eval case file of ${c.id}`,
            onclick: () => host.post({ type: "openCase", case: c.id }),
          },
          [icon("go-to-file")],
        ),
      ]),
      el("td", { className: "expected" }, `${c.expected.action ?? "(none)"} / ${c.expected.verdict}`),
      ...names.map((n) => {
        const cell = r.cells.find((x) => x.case === c.id && x.variant === n);
        return cell ? cellNode(r, cell) : el("td", {}, "-");
      }),
    ]),
  );
  return section("Matrix", "matrix", [
    el("table", { className: "grid matrix" }, [
      el("thead", {}, [
        el(
          "tr",
          {},
          ["case", "expected", ...names.map((n) => (n === r.baseline ? `${n} (baseline)` : n))].map((h) => el("th", {}, h)),
        ),
      ]),
      el("tbody", {}, rows),
    ]),
  ]);
}

function cellNode(r: ExperimentResults, cell: ExperimentCell): HTMLElement {
  const first = cell.runs.find((x) => !x.error) ?? cell.runs[0]!;
  const regression = r.regressions.some((g) => g.case === cell.case && g.variant === cell.variant);
  const passed = cell.runs.filter((x) => x.passed).length;
  const tokens = Math.round(cell.runs.reduce((t, x) => t + runTokens(x), 0) / cell.runs.length);
  const ms = Math.round(cell.runs.reduce((t, x) => t + x.latencyMs, 0) / cell.runs.length);
  const notes = [...new Set(cell.runs.flatMap((x) => [...(x.reason ? [x.reason] : []), ...x.notes, ...(x.error ? [x.error] : [])]))];
  const node = el(
    "td",
    {
      className: `cell ${cell.passed ? "pass" : "fail"}${regression ? " regression" : ""}`,
      title: notes.join("\n"),
      data: { variant: cell.variant },
    },
    [
      el("div", { className: "outcome" }, [
        icon(cell.passed ? "pass" : "error"),
        el("span", { className: "badge" }, cell.passed ? "PASS" : "FAIL"),
        r.repeat > 1 ? el("span", { className: "rate" }, `${passed}/${cell.runs.length}`) : nothing(),
        regression ? el("span", { className: "regression-badge" }, [icon("warning"), " regression"]) : nothing(),
      ]),
      el("div", { className: "got" }, first.error ? first.error : `${first.action ?? "(none)"} / ${first.verdict ?? "?"}`),
      el("div", { className: "muted measures" }, `${tokens} tokens · ${ms} ms`),
    ],
  );
  return node;
}

function comparison(s: State): HTMLElement {
  const r = s.results;
  const picker = (value: string, label: string, key: "before" | "after"): HTMLElement =>
    el(
      "select",
      {
        className: "variant-select",
        ariaLabel: label,
        value,
        onchange: (e: Event) => update({ [key]: (e.target as HTMLSelectElement).value }),
        data: { role: key },
      },
      r.variants.map((v) => el("option", { value: v.name, selected: v.name === value }, v.name)),
    );
  const casePicker = el(
    "select",
    {
      className: "case-select",
      ariaLabel: "Case",
      value: s.caseId,
      onchange: (e: Event) => update({ caseId: (e.target as HTMLSelectElement).value }),
    },
    r.cases.map((c) => el("option", { value: c.id, selected: c.id === s.caseId }, c.id)),
  );
  const a = r.cells.find((c) => c.case === s.caseId && c.variant === s.before);
  const b = r.cells.find((c) => c.case === s.caseId && c.variant === s.after);
  return section("Context diff", "diff", [
    el("div", { className: "compare" }, [
      el("span", {}, "Case"),
      casePicker,
      el("span", {}, "under"),
      picker(s.before, "Variant compared with", "before"),
      el("span", {}, "against"),
      picker(s.after, "Variant shown", "after"),
    ]),
    diffView(s, a, b),
  ]);
}

function diffView(s: State, a: ExperimentCell | undefined, b: ExperimentCell | undefined): HTMLElement {
  if (!a?.request || !b?.request)
    return el("p", { className: "absent" }, [
      icon("info"),
      ` No request was made for this case under ${!a?.request ? s.before : s.after} (it could not run): nothing to compare.`,
    ]);
  const side = (req: NonNullable<ExperimentCell["request"]>) => ({
    hash: req.hash,
    messages: req.messages.map((m) => ({ ...m, tokens: null })),
  });
  const d = diffContexts(side(a.request), side(b.request));
  const verdict = d.sameHash
    ? el("p", { className: "diff-verdict diff-identical" }, [icon("pass"), ` Same context under both: hash ${a.request.hash}.`])
    : d.sameMessages
      ? el("p", { className: "diff-verdict" }, [
          icon("info"),
          ` The messages are the same; ${a.request.model !== b.request.model ? `the model differs (${a.request.model} vs ${b.request.model})` : "the parameters or the response schema differ"}.`,
        ])
      : el("p", { className: "diff-verdict" }, [
          icon("diff"),
          ` ${d.messages.filter((m) => m.change !== "same").length} of ${d.messages.length} messages differ.`,
        ]);
  return el("div", { className: "context-diff" }, [
    el("p", { className: "diff-sides" }, [
      el("span", { className: "diff-sign diff-removed" }, "−"),
      `${s.before}: ${a.request.model} ${a.request.hash.slice(0, 19)}  `,
      el("span", { className: "diff-sign diff-added" }, "+"),
      `${s.after}: ${b.request.model} ${b.request.hash.slice(0, 19)}`,
    ]),
    verdict,
    d.sameMessages ? nothing() : el("ol", { className: "messages" }, d.messages.map(messageNode)),
  ]);
}

function messageNode(m: MessageDiff): HTMLElement {
  const label = { same: "same", changed: "changed", added: "only in the variant shown", removed: "only in the variant compared with" }[
    m.change
  ];
  return el("li", { className: `message diff-${m.change}`, data: { change: m.change } }, [
    el("div", { className: "message-head" }, [
      el("span", { className: "role" }, (m.after ?? m.before)!.role),
      el("span", { className: `diff-badge diff-badge-${m.change}` }, label),
    ]),
    el("pre", { className: "message-content" }, m.segments.map(segmentNode)),
  ]);
}

function segmentNode(s: Segment): Node {
  if (s.change === "same") return document.createTextNode(s.text);
  return s.change === "added" ? el("ins", { className: "diff-added" }, s.text) : el("del", { className: "diff-removed" }, s.text);
}

host.post({ type: "ready" });
