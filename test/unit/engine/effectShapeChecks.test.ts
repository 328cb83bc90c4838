import assert from "node:assert/strict";
import { isCasefileError } from "../../../src/engine/errors";
import { checkIntent, checkLiveRecord } from "../../../src/engine/effectShapes";

/**
 * The shape checks of an effect's own functions, called directly: what each wrong shape is called
 * in the message the user reads (a slip in effectShapes.ts would say the wrong thing, or pass a
 * wrong shape through as an intent or a live record).
 */

const intentError = (executor: string, problem: string) => (e: unknown) =>
  isCasefileError(e) &&
  e.code === "INVALID_WORKFLOW" &&
  e.message === `effect "${executor}": intent ${problem}, not { action: string, target: string, payload, reliesOn }` &&
  (e.details as { executor?: string }).executor === executor;

describe("effect shapes: checkIntent", () => {
  const good = { action: "book", target: "carrier:shipments/SH-1", payload: { fee: 25 }, reliesOn: {} };

  it("gives a well-formed intent back as it is", () => {
    assert.equal(checkIntent("book", good), good);
    assert.equal(checkIntent("book", { ...good, payload: null }).payload, null, "a null payload is a payload");
  });

  for (const [what, value, problem] of [
    ["a number", 42, "returned 42"],
    ["null", null, "returned null"],
    ["a list", [1, 2], "returned [1,2]"],
    ["no action", { ...good, action: undefined }, "returned an action that is undefined"],
    ["an empty action", { ...good, action: "" }, 'returned an action that is ""'],
    ["a numeric action", { ...good, action: 7 }, "returned an action that is 7"],
    ["no target", { ...good, target: undefined }, "returned a target that is undefined"],
    ["an empty target", { ...good, target: "" }, 'returned a target that is ""'],
    ["a target that is an object", { ...good, target: { id: 1 } }, 'returned a target that is {"id":1}'],
    ["no payload", { ...good, payload: undefined }, "returned no payload"],
  ] as const) {
    it(`refuses ${what}, saying so with the step`, () => {
      assert.throws(() => checkIntent("book", value), intentError("book", problem));
    });
  }
});

describe("effect shapes: checkLiveRecord", () => {
  it("takes { version: string, record } whatever the record is, null included", () => {
    assert.doesNotThrow(() => checkLiveRecord({ version: "v1", record: {} }));
    assert.doesNotThrow(() => checkLiveRecord({ version: "", record: null }));
  });

  for (const [what, value, says] of [
    ["a string", "x", 'returned "x", not { version: string, record }'],
    ["null", null, "returned null, not { version: string, record }"],
    ["undefined", undefined, "returned undefined, not { version: string, record }"],
    ["a numeric version", { version: 1, record: {} }, 'returned {"version":1,"record":{}}, not { version: string, record }'],
    ["no record", { version: "v1" }, 'returned {"version":"v1"}, not { version: string, record }'],
  ] as const) {
    it(`refuses ${what}`, () => {
      assert.throws(
        () => checkLiveRecord(value),
        (e: unknown) => e instanceof Error && e.message === says,
      );
    });
  }
});
