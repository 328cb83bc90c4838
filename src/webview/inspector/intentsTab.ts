/**
 * The Intents tab: each intent an effect step recorded (what, for which target, under which key,
 * what it relied on, the reference it got), and a refused one beside the intent that holds its key.
 */
import type { IntentConflictView, IntentView } from "../../protocol/webview";
import { absent, el, icon, jsonBlock, kv, nothing } from "../dom";
import type { Absent } from "./state";

export function intentsTab(i: IntentView[] | Absent): HTMLElement {
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
