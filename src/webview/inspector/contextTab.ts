/**
 * The Context tab: the exact messages an agent step gave its model, with per-message tokens and
 * the budget, the extracts it was built with, and a diff against another agent step's context
 * (the same executor in another branch, or another agent step of this run) chosen in its picker.
 */
import type { ContextRefView, ContextView, ReceivedViewModel as InspectorViewModel } from "../../protocol/webview";
import { diffContexts } from "../contextDiff";
import type { MessageDiff, Segment } from "../contextDiff";
import { absent, el, icon, kv, nothing, table } from "../dom";
import type { Absent, InspectorCallbacks, InspectorState } from "./state";

export function contextTab(state: InspectorState, on: InspectorCallbacks, c: ContextView | Absent, stepId: string): HTMLElement {
  if ("absent" in c) return absent(c.absent);
  const chosen = state.compareWith.get(stepId);
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
    comparePicker(state, on, c, stepId),
    compared
      ? contextDiffView(state, c, compared)
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

function refLabel(m: InspectorViewModel, r: ContextRefView, shown: ContextView): string {
  const kin = r.relation === "branch" ? ` (${kinship(m, r.runId)})` : "";
  return `${r.runId}${kin} · superstep ${r.superstep} · ${r.executor}${r.hash === shown.hash ? " · same context" : ""}`;
}

/** How another run of the case file relates to the one shown, from the branch tree. */
function kinship(m: InspectorViewModel, runId: string): string {
  const parentOf = (id: string | null): string | null => m.branches.find((b) => b.runId === id)?.parentRunId ?? null;
  if (runId === m.run.parentRunId) return "parent run";
  if (parentOf(runId) === m.run.id) return "branch of this run";
  if (m.run.parentRunId !== null && parentOf(runId) === m.run.parentRunId) return "sibling branch";
  return "other branch";
}

function comparePicker(state: InspectorState, on: InspectorCallbacks, c: ContextView, stepId: string): HTMLElement {
  if (c.compareWith.length === 0) {
    return el("p", { className: "compare muted" }, [
      icon("diff"),
      " Nothing to compare with: this executor ran in no other branch, and this run has no other agent step.",
    ]);
  }
  const select = el("select", {
    className: "compare-select",
    ariaLabel: "Compare this context with",
    onchange: (e) => on.compare(stepId, (e.currentTarget as HTMLSelectElement).value || undefined),
  });
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
      const option = el("option", { value: r.agentCallId }, refLabel(state.model!, r, c));
      option.selected = r.agentCallId === state.compareWith.get(stepId);
      group.append(option);
    }
    select.append(group);
  }
  return el("div", { className: "compare" }, [
    icon("diff"),
    el("span", {}, " Compare with "),
    select,
    c.compareMore > 0 ? el("span", { className: "muted small" }, ` (${c.compareMore} more, further away, not listed)`) : nothing(),
  ]);
}

function contextDiffView(state: InspectorState, c: ContextView, ref: ContextRefView): HTMLElement {
  // Asked for by the controller when the picker chose it; "loading" until the host answers.
  const other = state.otherContexts.get(ref.agentCallId);
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
        `${ref.runId}${ref.relation === "branch" ? ` (${kinship(state.model!, ref.runId)})` : ""} · superstep ${ref.superstep} · ${ref.executor}`,
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
  const hidden = lines.slice(3, -3).join("\n");
  const fold = el(
    "button",
    {
      className: "diff-fold",
      title: "Show the unchanged lines",
      onclick: (e) => (e.currentTarget as HTMLElement).replaceWith(document.createTextNode(`${hidden}\n`)),
    },
    `⋯ ${lines.length - 6} unchanged lines ⋯`,
  );
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
