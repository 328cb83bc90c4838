import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { appendFileSync, rmSync } from "node:fs";
import path from "node:path";
import { startErp, type ErpRecord } from "../../examples/erp/server";
import { root, tempDir } from "./helpers";

/**
 * The ERP stand-in as the kill tests use it, a system of record that keeps its word: it answers a
 * write only once the write is on disk, so a SIGKILL of its process loses no answered write, and
 * a retry with the same Idempotency-Key after its restart gets the first answer, never a second
 * record.
 */
describe("ERP stand-in: answered writes survive a SIGKILL of its process", function () {
  this.timeout(120_000);
  const server = path.join(root, "examples", "erp", "server.ts");
  let dir: string;
  let child: ChildProcess | undefined;

  beforeEach(() => {
    dir = tempDir("casefile-erp-");
  });
  afterEach(() => {
    child?.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  });

  /** The stand-in as a process of its own on `dir`'s data; resolves with its address once it listens. */
  function start(): Promise<string> {
    const c = spawn(process.execPath, ["--import", "tsx", server, "--port", "0", "--data", dir], {
      cwd: root,
      stdio: ["ignore", "pipe", "pipe"],
    });
    child = c;
    let out = "";
    let err = "";
    c.stderr!.on("data", (d: Buffer) => (err += d.toString("utf8")));
    return new Promise((resolve, reject) => {
      c.stdout!.on("data", (d: Buffer) => {
        out += d.toString("utf8");
        const m = /ERP stand-in on (http:\S+)/.exec(out);
        if (m) resolve(m[1]!);
      });
      c.on("exit", (code) => reject(new Error(`the stand-in exited ${code} before listening: ${err}`)));
    });
  }

  function stop(): Promise<void> {
    const c = child!;
    child = undefined;
    return new Promise((resolve) => {
      c.once("exit", () => resolve());
      c.kill("SIGKILL");
    });
  }

  const create = async (url: string, i: number): Promise<{ status: number; record: ErpRecord }> => {
    const res = await fetch(`${url}/suppliers`, {
      method: "POST",
      headers: { "content-type": "application/json", "idempotency-key": `key-${i}` },
      body: JSON.stringify({ name: `Supplier ${i}` }),
    });
    return { status: res.status, record: (await res.json()) as ErpRecord };
  };

  it("keeps every answered create, and answers each retried key with its first record, once", async () => {
    const N = 200;
    // Seeded through the in-process server, then served by the process this test kills.
    await (await startErp({ dataDir: dir, seed: { applications: { "APP-1": { legalName: "Acme" } } } })).close();
    let url = await start();
    const answered = new Map<number, ErpRecord>();
    const sent = Array.from({ length: N }, (_, i) =>
      create(url, i).then(
        (r) => {
          if (r.status === 201) answered.set(i, r.record);
        },
        () => {
          // Killed before answering: retried below.
        },
      ),
    );
    // Killed mid-stream: some creates answered, some in flight, some never sent.
    while (answered.size < 20) await new Promise((r) => setTimeout(r, 5));
    await stop();
    await Promise.all(sent);
    assert.ok(answered.size >= 20, `${answered.size} of ${N} creates were answered before the kill`);

    url = await start();
    for (const [i, rec] of answered) {
      const got = (await (await fetch(`${url}/suppliers/${rec.id}`)).json()) as ErpRecord;
      assert.deepEqual(got, rec, `create ${i}, answered before the kill, is there after the restart`);
    }
    for (let i = 0; i < N; i++) {
      const r = await create(url, i);
      assert.ok(r.status === 201, `retry of key-${i} answered ${r.status}`);
      if (answered.has(i)) assert.deepEqual(r.record, answered.get(i), `retry of key-${i} gets its first answer`);
    }
    const all = (await (await fetch(`${url}/suppliers`)).json()) as ErpRecord[];
    assert.equal(all.length, N, "one supplier per idempotency key, none twice");
    assert.equal(
      ((await (await fetch(`${url}/applications/APP-1`)).json()) as ErpRecord).data.legalName,
      "Acme",
      "the seed is still there",
    );
  });

  it("leaves out a last log line cut short by the kill, and reads every whole one", async () => {
    await (await startErp({ dataDir: dir })).close();
    let url = await start();
    const first = await create(url, 1);
    await stop();
    // What a kill halfway through appending the next change leaves.
    appendFileSync(path.join(dir, "erp.log"), '{"n":2,"collection":"suppliers","record":{"id":"SUP-1002"');
    url = await start();
    const all = (await (await fetch(`${url}/suppliers`)).json()) as ErpRecord[];
    assert.deepEqual(all, [first.record], "the whole line's supplier, not the torn one's");
    const next = await create(url, 2);
    assert.equal(next.status, 201, "the next create is taken after the restart");
    assert.equal(next.record.id, "SUP-1002", "numbered after the records there are");
  });
});
