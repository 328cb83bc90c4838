import { z } from "zod";

/**
 * The stable output of `casefile eval … --json`: JSON lines, one `case` line per eval case as it
 * is judged, then one `done` line. The CLI builds each line (src/cli/evalCommands.ts) and parses
 * it with this schema before printing; the Testing view (src/extension/evalTests.ts) parses every
 * line on receipt, so a case shows passed or failed as soon as it is judged rather than when the
 * whole run ends. `v` changes only when a field is removed or changes meaning.
 */

const VerdictSchema = z.enum(["accepted", "rejected", "escalated"]);

/** One commit rule's judgement of the proposal, as the commit step would record it. */
export const EvalRuleResultSchema = z.object({ name: z.string(), ok: z.boolean(), message: z.string() });

export const EvalCaseRunSchema = z.object({
  v: z.literal(1),
  type: z.literal("case"),
  /** The eval file, absolute. */
  file: z.string(),
  id: z.string(),
  step: z.string(),
  workflow: z.object({ name: z.string(), version: z.number() }),
  expected: z.object({ action: z.string().nullable(), verdict: VerdictSchema }),
  /** What the step proposes now and what the current commit rules make of it; absent when the case could not run. */
  got: z
    .object({
      action: z.string().nullable(),
      verdict: VerdictSchema,
      reason: z.string(),
      rules: z.array(EvalRuleResultSchema),
    })
    .optional(),
  /** Why the case could not run at all (workflow, provider or case file fault), as `code` and message. */
  error: z.object({ code: z.string(), message: z.string() }).optional(),
  /** What differs from when the case was exported (model, workflow version, proposal schema). */
  notes: z.array(z.string()),
  passed: z.boolean(),
  durationMs: z.number(),
  /** Where the case was recorded: the Testing view links a failure to this step in the Run Inspector. */
  provenance: z.object({ caseFile: z.string(), runId: z.string(), superstep: z.number(), agentCallId: z.string() }),
});
export type EvalCaseRun = z.infer<typeof EvalCaseRunSchema>;

export const EvalRunLineSchema = z.discriminatedUnion("type", [
  EvalCaseRunSchema,
  z.object({ v: z.literal(1), type: z.literal("done"), passed: z.number().int(), failed: z.number().int() }),
]);
export type EvalRunLine = z.infer<typeof EvalRunLineSchema>;

/** One line of `eval --json`, parsed with the schema; the problem in one sentence when it does not parse. */
export function parseEvalRunLine(line: string): { ok: true; value: EvalRunLine } | { ok: false; error: string } {
  let data: unknown;
  try {
    data = JSON.parse(line);
  } catch {
    return { ok: false, error: `not JSON: ${JSON.stringify(line.slice(0, 200))}` };
  }
  const r = EvalRunLineSchema.safeParse(data);
  return r.success ? { ok: true, value: r.data } : { ok: false, error: z.prettifyError(r.error) };
}
