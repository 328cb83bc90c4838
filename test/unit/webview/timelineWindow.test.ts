import * as assert from "node:assert/strict";
import { OVERSCAN, ROW_HEIGHT, visibleRange } from "../../../src/webview/timelineWindow";

describe("Timeline window", () => {
  it("renders the rows in view plus the overscan, clamped to the run", () => {
    assert.deepEqual(visibleRange(0, 600, 10_000), { first: 0, last: 600 / ROW_HEIGHT + OVERSCAN });
    assert.deepEqual(visibleRange(5000 * ROW_HEIGHT, 600, 10_000), { first: 5000 - OVERSCAN, last: 5000 + 600 / ROW_HEIGHT + OVERSCAN });
    assert.deepEqual(visibleRange(9_999 * ROW_HEIGHT, 600, 10_000), { first: 9_999 - OVERSCAN, last: 10_000 });
    assert.deepEqual(visibleRange(0, 600, 0), { first: 0, last: 0 });
  });
});
