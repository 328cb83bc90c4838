import { readFileSync } from "node:fs";
import path from "node:path";
import { z } from "zod";
import { CasefileError, errorMessage, onFile, zodIssue } from "../engine/errors";
import type { AgentCallRecord, ChatMessage } from "../engine/records";
import { ChatMessageSchema, ReplayModeSchema } from "../protocol/runner";
import { runSession } from "../runner/session";
import { STORE_OPTIONS, locationFromOptions, openLocation, type StoreLocation } from "../runner/storeLocation";
import { reporter, stopOnInterrupt } from "./report";
import { parseOptions, tokenBudgetOption, type Command } from "./args";
import { providerOption } from "./providerArgs";
import { resolveStep } from "./stepArg";

/**
 * `casefile replay <case file> --step <agent call id | superstep:executor> [--run RUN]
 *  [--mode recorded|live|edited] [--messages FILE.json] [--provider JSON] [--token-budget N] [--workflow F]`
 *
 * Replays one agent step as a branch run from the checkpoint just before it (the run that
 * recorded the step is never changed) and prints what the replayed step did beside what it did
 * the first time. Exit codes as for `run`: 1 when the branch failed, e.g. a recorded answer whose
 * context no longer matches (the message gives both hashes and what differs).
 */
export const replay: Command = async (args, io) => {
  const { values, positionals } = parseOptions(
    args,
    {
      step: { type: "string" },
      run: { type: "string" },
      mode: { type: "string" },
      messages: { type: "string" },
      provider: { type: "string" },
      "token-budget": { type: "string" },
      workflow: { type: "string" },
      ...STORE_OPTIONS,
    },
    1,
  );
  const location = locationFromOptions("replay", values, positionals[0]);
  if (!location || !values.step)
    throw new CasefileError("USAGE", "replay needs a case file (or --store URL --case ID) and --step <agent call id>");
  const mode = ReplayModeSchema.safeParse(values.mode ?? "recorded");
  if (!mode.success) throw new CasefileError("USAGE", `--mode must be recorded, live or edited, not "${values.mode}"`);
  const messages = values.messages === undefined ? undefined : readMessages(values.messages);
  const step = await stepOf(location, values.step, values.run);

  const report = reporter(io);
  const stopInterrupt = stopOnInterrupt(io, report.control);
  const result = await runSession(
    {
      kind: "replay",
      caseFile: location.kind === "file" ? location.file : location.caseId,
      agentCallId: step,
      mode: mode.data,
      ...(messages ? { messages } : {}),
      ...(values.workflow ? { workflowPath: values.workflow } : {}),
    },
    {
      location,
      provider: providerOption(values.provider, io),
      defaultBudget: tokenBudgetOption(values["token-budget"], io),
      env: io.env,
      ...report,
    },
  ).finally(stopInterrupt);
  io.out(
    `replayed ${step} (${mode.data}) as run ${result.runId}: ${result.status} at superstep ${result.failedAt ?? result.superstep} (${result.failedAt !== undefined ? "last " : ""}checkpoint ${result.checkpointId})`,
  );
  io.out(`${location.kind === "file" ? "case file" : "case"}: ${result.caseFile}`);

  // The session closed the case file; read back what the two calls recorded, side by side.
  const { store } = await openLocation(location, { readOnly: true });
  try {
    const original = store.getAgentCall(step)!;
    const again = store.listAgentCalls(result.runId).find((c) => c.executor === original.executor);
    const verdictOf = (id: string | undefined) => (id ? store.listVerdicts().find((v) => v.agentCallId === id) : undefined);
    const describe = (label: string, c: typeof original | undefined) => {
      if (!c) return `${label}: the step did not run`;
      const said = c.rejection
        ? `rejected (${c.rejection.code})`
        : `proposed ${JSON.stringify((c.proposal as { action?: unknown } | undefined)?.action ?? null)}`;
      const v = verdictOf(c.id);
      return `${label}: ${c.id}  ${c.mode}  ${c.hash}${c.originalHash ? ` (edited from ${c.originalHash})` : ""}  ${said}${v ? ` -> ${v.verdict.toUpperCase()}` : ""}  ${rulesNote(c)}`;
    };
    io.out(describe("original", original));
    io.out(describe("replay  ", again));
  } finally {
    store.close();
  }
  if (result.error) io.err(`casefile: ${result.error.code}: ${result.error.message}`);
  return result.status === "completed" || result.status === "waiting" ? 0 : 1;
};

/** The agent call id `--step` (and `--run`) name, read from the case file opened read-only. */
async function stepOf(location: StoreLocation, step: string, run: string | undefined): Promise<string> {
  const { store, label } = await openLocation(location, { readOnly: true });
  try {
    return resolveStep(store, label, step, run).id;
  } finally {
    store.close();
  }
}

/**
 * Which business rules a call's context was built with: a recorded replay uses those recorded
 * with the call it replays; a live or edited one (or a recorded replay of a call recorded before
 * rules were kept whole) the rules in force now.
 */
function rulesNote(c: AgentCallRecord): string {
  const n = c.rulesInForce?.length ?? c.rules?.length ?? 0;
  const count = `${n} business rule${n === 1 ? "" : "s"}`;
  const ids = (c.rulesInForce ?? c.rules ?? []).map((r) => r.id);
  const named = `${count}${ids.length ? ` (${ids.join(", ")})` : ""}`;
  if (!c.rulesInForce) return `${named}, recorded by id only`;
  return c.rulesFrom?.from === "recorded" ? `${named} recorded with ${c.rulesFrom.agentCallId}` : `${named} in force when it ran`;
}

/** The edited context: a JSON array of { role, content }, or { "messages": [...] }. */
function readMessages(file: string): ChatMessage[] {
  const abs = path.resolve(file);
  let raw: unknown;
  const text = onFile("read --messages", abs, () => readFileSync(abs, "utf8"));
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw new CasefileError("USAGE", `--messages ${abs}: ${errorMessage(e)}`, { file: abs });
  }
  const list = Array.isArray(raw) ? raw : (raw as { messages?: unknown } | null)?.messages;
  const parsed = z.array(ChatMessageSchema).min(1).safeParse(list);
  if (!parsed.success) {
    const { at, message } = zodIssue(parsed.error);
    throw new CasefileError(
      "USAGE",
      `--messages ${abs}: expected a non-empty array of { role: system|user|assistant, content } (or { messages: [...] }); at "${at}": ${message}`,
      { file: abs },
    );
  }
  return parsed.data;
}
