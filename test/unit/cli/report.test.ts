import assert from "node:assert/strict";
import type { EventRecord } from "../../../src/engine/records";
import { reporter } from "../../../src/cli/report";

/** What a CLI command prints while the engine runs: each warning once, events as JSON lines on request. */

const warning = (message: string): EventRecord => ({ runId: "r", superstep: 0, type: "warning", at: "t", data: { message } });

describe("CLI reporter", () => {
  it("prints a logged warning once when its event follows, and a warning that only comes as an event", () => {
    const err: string[] = [];
    const out: string[] = [];
    const r = reporter({ out: (l) => out.push(l), err: (l) => err.push(l), env: {} });
    r.log("warning: graph changed");
    r.onEvent(warning("graph changed"));
    r.onEvent(warning("extract stale"));
    r.onEvent(warning("extract stale"));
    r.log("opened");
    assert.deepEqual(err, ["warning: graph changed", "warning: extract stale", "warning: extract stale", "opened"]);
    assert.deepEqual(out, []);
  });

  it("with CASEFILE_EVENTS=jsonl prints every event as one JSON line on stdout, warnings still once on stderr", () => {
    const err: string[] = [];
    const out: string[] = [];
    const r = reporter({ out: (l) => out.push(l), err: (l) => err.push(l), env: { CASEFILE_EVENTS: "jsonl" } });
    r.log("warning: graph changed");
    r.onEvent(warning("graph changed"));
    assert.deepEqual(err, ["warning: graph changed"]);
    assert.deepEqual(
      out.map((l) => JSON.parse(l) as unknown),
      [warning("graph changed")],
    );
  });
});
