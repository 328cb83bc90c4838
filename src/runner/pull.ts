import { existsSync } from "node:fs";
import path from "node:path";
import { openCaseFile } from "../casefile/index";
import { CasefileError } from "../engine/errors";
import type { CommitBatch } from "../engine/store";
import { TABLES } from "../engine/storeBatch";
import { PostgresStore } from "../pgstore/index";

export interface PullResult {
  file: string;
  runs: number;
  checkpoints: number;
  events: number;
}

/**
 * `casefile pull`: copies one case of a Postgres store (every run and branch, checkpoints, state
 * values, steps, facts, agent calls, verdicts, intents, rules, events, in commit order) into a new
 * local case file, so that a developer can inspect, fork and replay it in the editor. The store is
 * opened read-only (a read-only Postgres session too): pulling never writes to it. The case file
 * is written in one commit, so it holds the whole case or, if that fails, nothing.
 */
export async function pullCase(url: string, caseId: string, out: string, opts: { tenant?: string } = {}): Promise<PullResult> {
  const file = path.resolve(out);
  if (existsSync(file)) throw new CasefileError("USAGE", `${file} already exists: pull writes a new case file (choose another --out)`);
  const source = await PostgresStore.open(url, { caseId, readOnly: true, ...(opts.tenant !== undefined ? { tenant: opts.tenant } : {}) });
  let batch: CommitBatch;
  let tenant: string | undefined;
  try {
    tenant = source.meta().tenant;
    batch = Object.fromEntries(TABLES.map((t) => [t, source.allRecords(t)])) as CommitBatch;
  } finally {
    source.close();
  }
  const target = await openCaseFile(file, { create: true, ...(tenant !== undefined ? { tenant } : {}) });
  try {
    target.commit(batch);
  } finally {
    target.close();
  }
  return { file, runs: batch.runs!.length, checkpoints: batch.checkpoints!.length, events: batch.events!.length };
}
