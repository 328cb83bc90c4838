import assert from "node:assert/strict";
import { monotonicMs } from "../../../src/engine/clock";

/**
 * The clock an agent call's recorded `durationMs` is measured on: milliseconds of the process's
 * monotonic clock. Compared with Node's own nanosecond reading taken just before and just after,
 * so no time is asserted, only the unit (a slip in seconds or nanoseconds would record durations
 * off by a factor of a thousand or more).
 */
describe("monotonicMs", () => {
  it("reads the monotonic clock in milliseconds, between two nanosecond readings around it", () => {
    for (let i = 0; i < 5; i++) {
      const before = Number(process.hrtime.bigint()) / 1e6;
      const ms = monotonicMs();
      const after = Number(process.hrtime.bigint()) / 1e6;
      // 1 µs of slack for the float rounding of two different sums of the same reading.
      assert.ok(ms >= before - 1e-3 && ms <= after + 1e-3, `monotonicMs() ${ms} is not between ${before} and ${after}`);
    }
  });
});
