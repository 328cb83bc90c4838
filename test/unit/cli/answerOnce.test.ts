import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { openCaseFile } from "../../../src/casefile/index";
import { main } from "../../../src/cli/main";
import { InspectOutputSchema } from "../../../src/protocol/inspect";
import { signoffWorkflow } from "./helpers/signoffWorkflow";

/**
 * A request is answered once, seen through the CLI as a user sees it: a second `respond` is
 * refused naming the first answer whether or not it names a workflow, and `inspect` lists no
 * answered request as waiting, on case files reopened from disk.
 */

describe("casefile respond: a request is answered once", function () {
  this.timeout(60_000);
  let dir: string;
  let caseFile: string;
  let v1: string;
  let v2: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "casefile-answer-once-"));
    caseFile = path.join(dir, "ship.casefile");
    v1 = path.join(dir, "ship.ts");
    v2 = path.join(dir, "ship2.ts");
    writeFileSync(v1, signoffWorkflow(1));
    writeFileSync(v2, signoffWorkflow(2));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  async function cli(args: string[]): Promise<{ code: number; out: string; err: string }> {
    const out: string[] = [];
    const err: string[] = [];
    const code = await main(args, { out: (l) => out.push(l), err: (l) => err.push(l), env: { USER: "tester" } });
    return { code, out: out.join("\n"), err: err.join("\n") };
  }

  async function waitingRequest(): Promise<string> {
    const run = await cli(["run", v1, "--case-file", caseFile]);
    assert.equal(run.code, 0, run.err);
    const store = await openCaseFile(caseFile, { readOnly: true });
    try {
      return store.latestCheckpoint(store.listRuns()[0]!.id)!.waiting[0]!.id;
    } finally {
      store.close();
    }
  }

  it("refuses a second answer in the same version naming the first, as with another version", async () => {
    const request = await waitingRequest();
    const first = await cli(["respond", caseFile, "--request", request, "--answer", '{"decision":"approve"}', "--by", "ann"]);
    assert.equal(first.code, 0, first.err);
    for (const extra of [[], ["--workflow", v1], ["--workflow", v2]]) {
      const again = await cli(["respond", caseFile, "--request", request, "--answer", '{"decision":"reject"}', "--by", "ben", ...extra]);
      assert.equal(again.code, 3, `respond ${extra.join(" ")} is refused: ${again.out}`);
      assert.match(
        again.err,
        new RegExp(
          `^casefile: REQUEST_ANSWERED: request "${request}" was already answered \\{"decision":"approve"\\} by ann at \\S+, in run `,
        ),
        `respond ${extra.join(" ")} names the first answer`,
      );
    }
  });

  it("inspect lists the request as waiting in no run once a v2 branch took the answer", async () => {
    const request = await waitingRequest();
    const answered = await cli([
      "respond",
      caseFile,
      "--request",
      request,
      "--answer",
      '{"decision":"approve"}',
      "--by",
      "ann",
      "--workflow",
      v2,
    ]);
    assert.equal(answered.code, 0, answered.err);
    const json = await cli(["inspect", caseFile, "--json"]);
    const runs = InspectOutputSchema.parse(JSON.parse(json.out)).runs;
    assert.deepEqual(
      runs.map((r) => [r.version, r.status, r.waiting.map((w) => w.id)]),
      [
        [1, "superseded", []],
        [2, "completed", []],
      ],
      "the superseded v1 run waits on nothing",
    );
    const text = await cli(["inspect", caseFile]);
    assert.doesNotMatch(text.out, /waiting for a person/, "the text says no one is waited for");
    const branch = runs[1]!.id;
    assert.equal(runs[0]!.requests[0]!.answeredIn, branch, "the v1 run's request names the run that took its answer");
    assert.match(
      text.out,
      new RegExp(`outcome: SUPERSEDED: ann decided "approve" on request ${request} in run ${branch}, which took the answer`),
      "the superseded run's outcome says where the answer went",
    );
  });
});
