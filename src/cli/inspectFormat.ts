import type { Json } from "../engine/records";
import type { InspectOutput, RunInspection } from "../protocol/inspect";

/**
 * `casefile inspect` as text for a terminal: the runs inspect.ts builds (the stable JSON of
 * src/protocol/inspect.ts), one after another, each with its sections. Pure: the inspection in,
 * lines out; called by main.ts's inspect command without --json.
 */

const j = (v: unknown) => JSON.stringify(v ?? null);

/** The human-readable form, one run after another, each with its sections. */
export function formatInspection(
  file: string,
  runs: RunInspection[],
  extra: Partial<Pick<InspectOutput, "journal" | "damaged" | "unreadable">> = {},
): string {
  const lines: string[] = [];
  if (extra.damaged?.length) {
    lines.push(`damaged records (${extra.damaged.length}): these rows cannot be read, or name rows that are not stored`);
    for (const d of extra.damaged) lines.push(`  ${d.table} ${describeRow(d.row)}: ${d.problem}`);
    lines.push("");
  }
  lines.push(`case file ${file}: ${runs.length} run(s)`);
  if (extra.journal?.uncompactedRecords) {
    const { uncompactedSupersteps: n, uncompactedRecords: records } = extra.journal;
    lines.push(
      `${n} superstep${n === 1 ? " is" : "s are"} in the journal, not yet compacted${records === n ? "" : ` (${records} journal records)`}: ` +
        `\`casefile compact ${file}\` folds them into the database (a run still writing the file does so when it ends)`,
    );
  }
  for (const r of runs) {
    lines.push("");
    const branch = r.parent ? `  branch of ${r.parent.run} at ${r.parent.checkpoint}` : "";
    lines.push(`run ${r.id}  ${r.workflow} v${r.version}  ${r.status.toUpperCase()}${branch}`);
    if (r.patched) lines.push(`  state edited before the fork: ${j(r.patched)}`);
    for (const s of r.supersteps) {
      const steps = s.steps.map((st) => `${st.executor} (${st.kind}, ${st.status}${st.error ? `: ${st.error}` : ""})`).join(", ");
      const changed = s.changed.length ? `  changed: ${s.changed.join(", ")}` : "";
      lines.push(
        `  superstep ${String(s.superstep).padStart(3)}  ${steps || (s.superstep === 0 ? "(start)" : s.answered ? "(a person answered the waiting request)" : "(no steps)")}${changed}`,
      );
    }
    // A first extract is routine (its key shows under "changed"); a stale one is worth a line.
    for (const x of r.extracts.filter((e) => e.stale)) {
      lines.push(`  stale extract at superstep ${x.superstep}: "${x.key}" made again: ${x.reason}`);
    }
    for (const v of r.verdicts) {
      lines.push(
        `  verdict at superstep ${v.superstep} (${v.executor}): ${v.action == null ? "no valid proposal" : `proposed ${j(v.action)}`} -> ${v.verdict.toUpperCase()}: ${v.reason}`,
      );
    }
    for (const w of r.waiting) lines.push(`  waiting for a person: ${w.id}  "${w.title}"${w.options ? ` [${w.options.join(" | ")}]` : ""}`);
    for (const o of r.outputs) lines.push(`  output: ${j(o)}`);
    if (r.error) lines.push(`  error: ${r.error.code}: ${r.error.message}`);
    if (r.branches.length) lines.push(`  branches: ${r.branches.join(", ")}`);
    lines.push(`  outcome: ${r.outcome.summary}`);
    lines.push(...detailSections(r));
  }
  for (const u of extra.unreadable ?? []) lines.push("", `run ${u.run}: cannot be shown whole: ${u.message}`);
  return lines.join("\n");
}

/** The sections below a run's summary: agent calls, verdicts, intents, warnings, requests. */
function detailSections(r: RunInspection): string[] {
  const lines: string[] = [];
  if (r.agentCalls.length) {
    lines.push(`  agent calls (replay/export-eval --step takes the id, or SUPERSTEP:EXECUTOR with --run ${r.id}):`);
    for (const c of r.agentCalls) {
      lines.push(`    ${c.id}  (${c.step})  ${c.mode} via ${c.provider}, model ${c.model}, call ${c.callIndex}`);
      const t = c.tokens;
      const budget = t ? [t.soft !== undefined ? `soft ${t.soft}` : "", t.hard !== undefined ? `hard ${t.hard}` : ""].filter(Boolean) : [];
      lines.push(
        `      context ${c.hash}  ${c.messages} message(s)${t ? `, ${t.count} tokens (${[...budget, t.tokenizer].join(", ")})` : ""}`,
      );
      if (c.originalHash) lines.push(`      edited from context ${c.originalHash}`);
      if (c.summarised)
        lines.push(
          `      summarised from ${c.summarised.tokensBefore} tokens in ${c.summarised.messagesBefore} message(s) (context ${c.summarised.hashBefore})`,
        );
      if (Object.keys(c.params).length) lines.push(`      params: ${j(c.params)}`);
      if (c.rulesInForce?.length) {
        lines.push(
          c.rulesFrom?.from === "recorded"
            ? `      business rules (recorded with ${c.rulesFrom.agentCallId}):`
            : "      business rules in force:",
        );
        for (const x of c.rulesInForce)
          lines.push(
            `        ${x.id}: ${JSON.stringify(x.statement)} = ${j(x.value)} (proposed by ${x.proposedBy}${x.sourceCase ? ` from case ${x.sourceCase}` : ""}, confirmed by ${x.confirmedBy} at ${x.confirmedAt}${x.expiresAt ? `, expires ${x.expiresAt}` : ""})`,
          );
      } else if (c.rules?.length)
        lines.push(`      rules in force: ${c.rules.map((x) => `${x.id} (confirmed ${x.confirmedAt})`).join(", ")}`);
      if (c.extracts?.length)
        lines.push(`      extracts: ${c.extracts.map((x) => `${x.key} of ${x.source}@${x.sourceVersion}`).join(", ")}`);
      if (c.proposal !== undefined) lines.push(...proposalLines(c.proposal, "      "));
      if (c.rejection) lines.push(`      rejected before the commit: ${c.rejection.code}: ${c.rejection.message}`);
      if (c.proposal === undefined && c.raw !== undefined) lines.push(`      answer: ${c.raw}`);
    }
  }
  if (r.verdicts.length) {
    lines.push("  verdicts:");
    for (const v of r.verdicts) {
      lines.push(
        `    superstep ${v.superstep} (${v.executor})${v.agentCallId ? ` on ${v.agentCallId}` : ""}: ${v.verdict.toUpperCase()}: ${v.reason}`,
      );
      if (v.citedFacts.length) lines.push(`      cited facts: ${v.citedFacts.join(", ")}`);
      for (const rule of v.rules)
        lines.push(
          `      rule ${rule.name}: ${rule.ok ? "ok" : "FAILED"}: ${rule.message}${rule.businessRules?.length ? `  (read ${rule.businessRules.join(", ")})` : ""}`,
        );
      if (v.businessRules) lines.push(`      ${businessRulesLine(v.businessRules)}`);
      for (const [key, d] of Object.entries(v.diff)) lines.push(`      wrote ${key}: ${j(d.before)} -> ${j(d.after)}`);
    }
  }
  if (r.intents.length) {
    lines.push("  intents:");
    for (const i of r.intents) {
      lines.push(`    ${i.key}  ${i.action} on ${i.target}  ${i.status.toUpperCase()}  (${i.executor}, superstep ${i.superstep})`);
      lines.push(`      payload: ${j(i.payload)}`);
      lines.push(`      relies on: ${j(i.reliesOn)}`);
      if (i.basis) lines.push(`      planned against version ${i.basis.version}`);
      if (i.expectedVersion !== undefined) lines.push(`      wrote against version ${i.expectedVersion} (If-Match)`);
      if (i.reference !== undefined) lines.push(`      reference: ${j(i.reference)}`);
      if (i.error) lines.push(`      error: ${i.error.code}: ${i.error.message}`);
      if (i.drift) {
        const d = i.drift;
        lines.push(
          `      drift (${d.kind}${d.detectedAt ? `, ${d.detectedAt}` : ""}): version ${d.versions.before ?? "?"} -> ${d.versions.after ?? "?"}`,
        );
        if (d.kind === "conflict" && d.basis && d.checked)
          lines.push(`        planned against ${d.basis.version}, checked ${d.checked.version}`);
        for (const f of d.fields) lines.push(`        ${f.path}: ${j(f.before)} -> ${j(f.after)}${f.reliedOn ? "  (relied on)" : ""}`);
        if (!d.fields.length) lines.push("        no field changed");
      }
      if (i.reusedFrom)
        lines.push(`      reused the reference of run ${i.reusedFrom.run}'s identical intent ${i.reusedFrom.intent}; not acted again`);
      if (i.conflict) {
        const c = i.conflict;
        lines.push(
          `      not acted, not adopted: key ${c.key} is held by run ${c.existing.run}'s ${c.existing.status} intent ${c.existing.intent}, which differs:`,
        );
        lines.push(`        ${"field".padEnd(24)} ${`existing (run ${c.existing.run})`.padEnd(32)} proposed (this run)`);
        for (const d of c.differs) lines.push(`        ${d.path.padEnd(24)} ${j(d.existing).padEnd(32)} ${j(d.proposed)}`);
        lines.push(`        existing reference: ${j(c.existing.reference)}`);
      }
      for (const h of i.history) lines.push(`      ${h.at}  superstep ${h.superstep}  ${h.status}: ${h.what}`);
    }
  }
  if (r.warnings.length) {
    lines.push("  warnings:");
    for (const w of r.warnings) lines.push(`    superstep ${w.superstep}${w.executor ? ` (${w.executor})` : ""}: ${w.message}`);
  }
  if (r.requests.length) {
    lines.push("  requests (respond --request takes the id):");
    for (const q of r.requests) {
      const options = q.prompt.options ? ` [${q.prompt.options.join(" | ")}]` : "";
      lines.push(`    ${q.id}  (${q.executor}, superstep ${q.superstep})  "${q.prompt.title}"${options}`);
      if (q.prompt.detail) lines.push(`      detail: ${q.prompt.detail}`);
      if (q.status === "answered") {
        const who = q.answeredBy === "person" ? "a person (no name recorded)" : q.answeredBy;
        lines.push(
          `      answered by ${who} at ${q.answeredAt} (${q.answeredIn ? `in run ${q.answeredIn}` : `superstep ${q.answeredSuperstep}`}): ${j(q.answer)}`,
        );
      } else lines.push("      waiting for an answer");
    }
  }
  return lines;
}

/** A proposal whole: its action, reason and cited facts on lines of their own, then any other field. */
function proposalLines(proposal: Json, indent: string): string[] {
  if (proposal === null || typeof proposal !== "object" || Array.isArray(proposal)) return [`${indent}proposal: ${j(proposal)}`];
  const { action, reason, facts, ...rest } = proposal;
  const lines = [`${indent}proposed ${j(action)}`];
  if (reason !== undefined) lines.push(`${indent}  reason: ${typeof reason === "string" ? reason : j(reason)}`);
  if (facts !== undefined) lines.push(`${indent}  cited facts: ${Array.isArray(facts) ? facts.map(String).join(", ") : j(facts)}`);
  for (const [k, v] of Object.entries(rest)) lines.push(`${indent}  ${k}: ${j(v)}`);
  return lines;
}

function describeRow(row: Record<string, string | number>): string {
  return Object.entries(row)
    .map(([c, v]) => `${c}=${typeof v === "string" ? JSON.stringify(v) : v}`)
    .join(" ");
}

/** Which business rules a commit step was given, and which of them its rules or `apply` read. */
function businessRulesLine(b: NonNullable<RunInspection["verdicts"][number]["businessRules"]>): string {
  const from = b.from === "agent call" ? "as its agent call recorded them" : "in force when it ran";
  if (!b.given.length) return `business rules: none given (${from})`;
  const unread = b.given.map((r) => r.id).filter((id) => !b.used.includes(id));
  return (
    `business rules given (${from}): ${b.given.map((r) => r.id).join(", ")}; read: ${b.used.length ? b.used.join(", ") : "none"}` +
    (b.byApply?.length ? ` (by apply: ${b.byApply.join(", ")})` : "") +
    (unread.length ? `; not read: ${unread.join(", ")}` : "")
  );
}
