import { existsSync } from "node:fs";
import path from "node:path";
import { openCaseFile, type OpenOptions, type SqlJsStore } from "../casefile/index";
import { CasefileError } from "../engine/errors";

/**
 * Finds and opens the rule book a session's agent steps read their business rules from:
 * $CASEFILE_RULES if set, else `rules.casefile` beside the workflow file, else none (the engine
 * then reads the case file's own rules). Opened read-only: it takes no lock, so any number of
 * runners read one book while a person edits it with `casefile rules`; a session sees the book
 * as it was when the session started.
 */
export async function openRuleBook(workflowPath: string, env: NodeJS.ProcessEnv): Promise<SqlJsStore | undefined> {
  const explicit = env.CASEFILE_RULES;
  const file = explicit ? path.resolve(explicit) : path.join(path.dirname(workflowPath), "rules.casefile");
  // A book named explicitly must exist (a typo should not silently drop every rule).
  if (!explicit && !existsSync(file)) return undefined;
  return openRuleBookFile(file, { readOnly: true }, "CASEFILE_RULES");
}

/**
 * Opens a rule book (a case file holding rules) that must exist: a missing one is refused as a
 * rule book, not as "no case file". Called for $CASEFILE_RULES and by every `casefile rules`
 * subcommand but `add`, which makes the book. `namedBy` says where the path came from.
 */
export function openRuleBookFile(file: string, opts: OpenOptions, namedBy?: string): Promise<SqlJsStore> {
  if (!existsSync(file)) {
    throw new CasefileError(
      "NOT_A_CASE_FILE",
      `no rule book at ${file}${namedBy ? ` (named by ${namedBy})` : ""}; \`casefile rules ${file} add --statement TEXT\` makes one`,
      { file },
    );
  }
  return openCaseFile(file, { ...opts, create: false });
}

/**
 * CASEFILE_COMPACT_AT_BYTES: the journal size above which a commit compacts the case file. Only
 * tests set it (the kill test makes it tiny so that kills land during compactions).
 */
export function compactAtFromEnv(env: NodeJS.ProcessEnv): number | undefined {
  const raw = env.CASEFILE_COMPACT_AT_BYTES;
  if (raw === undefined || raw === "") return undefined;
  const n = Number(raw);
  return Number.isInteger(n) && n >= 0 ? n : undefined;
}
