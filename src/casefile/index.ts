/**
 * The case-file layer: the CaseStore implementations the engine writes through. Only the runner,
 * the CLI and the extension host import this; the engine sees the CaseStore port alone.
 */
import { SqlJsStore } from "./sqlJsStore";
import type { OpenOptions } from "./sqlJsStore";

export { MemoryStore } from "./memoryStore";
export { SqlJsStore } from "./sqlJsStore";
export { CaseFileReaders } from "./readers";
export type { OpenOptions } from "./sqlJsStore";
export type { DamagedRecord } from "./tables";
export { SCHEMA_VERSION, MIGRATIONS } from "./schema";
export type { Migration } from "./schema";
export { journalPath } from "./journal";
export { lockPath } from "./lock";
export type { LockOwner } from "./lock";

/**
 * Opens a case file the way the CLI and the runner usually want it: a writer creates the file if
 * it is missing (pass `create: false` to require it), a reader (`readOnly`) never creates.
 */
export function openCaseFile(file: string, opts: OpenOptions = {}): Promise<SqlJsStore> {
  // Stryker disable next-line ConditionalExpression: SqlJsStore.open never creates for a reader, whatever create says
  return SqlJsStore.open(file, { ...opts, create: opts.create ?? opts.readOnly !== true });
}
