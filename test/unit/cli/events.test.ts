import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { main } from "../../../src/cli/main";

/**
 * CASEFILE_EVENTS=jsonl through the CLI: every event one JSON line on stdout before the summary,
 * each warning once on stderr; a value other than jsonl is refused before anything runs.
 */

const workflow = (version: number, extra: string) => `import { code, defineWorkflow, edge, request, z } from "casefile";
export default defineWorkflow({
  name: "shipment",
  version: ${version},
  state: { signoff: z.string() },
  start: "approve",
  executors: {
    approve: request({ owns: ["signoff"], prompt: () => ({ title: "Sign off?" }), onAnswer: (a, ctx) => (ctx.write("signoff", a.decision), "signed") }),
    ${extra}
  },
  edges: [${extra ? 'edge("approve", "notify")' : ""}],
  ${version > 1 ? "migrations: { 2: (s) => s }," : ""}
});
`;

describe("casefile: CASEFILE_EVENTS", function () {
  this.timeout(60_000);
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(path.join(os.tmpdir(), "casefile-events-"))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  async function cli(args: string[], events?: string): Promise<{ code: number; out: string[]; err: string[] }> {
    const out: string[] = [];
    const err: string[] = [];
    const env = { USER: "tester", ...(events !== undefined ? { CASEFILE_EVENTS: events } : {}) };
    const code = await main(args, { out: (l) => out.push(l), err: (l) => err.push(l), env });
    return { code, out, err };
  }

  it("jsonl prints every event as a line before the summary, and a graph-change warning once", async () => {
    const v1 = path.join(dir, "ship.ts");
    const v2 = path.join(dir, "ship2.ts");
    writeFileSync(v1, workflow(1, ""));
    writeFileSync(v2, workflow(2, "notify: code({ run: (ctx) => ctx.yield({ notified: true }) }),"));
    const caseFile = path.join(dir, "ship.casefile");
    assert.equal((await cli(["run", v1, "--case-file", caseFile])).code, 0);
    const inspect = JSON.parse((await cli(["inspect", caseFile, "--json"])).out.join("\n")) as { runs: { waiting: { id: string }[] }[] };
    const request = inspect.runs[0]!.waiting[0]!.id;

    const r = await cli(["respond", caseFile, "--request", request, "--answer", '{"decision":"approve"}', "--workflow", v2], "jsonl");
    assert.equal(r.code, 0, r.err.join("\n"));
    const jsonLines = r.out.filter((l) => l.startsWith("{"));
    assert.deepEqual(r.out.slice(0, jsonLines.length), jsonLines, "the events come first");
    assert.deepEqual(
      r.out.slice(jsonLines.length).map((l) => l.split(" ")[0]),
      ["run", "case"],
      "then the two summary lines",
    );
    const events = jsonLines.map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.ok(
      events.every((e) => JSON.stringify(Object.keys(e).sort()) === '["at","data","runId","superstep","type"]'),
      "each line is { runId, superstep, type, at, data }",
    );
    const types = events.map((e) => e.type);
    for (const t of ["run_started", "warning", "request_answered", "step_completed", "checkpoint", "run_completed"])
      assert.ok(types.includes(t), `a ${t} event is printed: ${types.join(", ")}`);
    assert.deepEqual(
      r.err.filter((l) => l.startsWith("warning: ")),
      [`warning: graph of "shipment" changed since checkpoint "${request.split(":").slice(0, 2).join(":")}"; executors added: notify`],
      "the warning is printed once on stderr",
    );
  });

  it("another value is refused before anything runs, and no case file is made", async () => {
    const file = path.join(dir, "ship.ts");
    writeFileSync(file, workflow(1, ""));
    const caseFile = path.join(dir, "ship.casefile");
    const r = await cli(["run", file, "--case-file", caseFile], "json");
    assert.equal(r.code, 2, "a usage error");
    assert.deepEqual(r.err, ['casefile: USAGE: CASEFILE_EVENTS="json": the one format is jsonl (unset it to print no events)']);
    assert.equal(existsSync(caseFile), false, "no case file");
    assert.equal((await cli(["run", file, "--case-file", caseFile], "")).code, 0, "empty means none");
  });
});
