/**
 * The State tab: state at the superstep's checkpoint, each key's version, who wrote it, and a fact
 * of record's provenance; marks compare with the checkpoint before (the fork point for a branch).
 */
import type { StateView, SuperstepView } from "../../protocol/webview";
import { absent, el, icon, jsonInline, nothing, table } from "../dom";

export function stateTab(runId: string, s: SuperstepView, state: StateView): HTMLElement {
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
            e.writtenBy !== runId ? el("div", { className: "muted small" }, `from ${e.writtenBy}`) : nothing(),
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
