import path from "node:path";
import { openCaseFile } from "../casefile/index";
import { CasefileError } from "../engine/errors";
import type { CaseStore } from "../engine/store";
import { isPostgresUrl, redact } from "../pgstore/url";

/**
 * Where a command's case lives: a case file on disk (`--case-file F`, or the positional case file),
 * or one case of a Postgres store (`--store postgres://… --case ID`). The CLI's commands and the
 * session open it through `openLocation`, so each command names a case once and works on both.
 */
export type StoreLocation = { kind: "file"; file: string } | { kind: "postgres"; url: string; caseId: string };

export interface OpenedCase {
  store: CaseStore;
  /** How messages and reports name the case: the file's absolute path, or `<url> case <id>` without the password. */
  label: string;
  /** What the open noticed (a stale lock taken over, a torn journal tail): case files only. */
  warnings: string[];
}

/**
 * How long a short writer a person may run twice at once (`respond`, a `rules` change) waits for
 * a case file another writer holds before CASE_FILE_LOCKED; a run or resume does not wait.
 */
export const SHORT_WRITER_LOCK_WAIT_MS = 10_000;

export interface LocationOpenOptions {
  readOnly?: boolean;
  create?: boolean;
  tenant?: string;
  compactAtBytes?: number;
  /** A case file another writer holds is waited for this long (case files only; SqlJsStore's OpenOptions). */
  waitForLockMs?: number;
}

export function locationLabel(loc: StoreLocation): string {
  return loc.kind === "file" ? path.resolve(loc.file) : `${redact(loc.url)} case ${loc.caseId}`;
}

export async function openLocation(loc: StoreLocation, opts: LocationOpenOptions = {}): Promise<OpenedCase> {
  if (loc.kind === "file") {
    const store = await openCaseFile(loc.file, opts);
    return { store, label: path.resolve(loc.file), warnings: store.warnings };
  }
  // Required here, not imported: a run on a case file never loads the Postgres store (cold start).
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { PostgresStore } = require("../pgstore/index") as typeof import("../pgstore/index");
  const store = await PostgresStore.open(loc.url, {
    caseId: loc.caseId,
    ...(opts.tenant !== undefined ? { tenant: opts.tenant } : {}),
    ...(opts.readOnly ? { readOnly: true } : {}),
    create: opts.create ?? opts.readOnly !== true,
  });
  return { store, label: locationLabel(loc), warnings: [] };
}

/**
 * The location a command's options name: `--store URL --case ID`, else the case file (the
 * positional argument or --case-file). Refuses half of a store location or both kinds at once.
 * `file` undefined and no store: undefined (the caller applies its default or its usage error).
 */
export function locationFromOptions(
  command: string,
  opts: { store?: string; case?: string },
  file: string | undefined,
): StoreLocation | undefined {
  if (opts.store === undefined && opts.case === undefined) return file === undefined ? undefined : { kind: "file", file };
  if (opts.store === undefined) throw new CasefileError("USAGE", `${command}: --case ID names a case of a store: add --store postgres://…`);
  if (opts.case === undefined || opts.case === "")
    throw new CasefileError("USAGE", `${command}: --store needs --case ID (the case to work on)`);
  if (!isPostgresUrl(opts.store)) {
    throw new CasefileError(
      "USAGE",
      `${command}: --store takes a postgres:// URL, not "${redact(opts.store)}" (a case file is --case-file F)`,
    );
  }
  if (file !== undefined) throw new CasefileError("USAGE", `${command}: give either a case file or --store with --case, not both`);
  return { kind: "postgres", url: opts.store, caseId: opts.case };
}

/** The parseArgs options every command that takes a case adds. */
export const STORE_OPTIONS = { store: { type: "string" }, case: { type: "string" } } as const;
