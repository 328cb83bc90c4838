/**
 * Typed errors. Every error Casefile raises on purpose is a CasefileError with a stable `code`
 * (scripts and the extension switch on it) and a message that names the executor, key, file or
 * field at fault.
 */
export type ErrorCode =
  // workflow definition (found when the workflow is built)
  | "DUPLICATE_OWNER"
  | "FACT_WRITER_NOT_LOADER"
  | "UNKNOWN_KEY"
  | "UNKNOWN_EXECUTOR"
  | "UNREACHABLE_EXECUTOR"
  | "INVALID_WORKFLOW"
  /** An extract's `from` names a key that is not a fact (it has no source version to check against). */
  | "EXTRACT_SOURCE_NOT_FACT"
  /** An executor owns an extract key: extracts are made by the engine, never written by an executor. */
  | "EXTRACT_OWNED"
  // running a workflow
  | "WRITE_NOT_OWNED"
  | "DOUBLE_WRITE"
  | "INVALID_STATE_VALUE"
  | "INVALID_INPUT"
  | "INVALID_PATCH"
  | "EXECUTOR_FAILED"
  /** An edge's `when` condition threw. */
  | "EDGE_FAILED"
  /** A commit step's rule threw (a bug in the rule: the step fails, it does not judge). */
  | "RULE_FAILED"
  | "MIGRATION_FAILED"
  /** A checkpoint holds a message for an executor the workflow no longer has, and no migration routes it. */
  | "UNDELIVERABLE_MESSAGE"
  | "WORKFLOW_MISMATCH"
  | "UNKNOWN_CHECKPOINT"
  | "UNKNOWN_RUN"
  | "UNKNOWN_REQUEST"
  | "INVALID_ANSWER"
  /** A second answer to a request: the first (what, who, when, which run) is named. */
  | "REQUEST_ANSWERED"
  | "RUN_NOT_RESUMABLE"
  | "MODEL_RESPONSE_MISSING"
  | "MODEL_CALL_FAILED"
  | "TOKEN_BUDGET_EXCEEDED"
  /** A run names a model (--provider, casefile.model) other than the one an agent step pins. */
  | "MODEL_PINNED"
  /** An extractor threw, or returned a value its schema rejects. */
  | "EXTRACT_FAILED"
  // effects and business rules
  /** A conditional write was refused (HTTP 412): the record changed after the effect checked it. */
  | "PRECONDITION_FAILED"
  /** The live record changed in a field an effect relies on: the case stops for a person. */
  | "NEEDS_REPLANNING"
  /**
   * A branch reached an effect whose idempotency key another run of the case already holds (done,
   * or open) with a different action, target, payload or relied-on value: it neither acts nor
   * adopts the other's reference, and stops for replanning with both intents recorded.
   */
  | "EFFECT_CONFLICT"
  /** An effect's check or act failed; its intent is recorded failed with the error. */
  | "EFFECT_FAILED"
  | "UNKNOWN_RULE"
  /** Confirming a rule whose expiry has passed: it would put nothing in force. */
  | "RULE_EXPIRED"
  /** Confirming a rule already confirmed whose statement and value have not changed since: who and when are named. */
  | "RULE_CONFIRMED"
  /** A rule's proposer confirming it without --self-confirm. */
  | "SELF_CONFIRMATION"
  // case files
  | "NOT_A_CASE_FILE"
  | "CORRUPT_CASE_FILE"
  | "NEWER_SCHEMA"
  | "FOREIGN_TENANT"
  | "CASE_FILE_LOCKED"
  | "READ_ONLY"
  /** A CommitBatch the store refused before writing anything (not JSON, missing id, duplicate row). */
  | "INVALID_BATCH"
  /** A store (Postgres) that cannot be reached, or refused the connection or a statement. */
  | "STORE_UNAVAILABLE"
  /** A case the store does not hold (or the connection's tenant may not see). */
  | "UNKNOWN_CASE"
  /** A commit by a worker whose lease on the case was taken over: refused, the worker stops that case. */
  | "LEASE_LOST"
  /** The file system refused a read or write the command needed (a directory where a file was meant, no permission, no folder). */
  | "FILE_ERROR"
  /** A receiver (an OTLP endpoint) did not accept what was sent to it: unreachable, refused or timed out. */
  | "EXPORT_FAILED"
  // process boundaries
  | "INVALID_MESSAGE"
  | "BUNDLE_FAILED"
  | "USAGE";

export class CasefileError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = "CasefileError";
  }

  toJSON(): { code: ErrorCode; message: string; details: Record<string, unknown> } {
    return { code: this.code, message: this.message, details: this.details };
  }
}

/** Raised by defineWorkflow; `problems` lists every fault found, not only the first. */
export class WorkflowDefinitionError extends CasefileError {
  constructor(readonly problems: { code: ErrorCode; message: string; executor?: string; key?: string }[]) {
    super(
      problems[0]?.code ?? "INVALID_WORKFLOW",
      problems.length === 1
        ? problems[0]!.message
        : `workflow has ${problems.length} problems:\n` + problems.map((p) => `  - ${p.message}`).join("\n"),
      { problems },
    );
    this.name = "WorkflowDefinitionError";
  }
}

/** Codes that stop a run as `needs_replanning` (a person decides) rather than `failed`. */
export function stopsForReplanning(code: string): boolean {
  return code === "NEEDS_REPLANNING" || code === "EFFECT_CONFLICT";
}

export function isCasefileError(e: unknown): e is CasefileError {
  return e instanceof CasefileError || (typeof e === "object" && e !== null && (e as { name?: string }).name === "CasefileError");
}

/** A one-line description of any thrown value, for logs and step records. */
export function describeError(e: unknown): { code: string; message: string } {
  if (e instanceof CasefileError) return { code: e.code, message: e.message };
  if (e instanceof Error) return { code: "EXECUTOR_FAILED", message: e.message };
  return { code: "EXECUTOR_FAILED", message: String(e) };
}

/** The message of any thrown value: an Error's message, else the value as text. */
export function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** What zodIssue reads of a zod error; structural, so this module needs no zod import. */
export interface ZodErrorLike {
  readonly issues: readonly { readonly path: readonly PropertyKey[]; readonly message: string }[];
}

/**
 * The first problem a schema found, for a message that names where it is: `at` is the dotted path
 * below `key` (`key` itself when the whole value is wrong), or below the root ("(root)" for the
 * whole value) when no key is given; `path` is the path below the value, for error details.
 * Callers put it in their own sentence, usually `... is invalid at "${at}": ${message}`.
 */
export function zodIssue(error: ZodErrorLike, key?: string): { at: string; path: string[]; message: string } {
  const issue = error.issues[0] ?? { path: [], message: "invalid value" };
  const path = issue.path.map(String);
  const at = key === undefined ? path.join(".") || "(root)" : [key, ...path].join(".");
  return { at, path, message: issue.message };
}

/** A Node file-system error: an errno code and usually the path it was about. */
export function isErrnoError(e: unknown): e is NodeJS.ErrnoException & { code: string } {
  return (
    e instanceof Error && typeof (e as NodeJS.ErrnoException).code === "string" && /^E[A-Z]+$/.test((e as NodeJS.ErrnoException).code!)
  );
}

const ERRNO_TEXT: Record<string, string> = {
  EISDIR: "it is a directory",
  ENOTDIR: "a part of the path is not a directory",
  ENOENT: "no such file or folder",
  EACCES: "permission denied",
  EPERM: "operation not permitted",
  EROFS: "the file system is read-only",
  ENOSPC: "no space left on the device",
  EEXIST: "it already exists",
  EMFILE: "too many open files",
  ENAMETOOLONG: "the name is too long",
  ELOOP: "too many symbolic links",
};

/**
 * FILE_ERROR for what the file system refused: `cannot write /x/y: it is a directory`. `verb` is
 * what the caller was doing (read, write, create, list...); `file` the path it meant, else the
 * error's own.
 */
export function fileError(e: NodeJS.ErrnoException, verb: string, file?: string): CasefileError {
  const where = file ?? e.path ?? "(unknown path)";
  const why = (e.code && ERRNO_TEXT[e.code]) ?? e.message;
  return new CasefileError("FILE_ERROR", `cannot ${verb} ${where}: ${why}${e.code ? ` (${e.code})` : ""}`, {
    file: where,
    errno: e.code ?? null,
  });
}

/** Runs `fn`, turning a file-system error it throws into fileError(verb, file). */
export function onFile<T>(verb: string, file: string, fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    if (isErrnoError(e)) throw fileError(e, verb, file);
    throw e;
  }
}

/**
 * A value user code returned where another kind was due, for a message saying what came back:
 * `"yes"`, `42`, `undefined`, `a Promise` (an async function where a synchronous one is called).
 */
export function describeReturned(v: unknown): string {
  if (typeof v === "function") return "a function";
  if (typeof v === "object" && v !== null && typeof (v as { then?: unknown }).then === "function") return "a Promise";
  // Not a null prototype here (that object is shown as JSON below); only its constructor may be missing.
  if (typeof v === "object" && v !== null && ![Object.prototype, Array.prototype, null].includes(Object.getPrototypeOf(v)))
    return article(Object.getPrototypeOf(v).constructor?.name ?? "object");
  // undefined is worded here too: JSON.stringify(undefined) is undefined, String(undefined) "undefined".
  let text: string;
  try {
    text = JSON.stringify(v) ?? String(v);
  } catch {
    text = String(v);
  }
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

/** "a request step", "an agent step": the article a word takes in a message (by its first letter, which fits step kinds and type names). */
export function article(word: string): string {
  return `${/^[aeiou]/i.test(word) ? "an" : "a"} ${word}`;
}
