import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import {
  article,
  CasefileError,
  describeError,
  describeReturned,
  fileError,
  isCasefileError,
  isErrnoError,
  onFile,
  stopsForReplanning,
  WorkflowDefinitionError,
  zodIssue,
} from "../../../src/engine/errors";

/**
 * The typed errors and the helpers that word what a user reads (`casefile: CODE: message`, a
 * step's recorded error, `--json` output): each test names the slip in errors.ts it catches.
 */

/** A file-system error as Node throws it, for an errno the machine cannot easily produce on demand. */
const errno = (code: string | undefined, extra: Partial<NodeJS.ErrnoException> = {}): NodeJS.ErrnoException =>
  Object.assign(new Error(`${code ?? "no code"}: raw message`), code === undefined ? {} : { code }, extra);

describe("CasefileError: what scripts and --json read", () => {
  it("keeps its code, message and details, is named CasefileError, and serialises all three", () => {
    const e = new CasefileError("UNKNOWN_RUN", 'no run "r-9"', { run: "r-9" });
    assert.equal(e.name, "CasefileError", "the name is how isCasefileError knows it across bundles");
    assert.equal(e.code, "UNKNOWN_RUN");
    assert.equal(e.message, 'no run "r-9"');
    assert.deepEqual(JSON.parse(JSON.stringify(e)), { code: "UNKNOWN_RUN", message: 'no run "r-9"', details: { run: "r-9" } });
  });

  it("has empty details, not undefined ones, when none are given", () => {
    assert.deepEqual(new CasefileError("USAGE", "x").toJSON(), { code: "USAGE", message: "x", details: {} });
  });
});

describe("WorkflowDefinitionError: every problem of a workflow, not only the first", () => {
  const a = { code: "UNKNOWN_KEY" as const, message: 'executor "load" writes unknown key "x"' };
  const b = { code: "UNREACHABLE_EXECUTOR" as const, message: 'executor "orphan" is unreachable' };

  it("one problem is its own message and code", () => {
    const e = new WorkflowDefinitionError([a]);
    assert.equal(e.message, a.message);
    assert.equal(e.code, "UNKNOWN_KEY");
    assert.equal(e.name, "WorkflowDefinitionError");
    assert.deepEqual(e.details, { problems: [a] }, "the problems are in the details for --json");
  });

  it("several are counted and listed one a line, under the first one's code", () => {
    const e = new WorkflowDefinitionError([a, b]);
    assert.equal(e.code, "UNKNOWN_KEY");
    assert.equal(e.message, `workflow has 2 problems:\n  - ${a.message}\n  - ${b.message}`);
  });

  it("none at all is INVALID_WORKFLOW", () => {
    const e = new WorkflowDefinitionError([]);
    assert.equal(e.code, "INVALID_WORKFLOW");
    assert.equal(e.message, "workflow has 0 problems:\n");
  });
});

describe("stopsForReplanning, isCasefileError, describeError", () => {
  it("only NEEDS_REPLANNING and EFFECT_CONFLICT stop a run for a person", () => {
    assert.deepEqual(["NEEDS_REPLANNING", "EFFECT_CONFLICT", "EFFECT_FAILED", "PRECONDITION_FAILED", ""].map(stopsForReplanning), [
      true,
      true,
      false,
      false,
      false,
    ]);
  });

  it("knows a CasefileError by class or by name (one from another bundle), and nothing else", () => {
    assert.equal(isCasefileError(new CasefileError("USAGE", "x")), true);
    assert.equal(isCasefileError({ name: "CasefileError", code: "USAGE", message: "x" }), true, "by name");
    assert.equal(isCasefileError(new Error("x")), false, "a plain Error");
    assert.equal(isCasefileError({ name: "TypeError" }), false, "another name");
    assert.equal(isCasefileError(null), false, "null");
    assert.equal(isCasefileError("CasefileError"), false, "a string");
    // kills errors.ts:126 ConditionalExpression true (typeof e === "object"): undefined was read for
    // a name (a TypeError from the check itself), and a function named CasefileError passed
    assert.equal(isCasefileError(undefined), false, "undefined (what `throw undefined` catches)");
    assert.equal(
      isCasefileError(function CasefileError() {}),
      false,
      "a function named CasefileError",
    );
  });

  it("describes a typed error by its code, any other Error or thrown value as EXECUTOR_FAILED", () => {
    assert.deepEqual(describeError(new CasefileError("RULE_FAILED", "rule threw")), { code: "RULE_FAILED", message: "rule threw" });
    assert.deepEqual(describeError(new TypeError("x is not a function")), { code: "EXECUTOR_FAILED", message: "x is not a function" });
    assert.deepEqual(describeError(42), { code: "EXECUTOR_FAILED", message: "42" });
  });

  it("zodIssue of an error with no issue says 'invalid value' at the root or at the key", () => {
    assert.deepEqual(zodIssue({ issues: [] }), { at: "(root)", path: [], message: "invalid value" });
    assert.equal(zodIssue({ issues: [] }, "order").at, "order");
  });
});

describe("file-system errors: FILE_ERROR naming the file and why", () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(path.join(tmpdir(), "s18e-errors-"));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("a real read of a folder and of a missing file are errno errors, worded for a person", () => {
    let thrown: unknown;
    try {
      readFileSync(dir);
    } catch (e) {
      thrown = e;
    }
    assert.ok(isErrnoError(thrown), "EISDIR from the file system is an errno error");
    const e = fileError(thrown as NodeJS.ErrnoException, "read", dir);
    assert.equal(e.code, "FILE_ERROR");
    assert.equal(e.message, `cannot read ${dir}: it is a directory (EISDIR)`);
    assert.deepEqual(e.details, { file: dir, errno: "EISDIR" });

    const missing = path.join(dir, "nope.casefile");
    assert.throws(
      () => onFile("open", missing, () => readFileSync(missing)),
      (x: unknown) =>
        isCasefileError(x) && x.code === "FILE_ERROR" && x.message === `cannot open ${missing}: no such file or folder (ENOENT)`,
    );
  });

  it("onFile returns what its function returns, and passes on an error that is not the file system's", () => {
    const file = path.join(dir, "a.txt");
    writeFileSync(file, "hello");
    assert.equal(
      onFile("read", file, () => readFileSync(file, "utf8")),
      "hello",
    );
    const own = new CasefileError("CORRUPT_CASE_FILE", "bad page");
    assert.throws(
      () =>
        onFile("read", file, () => {
          throw own;
        }),
      (x: unknown) => x === own,
      "a typed error is not re-worded as FILE_ERROR",
    );
  });

  for (const [code, why] of [
    ["EISDIR", "it is a directory"],
    ["ENOTDIR", "a part of the path is not a directory"],
    ["ENOENT", "no such file or folder"],
    ["EACCES", "permission denied"],
    ["EPERM", "operation not permitted"],
    ["EROFS", "the file system is read-only"],
    ["ENOSPC", "no space left on the device"],
    ["EEXIST", "it already exists"],
    ["EMFILE", "too many open files"],
    ["ENAMETOOLONG", "the name is too long"],
    ["ELOOP", "too many symbolic links"],
  ] as const) {
    it(`${code} reads "${why}"`, () => {
      assert.equal(fileError(errno(code), "write", "/cases/a.casefile").message, `cannot write /cases/a.casefile: ${why} (${code})`);
    });
  }

  it("an errno without a wording gives its own message; the error's path stands in for a missing file, else (unknown path)", () => {
    assert.equal(fileError(errno("EBUSY", { path: "/dev/x" }), "lock").message, "cannot lock /dev/x: EBUSY: raw message (EBUSY)");
    const bare = fileError(errno(undefined), "list");
    assert.equal(bare.message, "cannot list (unknown path): no code: raw message", "no code, no (CODE) suffix");
    assert.deepEqual(bare.details, { file: "(unknown path)", errno: null });
  });

  it("only an Error with an E-code is an errno error", () => {
    assert.equal(isErrnoError(errno("ENOENT")), true);
    assert.equal(isErrnoError(errno("ERR_INVALID_ARG_TYPE")), false, "Node's ERR_ codes are not the file system's");
    assert.equal(isErrnoError(errno("enoent")), false, "lower case is no errno code");
    assert.equal(isErrnoError(errno(undefined)), false, "no code");
    assert.equal(isErrnoError({ code: "ENOENT", message: "x" }), false, "not an Error");
    // kills errors.ts:162 Regex /E[A-Z]+$/: Node's ERR_ codes may end in an errno name (fs.cp throws ERR_FS_EISDIR)
    assert.equal(isErrnoError(errno("ERR_FS_EISDIR")), false, "an ERR_ code ending in an errno name is not one");
    // kills errors.ts:162 ConditionalExpression true (typeof code === "string"): the test of the text alone takes a code that only reads like one
    assert.equal(isErrnoError(Object.assign(new Error("x"), { code: ["EACCES"] })), false, "a code that is not a string");
  });
});

describe("describeReturned and article: what came back, in a sentence", () => {
  it("names undefined, functions, Promises and class instances by kind", () => {
    assert.equal(describeReturned(undefined), "undefined");
    assert.equal(
      describeReturned(() => 1),
      "a function",
    );
    assert.equal(describeReturned(Promise.resolve(1)), "a Promise");
    assert.equal(describeReturned({ then: () => undefined }), "a Promise", "a thenable is awaited like one");
    assert.equal(describeReturned(new Date(0)), "a Date");
    assert.equal(describeReturned(new Uint8Array(2)), "an Uint8Array");
    assert.equal(describeReturned(new (class Invoice {})()), "an Invoice");
  });

  // kills errors.ts:213 OptionalChaining (constructor.name) and the NoCoverage StringLiteral "object":
  // an instance of a prototype that has no constructor, or one without a name, is "an object"
  it("names an object whose prototype has no constructor, or a nameless one, as an object", () => {
    assert.equal(
      describeReturned(Object.create(Object.create(null) as object) as object),
      "an object",
      "a prototype without a constructor",
    );
    assert.equal(describeReturned(Object.create({ constructor: undefined }) as object), "an object", "a constructor set to undefined");
    assert.equal(describeReturned(Object.create({ constructor: {} }) as object), "an object", "a constructor without a name");
  });

  it("shows plain values as JSON, a null-prototype object too, and cuts text past 80 characters", () => {
    assert.equal(describeReturned("yes"), '"yes"');
    assert.equal(describeReturned(42), "42");
    assert.equal(describeReturned(null), "null");
    assert.equal(describeReturned([1, "a"]), '[1,"a"]');
    assert.equal(describeReturned(Object.assign(Object.create(null) as object, { a: 1 })), '{"a":1}');
    const exactly80 = "x".repeat(78); // 80 characters once quoted
    assert.equal(describeReturned(exactly80), `"${exactly80}"`, "80 characters are shown whole");
    const longer = "y".repeat(79);
    assert.equal(describeReturned(longer), `"${"y".repeat(76)}...`, "81 are cut to 77 and an ellipsis");
  });

  it("falls back to the value as text where JSON has none (a symbol) or refuses (a bigint, a cycle)", () => {
    assert.equal(describeReturned(Symbol("s")), "Symbol(s)");
    assert.equal(describeReturned(10n), "10");
    const cycle: { self?: unknown } = {};
    cycle.self = cycle;
    assert.equal(describeReturned(cycle), "[object Object]");
  });

  it("takes 'an' before a vowel, either case, else 'a'", () => {
    assert.deepEqual(["agent step", "effect", "Invoice", "Uint8Array", "request step", "object"].map(article), [
      "an agent step",
      "an effect",
      "an Invoice",
      "an Uint8Array",
      "a request step",
      "an object",
    ]);
  });
});
