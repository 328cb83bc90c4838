import { z } from "zod";

/**
 * The stable output of `casefile cases --store URL --json`: one page of a store's cases, what the
 * editor's "Remote cases" listing and scripts read. A store may hold millions of cases, so a page
 * carries a cursor (`next`, for `--after`) rather than a total. `status` is where the case stands:
 * its queue status for a case a worker runs (queued, running, completed, waiting, failed,
 * needs_replanning, stopped), else its latest run's status, or `new` with no run yet.
 */

export const CASES_FORMAT = 1;

export const CaseRowSchema = z.object({
  caseId: z.string(),
  status: z.string(),
  createdAt: z.string(),
  /** Whether a worker runs it (it came through `casefile enqueue`). */
  queued: z.boolean(),
});

export const CasesPageSchema = z.object({
  v: z.literal(CASES_FORMAT),
  tenant: z.string(),
  status: z.string().nullable(),
  cases: z.array(CaseRowSchema),
  /** Pass as `--after` for the next page; null on the last page. */
  next: z.string().nullable(),
});

export type CaseRow = z.infer<typeof CaseRowSchema>;
export type CasesPage = z.infer<typeof CasesPageSchema>;
