/**
 * The Proposal vs Commit tab: what the model proposed beside what the commit step decided, each
 * rule's result, the business rules it was given and the state diff it committed.
 */
import type { DecisionView } from "../../protocol/webview";
import { absent, el, icon, jsonBlock, jsonInline, nothing, table } from "../dom";
import type { Absent } from "./state";
import { VERDICT_ICON } from "./timeline";

export function decisionTab(d: DecisionView | Absent): HTMLElement {
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
  ]);
  const diff = el("section", { className: "state-diff" }, [
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
  return el("div", {}, [el("div", { className: "columns" }, [proposal, commit]), diff]);
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
