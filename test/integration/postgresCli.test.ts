import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { startErp, type ErpServer } from "../../examples/erp/server";
import { invoiceSeed } from "../../examples/invoice/erpData";
import { PostgresStore } from "../../src/pgstore/index";
import { TENANT_TABLES } from "../../src/pgstore/schema";
import { openCaseFile } from "../../src/casefile/index";
import { createDatabase, pgCluster } from "../helpers/pgCluster";
import { root, runCli, tempDir } from "./helpers";

const workflow = path.join(root, "examples/invoice/workflow.ts");

interface Inspected {
  caseFile: string;
  runs: {
    id: string;
    status: string;
    parent?: { run: string; checkpoint: string };
    supersteps: { superstep: number; changed: string[]; steps: { executor: string; status: string }[] }[];
    verdicts: { action: string; verdict: string; reason: string }[];
    agentCalls?: { id: string }[];
    waiting: { id: string; title: string }[];
    outputs: unknown[];
  }[];
}

/**
 * The same commands on a case of a Postgres store (a cluster made for this run) as on a case
 * file: `--store URL --case ID` where `--case-file F` or the case file would be. Spawned CLI,
 * real ERP stand-in, real Postgres.
 */
describe("CLI on a Postgres store: run, respond, inspect, replay, export-eval with --store --case", function () {
  this.timeout(120_000);
  let erp: ErpServer;
  let dir: string;
  let env: NodeJS.ProcessEnv;
  let url: string;

  before(async () => {
    dir = tempDir();
    erp = await startErp({ dataDir: path.join(dir, "erp"), seed: invoiceSeed });
    env = { ERP_URL: erp.url };
    url = createDatabase("cli");
  });
  after(() => erp.close());

  const inspect = async (args: string[]): Promise<Inspected> => {
    const r = await runCli(["inspect", ...args, "--json"], env);
    assert.equal(r.code, 0, r.stderr);
    return JSON.parse(r.stdout) as Inspected;
  };

  it("runs the 9% invoice into a case of the store, answers its request there, and inspect shows what it shows for a case file", async () => {
    const r = await runCli(["run", workflow, "--store", url, "--case", "inv-1001", "--input", '{"invoiceId":"INV-1001"}'], env);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /run run-\w+ waiting at superstep 5/);
    assert.match(r.stdout, /^case: postgresql:\/\/postgres@localhost\/cli_\w+\?.* case inv-1001$/m);

    const viaStore = await inspect(["--store", url, "--case", "inv-1001"]);
    const [run] = viaStore.runs;
    assert.equal(run!.status, "waiting");
    assert.deepEqual(
      run!.verdicts.map((v) => [v.action, v.verdict]),
      [["approve_variance", "escalated"]],
    );
    assert.deepEqual(
      run!.supersteps.map((s) => s.steps.map((st) => st.executor).join(",")),
      ["", "load", "variance", "propose", "decide", "review"],
    );

    // The same run into a case file: everything but the ids, times and the location agrees.
    const file = path.join(dir, "inv-1001.casefile");
    assert.equal((await runCli(["run", workflow, "--case-file", file, "--input", '{"invoiceId":"INV-1001"}'], env)).code, 0);
    const viaFile = await inspect([file]);
    const shape = (i: Inspected): unknown =>
      JSON.parse(
        JSON.stringify(i.runs)
          .replaceAll(i.runs[0]!.id, "RUN")
          .replace(/"\d{4}-\d\d-\d\dT[\d:.]+Z"/g, '"T"')
          .replace(/"durationMs":[\d.]+/g, '"durationMs":0'),
      );
    assert.deepEqual(shape(viaStore), shape(viaFile));

    const answer = await runCli(
      [
        "respond",
        "--store",
        url,
        "--case",
        "inv-1001",
        "--request",
        run!.waiting[0]!.id,
        "--answer",
        '{"decision":"reject","comment":"no"}',
      ],
      env,
    );
    assert.equal(answer.code, 0, answer.stderr);
    const [done] = (await inspect(["--store", url, "--case", "inv-1001"])).runs;
    assert.equal(done!.status, "completed");
    assert.deepEqual(done!.outputs, [{ invoice: "INV-1001", outcome: "reject by reviewer" }]);

    const store = await PostgresStore.open(url, { caseId: "inv-1001", readOnly: true });
    try {
      assert.equal(store.getRun(run!.id)!.status, "completed", "the store itself holds the answered run");
    } finally {
      store.close();
    }
  });

  it("replays an agent step as a branch run in the store, and exports it as an eval case", async () => {
    assert.equal(
      (await runCli(["run", workflow, "--store", url, "--case", "inv-1002", "--input", '{"invoiceId":"INV-1002"}'], env)).code,
      0,
    );
    const replay = await runCli(["replay", "--store", url, "--case", "inv-1002", "--step", "3:propose"], env);
    assert.equal(replay.code, 0, replay.stderr);
    assert.match(replay.stdout, /replayed \S+ \(recorded\) as run run-\w+: completed/);
    assert.match(replay.stdout, /^original: /m);
    assert.match(replay.stdout, /^replay {2}: \S+ {2}recorded/m);
    const after = await inspect(["--store", url, "--case", "inv-1002"]);
    assert.equal(after.runs.length, 2);
    assert.equal(after.runs[1]!.parent!.run, after.runs[0]!.id);

    const out = path.join(dir, "evals", "inv-1002.eval.json");
    const exported = await runCli(
      ["export-eval", "--store", url, "--case", "inv-1002", "--step", "3:propose", "--run", after.runs[0]!.id, "--out", out, "--json"],
      env,
    );
    assert.equal(exported.code, 0, exported.stderr);
    assert.equal(JSON.parse(exported.stdout).path, out);
    assert.ok(existsSync(out), `export-eval wrote ${out}`);
    assert.equal(JSON.parse(readFileSync(out, "utf8")).step, "propose");
  });

  it("pulls a case with its branch into a local case file: inspect --json of both agree but for the location, and the store is unchanged", async () => {
    const db = new URL(url).pathname.slice(1);
    const tables = TENANT_TABLES;
    const snapshot = (): string =>
      pgCluster().psql(tables.map((t) => `SELECT '${t}', count(*), coalesce(max(pos), 0) FROM casefile.${t}`).join(" UNION ALL "), db);
    const before = snapshot();
    const out = path.join(dir, "pulled-1002.casefile");
    const r = await runCli(["pull", "--store", url, "--case", "inv-1002", "--out", out], env);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /pulled case inv-1002: 2 run\(s\), \d+ checkpoint\(s\), \d+ event\(s\)/);
    assert.equal(snapshot(), before, "pulling wrote nothing to the store");

    const local = await inspect([out]);
    const remote = await inspect(["--store", url, "--case", "inv-1002"]);
    assert.equal(local.runs.length, 2);
    const { caseFile: _l, journal: _j, ...localRest } = local as Inspected & { journal?: unknown };
    const { caseFile: _r, ...remoteRest } = remote;
    assert.deepEqual(localRest, remoteRest);
    // Reopened from disk without the store: every event, in the same order and numbering.
    const store = await openCaseFile(out, { readOnly: true });
    const pg = await PostgresStore.open(url, { caseId: "inv-1002", readOnly: true });
    try {
      assert.deepEqual(store.listEvents(), pg.listEvents());
      assert.deepEqual(store.listIntents(), pg.listIntents());
      for (const run of pg.listRuns()) assert.deepEqual(store.listFacts(run.id), pg.listFacts(run.id));
    } finally {
      store.close();
      pg.close();
    }
    const again = await runCli(["pull", "--store", url, "--case", "inv-1002", "--out", out], env);
    assert.equal(again.code, 2);
    assert.match(again.stderr, /already exists: pull writes a new case file/);
  });

  it("cases lists the store's cases a page at a time with where each stands, as text and as the --json page; a bad --limit is one line", async () => {
    const dbUrl = createDatabase("cases");
    for (const id of ["c-1", "c-2", "c-3"]) {
      const q = await runCli(["enqueue", workflow, "--store", dbUrl, "--case", id, "--input", '{"invoiceId":"INV-1001"}'], env);
      assert.equal(q.code, 0, q.stderr);
    }
    const first = await runCli(["cases", "--store", dbUrl, "--limit", "2"], env);
    assert.equal(first.code, 0, first.stderr);
    const lines = first.stdout.trim().split("\n");
    assert.match(lines[0]!, /^c-1\s+queued\s+\d{4}-/);
    assert.match(lines[1]!, /^c-2\s+queued\s+/);
    const cursor = /^more: --after (\d+)$/.exec(lines[2]!)?.[1];
    assert.ok(cursor, `the first page ends with the next page's cursor: ${first.stdout}`);
    const second = await runCli(["cases", "--store", dbUrl, "--limit", "2", "--after", cursor, "--json"], env);
    assert.equal(second.code, 0, second.stderr);
    const page = JSON.parse(second.stdout) as {
      v: number;
      cases: { caseId: string; status: string; queued: boolean }[];
      next: string | null;
    };
    assert.equal(page.v, 1);
    assert.deepEqual(
      page.cases.map((c) => [c.caseId, c.status, c.queued]),
      [["c-3", "queued", true]],
    );
    assert.equal(page.next, null, "the last page has no cursor");
    const none = await runCli(["cases", "--store", dbUrl, "--status", "failed"], env);
    assert.equal(none.stdout.trim(), 'no "failed" cases in this store');
    const bad = await runCli(["cases", "--store", dbUrl, "--limit", "0"], env);
    assert.equal(bad.code, 2, bad.stderr);
    assert.equal(bad.stderr.trim(), 'casefile: USAGE: --limit must be a whole number from 1 to 1000, not "0"');
  });

  it("refuses half a store location, a store URL that is not Postgres, an unknown case and an unreachable store, in one line each", async () => {
    const cases: [string[], number, RegExp][] = [
      [["inspect", "--store", url], 2, /^casefile: USAGE: inspect: --store needs --case ID/],
      [["inspect", "--case", "x"], 2, /^casefile: USAGE: inspect: --case ID names a case of a store: add --store postgres:\/\/…/],
      [["inspect", "--store", "mysql://h/db", "--case", "x"], 2, /^casefile: USAGE: inspect: --store takes a postgres:\/\/ URL/],
      [["inspect", path.join(dir, "inv-1001.casefile"), "--store", url, "--case", "x"], 2, /not both/],
      [["inspect", "--store", url, "--case", "nope"], 3, /^casefile: UNKNOWN_CASE: .* no case "nope" in this store$/],
      [
        ["inspect", "--store", "postgresql://u:pw@localhost/db?host=/nonexistent&port=1", "--case", "x"],
        3,
        /^casefile: STORE_UNAVAILABLE: postgresql:\/\/u:\*\*\*@localhost/,
      ],
    ];
    for (const [args, code, pattern] of cases) {
      const r = await runCli(args, env);
      assert.equal(r.code, code, `${args.join(" ")}: ${r.stderr}`);
      assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr);
      assert.match(r.stderr.trim(), pattern);
      assert.ok(!r.stderr.includes("pw@"), "the password is never printed");
    }
  });
});
