import { z } from "zod";
import { EvalFormatSchema } from "./webview";

/**
 * The stable output of `casefile export-eval … --json`: one line of JSON saying what was written
 * where. The CLI builds it (src/cli/evalCommands.ts) and parses it with this schema before
 * printing; the extension's Export as eval (src/extension/runCommands.ts) parses it on receipt,
 * rather than reading a path off the last line of the human output. `v` changes only when a field
 * is removed or changes meaning.
 */
export const ExportEvalResultSchema = z.object({
  v: z.literal(1),
  /** The eval case's id (the file's name, less its extension, by default). */
  id: z.string(),
  /** The absolute path of the file written. */
  path: z.string(),
  format: EvalFormatSchema,
  /** openai-evals: the eval and run config written beside the items (`path`). */
  config: z.string().optional(),
});
export type ExportEvalResult = z.infer<typeof ExportEvalResultSchema>;

/** `export-eval --json`'s one line, parsed with the schema; the problem in one sentence when it does not parse. */
export function parseExportEvalResult(stdout: string): { ok: true; value: ExportEvalResult } | { ok: false; error: string } {
  let data: unknown;
  try {
    data = JSON.parse(stdout.trim());
  } catch {
    return { ok: false, error: `not JSON: ${JSON.stringify(stdout.trim().slice(0, 200))}` };
  }
  const r = ExportEvalResultSchema.safeParse(data);
  return r.success ? { ok: true, value: r.data } : { ok: false, error: z.prettifyError(r.error) };
}
