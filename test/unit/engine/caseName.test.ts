import assert from "node:assert/strict";
import { z } from "zod";
import { caseIdOf, defaultCaseFile } from "../../../src/engine/caseName";
import { isCasefileError } from "../../../src/engine/errors";

/**
 * A case's id and its default case file, from the workflow's input schema and `caseId` (pure: no
 * file is touched). The runner's use of it, one case file per case, is test/unit/runner/caseName.test.ts.
 */
describe("case naming: the case id and the default case file", () => {
  const spec = { name: "w", input: z.object({ id: z.string() }), caseId: (i: { id: string }) => i.id };

  it("makes an id safe for a file name: each run of unsafe characters one _, and no leading dot", () => {
    assert.equal(caseIdOf(spec, { id: "a/b:c" }), "a_b_c");
    assert.equal(caseIdOf(spec, { id: "../x" }), "__x");
    // A run of unsafe characters is one _ (a regex without + would give a__b); safe ones stay.
    assert.equal(caseIdOf(spec, { id: "INV 10//02" }), "INV_10_02");
    assert.equal(caseIdOf(spec, { id: "  INV-1001.a_b  " }), "INV-1001.a_b", "trimmed, and - . _ kept");
    // A workflow written in plain JS may give a number; it is an id too.
    const numeric = ((i: { n: number }) => i.n) as unknown as (input: unknown) => string;
    assert.equal(caseIdOf({ name: "w", caseId: numeric }, { n: 42 }), "42", "a number is an id");
  });

  it("checks the input against the workflow's input schema first, naming the field", () => {
    assert.throws(
      () => caseIdOf(spec, { id: 7 }),
      (e: unknown) =>
        isCasefileError(e) && e.code === "INVALID_INPUT" && e.message.startsWith('input of workflow "w" is invalid at "id": '),
    );
    // The parsed input is what caseId gets (a default filled in by the schema).
    const withDefault = { name: "w", input: z.object({ id: z.string().default("D-1") }), caseId: (i: { id: string }) => i.id };
    assert.equal(caseIdOf(withDefault, {}), "D-1");
    // No input at all is null, as JSON has it.
    assert.equal(caseIdOf({ name: "w", caseId: (i) => String(i) }, undefined), "null");
  });

  it("refuses a caseId that gives nothing or throws, naming the workflow, and is undefined without one", () => {
    assert.throws(
      () => caseIdOf({ name: "w", caseId: () => "  " }, {}),
      (e: unknown) =>
        isCasefileError(e) && e.code === "INVALID_INPUT" && e.message === 'caseId of workflow "w" gave "  ", not a non-empty string',
    );
    assert.throws(
      () =>
        caseIdOf(
          {
            name: "w",
            caseId: () => {
              throw new Error("no id field");
            },
          },
          {},
        ),
      (e: unknown) => isCasefileError(e) && e.code === "INVALID_INPUT" && e.message === 'caseId of workflow "w" threw: no id field',
    );
    assert.equal(caseIdOf({ name: "w" }, {}), undefined);
  });

  it("puts a case in cases/<id>.casefile beside the workflow, or in the configured folder", () => {
    assert.equal(defaultCaseFile("/p/flow.ts", undefined), "/p/flow.casefile");
    assert.equal(defaultCaseFile("/p/flow.ts", "C-1"), "/p/cases/C-1.casefile");
    assert.equal(defaultCaseFile("/p/flow.mts", undefined), "/p/flow.casefile");
    assert.equal(defaultCaseFile("/p/flow.ts", "C-1", { folder: "runs", root: "/ws" }), "/ws/runs/C-1.casefile");
    assert.equal(defaultCaseFile("/p/flow.ts", undefined, { folder: "runs" }), "/p/runs/flow.casefile");
  });
});

// Issue 18: the mutants of caseName.ts the cases above left alive.
describe("case naming: what a caseId may give, and which file names are kept", () => {
  const gives = (id: unknown) => caseIdOf({ name: "w", caseId: () => id as string }, {});
  const refusal = (shown: string) => (e: unknown) =>
    isCasefileError(e) && e.code === "INVALID_INPUT" && e.message === `caseId of workflow "w" gave ${shown}, not a non-empty string`;

  it("refuses a caseId that gives undefined, an object or an empty string, showing what it gave", () => {
    assert.throws(() => gives(undefined), refusal("undefined"), "undefined is named, not left blank");
    assert.throws(() => gives({ id: "C-1" }), refusal('{"id":"C-1"}'), "an object is no id");
    assert.throws(() => gives(""), refusal('""'), "an empty string is no id");
    assert.equal(gives(0), "0", "zero is a number, so an id");
  });

  it("keeps every letter, digit, dot, underscore and hyphen, and makes every other character (one run of them) an underscore", () => {
    assert.equal(gives("AZaz09._-"), "AZaz09._-", "the safe characters, the ends of each range included");
    assert.equal(gives("a b\\c*d?e€f"), "a_b_c_d_e_f", "space, backslash, star, question mark and a non-ASCII letter");
    assert.equal(gives("a \t/b"), "a_b", "a run of several unsafe characters is one _");
  });

  it("makes leading dots one underscore (no hidden file, no ..), and keeps dots inside the id", () => {
    assert.equal(gives("...x"), "_x", "all the leading dots, as one _");
    assert.equal(gives(".x"), "_x");
    assert.equal(gives("a..b."), "a..b.", "dots after the first character stay");
  });

  it("drops only a workflow script's extension from the default case file name", () => {
    for (const ext of ["ts", "js", "mts", "cts", "mjs", "cjs"])
      assert.equal(defaultCaseFile(`/p/flow.${ext}`, undefined), "/p/flow.casefile", `.${ext} dropped`);
    assert.equal(defaultCaseFile("/p/flow.tsx", undefined), "/p/flow.tsx.casefile", "not a workflow script extension: kept");
    assert.equal(defaultCaseFile("/p/flow.json", undefined), "/p/flow.json.casefile", ".js not at the end: kept");
    assert.equal(defaultCaseFile("/p/flowts", undefined), "/p/flowts.casefile", "no dot, no extension");
    assert.equal(
      defaultCaseFile("/p/flow.ts", "C-1", { folder: "runs" }),
      "/p/runs/C-1.casefile",
      "a folder without a root is beside the workflow",
    );
  });
});
