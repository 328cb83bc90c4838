import { CasefileError, errorMessage, zodIssue } from "./errors";
import type { ExtractKey } from "./executors";
import { stableHash } from "./hash";
import type { EventRecord, Extract, Json, Provenance } from "./records";
import { toJson } from "./superstep";
import { keySchema, parseSafely, type Workflow } from "./workflow";

/**
 * Extracts from long documents. An extract key holds what a step needs of a document that sits
 * in a fact (the price table of a contract), labelled with the document's source, version and
 * fingerprint. The engine calls `prepareExtracts` at the start of every superstep, before any
 * executor runs: each extract an executor of the superstep reads is checked against its fact,
 * and made again when it is missing or no longer matches. So no executor (and no agent context)
 * ever sees an extract of another version of its document. What was made is committed with the
 * superstep's writes; the extract it replaced stays in the case file as the key's older version.
 */

export type ExtractCheck =
  | { status: "fresh" }
  | { status: "missing" }
  | { status: "stale"; reason: string }
  /** The fact the extract is taken from is not in state: there is nothing to take it from. */
  | { status: "no_source" };

export interface ExtractMade {
  key: string;
  value: Extract;
  /** The extract it replaced, when there was one. */
  previous?: Extract;
  /** Why the one in state could not be used; undefined for a first extract. */
  stale?: string;
  /** The executors of the superstep that read it. */
  readers: string[];
}

export interface ExtractPass {
  /** State for the superstep's executors: fresh extracts in, extracts of another version out. */
  state: Readonly<Record<string, Json>>;
  made: ExtractMade[];
}

/** Fingerprints of fact values already hashed: state values are frozen and shared across supersteps. */
const fingerprints = new WeakMap<object, string>();

function fingerprint(value: Json): string {
  if (value === null || typeof value !== "object") return stableHash(value);
  let hash = fingerprints.get(value);
  // Stryker disable next-line ConditionalExpression: the cache only saves time; hashing a cached value again gives the same hash
  if (!hash) {
    hash = stableHash(value);
    if (Object.isFrozen(value)) fingerprints.set(value, hash);
  }
  return hash;
}

export function isExtractValue(v: unknown): v is Extract {
  return (
    typeof v === "object" && v !== null && "value" in v && "from" in v && "sourceVersion" in v && "sourceHash" in v && "extractedAt" in v
  );
}

/** How an extract is cited: as the extract of its document's source at the version it was taken from. */
export function extractProvenance(e: Extract): Provenance {
  return { source: `extract of ${e.source}@${e.sourceVersion}`, sourceVersion: e.sourceVersion, readAt: e.extractedAt };
}

/** Whether the extract in state may be used with the fact as it is in state. */
export function checkExtract(decl: ExtractKey, current: Json | undefined, fact: Json | undefined): ExtractCheck {
  const doc = fact as unknown as { value: Json; provenance: Provenance } | undefined;
  if (!doc?.provenance) return { status: "no_source" };
  if (current === undefined) return { status: "missing" };
  const e = current as unknown as Extract;
  const now = doc.provenance;
  if (e.from !== decl.from) return { status: "stale", reason: `it was taken from "${e.from}", and is now taken from "${decl.from}"` };
  if (e.source !== now.source)
    return { status: "stale", reason: `its document in "${decl.from}" is now "${now.source}", not "${e.source}"` };
  if (e.sourceVersion !== now.sourceVersion)
    return {
      status: "stale",
      reason: `its document "${now.source}" changed from version "${e.sourceVersion}" to "${now.sourceVersion}"`,
    };
  if (e.sourceHash !== fingerprint(doc.value))
    return {
      status: "stale",
      reason: `its document "${now.source}" changed under the same version "${now.sourceVersion}" (state edited)`,
    };
  return { status: "fresh" };
}

/**
 * Checks every extract read by the executors about to run, and makes the ones missing or stale.
 * Pure but for the extractors it calls; throws EXTRACT_FAILED (naming the key, the document and
 * its version) when one throws or returns what its schema rejects.
 */
export async function prepareExtracts(input: {
  workflow: Workflow;
  state: Readonly<Record<string, Json>>;
  executors: readonly string[];
  now: () => string;
}): Promise<ExtractPass> {
  const { workflow } = input;
  const view: Record<string, Json> = { ...input.state };
  const jobs: Promise<ExtractMade>[] = [];
  for (const [key, decl] of Object.entries(workflow.extracts)) {
    const readers = [...new Set(input.executors)].filter((id) => workflow.executors[id]?.reads?.includes(key));
    if (readers.length === 0) continue;
    const current = input.state[key];
    const check = checkExtract(decl, current, input.state[decl.from]);
    if (check.status === "fresh") continue;
    if (check.status === "no_source") {
      delete view[key];
      continue;
    }
    jobs.push(
      make(key, decl, input.state[decl.from] as unknown as { value: Json; provenance: Provenance }, readers, input.now).then((value) => ({
        key,
        value,
        readers,
        ...(check.status === "stale" ? { previous: current as unknown as Extract, stale: check.reason } : {}),
      })),
    );
  }
  const made = await Promise.all(jobs);
  for (const m of made) view[m.key] = m.value as unknown as Json;
  return { state: view, made };
}

async function make(
  key: string,
  decl: ExtractKey,
  fact: { value: Json; provenance: Provenance },
  readers: string[],
  now: () => string,
): Promise<Extract> {
  const { source, sourceVersion, readAt } = fact.provenance;
  const what = `extract "${key}" of "${decl.from}" (${source}, version "${sourceVersion}")`;
  const details = { key, executor: readers[0], source, sourceVersion };
  let value: unknown;
  try {
    value = await decl.run(fact.value, { key: decl.from, source, sourceVersion, readAt });
  } catch (e) {
    throw new CasefileError("EXTRACT_FAILED", `${what} failed: ${errorMessage(e)}`, details);
  }
  const wrapped = { value, from: decl.from, source, sourceVersion, sourceHash: fingerprint(fact.value), extractedAt: now() };
  const parsed = parseSafely(keySchema(decl), wrapped);
  if (!parsed.success) {
    const { at, path, message } = zodIssue(parsed.error, key);
    throw new CasefileError("EXTRACT_FAILED", `${what} is invalid at "${at}": ${message}`, { ...details, path });
  }
  let json: Json;
  try {
    json = toJson(parsed.data, key, `extract:${key}`);
  } catch (e) {
    throw new CasefileError("EXTRACT_FAILED", `${what}: ${errorMessage(e)}`, details);
  }
  return deepFreeze(json) as unknown as Extract;
}

function deepFreeze<T>(v: T): T {
  if (v && typeof v === "object" && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const x of Object.values(v)) deepFreeze(x);
  }
  return v;
}

/**
 * The record of an extract made in a superstep: an `extract` event (document, version, who read
 * it, and the extract it replaced), and a warning when the one in state was stale. The engine
 * puts them before the superstep's step events.
 */
export function extractEvents(runId: string, superstep: number, m: ExtractMade, now: () => string): EventRecord[] {
  const event = (type: EventRecord["type"], data: Json): EventRecord => ({ runId, superstep, type, at: now(), data });
  const e = m.value;
  const data: Json = {
    key: m.key,
    from: e.from,
    source: e.source,
    sourceVersion: e.sourceVersion,
    readers: m.readers,
    stale: m.stale !== undefined,
    reason: m.stale ?? "first read",
    previous: m.previous
      ? { source: m.previous.source, sourceVersion: m.previous.sourceVersion, extractedAt: m.previous.extractedAt }
      : null,
  };
  const events = [event("extract", data)];
  if (m.stale !== undefined) {
    const message = `extract "${m.key}" was stale: ${m.stale}; extracted again for ${m.readers.join(", ")}`;
    events.push(event("warning", { executor: m.readers[0]!, message }));
  }
  return events;
}
