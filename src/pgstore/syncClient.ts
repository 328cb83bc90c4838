import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { MessageChannel, Worker, receiveMessageOnPort } from "node:worker_threads";
import type { MessagePort } from "node:worker_threads";
import { CasefileError } from "../engine/errors";

/**
 * A synchronous Postgres connection. The engine's store port (CaseStore) is synchronous: the
 * superstep loop commits and reads without awaiting, as it does against the in-memory and sql.js
 * stores. node-postgres is asynchronous, so the connection lives in a worker thread and this class
 * blocks the calling thread on a shared Int32Array (Atomics.wait) until the worker has the answer,
 * then takes it with receiveMessageOnPort: the technique of the `synckit` package, done here in a
 * few lines. Chosen over `pg-native`'s sync API because that needs libpq headers and a native build
 * on every machine, and over an async store port because every store, reader and the engine loop
 * would have to change with it.
 *
 * One request at a time, each answered in order. A transaction is one request: the worker runs
 * BEGIN, the statements and COMMIT (ROLLBACK on the first failure), so a superstep's commit is one
 * round trip and one Postgres transaction.
 */

export type PgParam = string | number | boolean | null | string[];

export interface Statement {
  sql: string;
  params?: PgParam[];
  /** Fail the transaction (code CASEFILE_EXPECT) unless the statement affects or returns exactly this many rows. */
  expectRows?: number;
  /** Names the statement in the CASEFILE_EXPECT error, e.g. "lease". */
  label?: string;
}

export interface PgFailure {
  message: string;
  /** SQLSTATE (23505 unique violation...), a Node errno (ECONNREFUSED), or CASEFILE_EXPECT. */
  code?: string;
  detail?: string;
  constraint?: string;
  label?: string;
}

/** A statement or transaction Postgres refused: the store turns it into a CasefileError. */
export class PgError extends Error {
  constructor(readonly failure: PgFailure) {
    super(failure.message);
    this.name = "PgError";
  }
}

type Request = { id: number } & (
  { kind: "query"; statement: Statement } | { kind: "transaction"; statements: Statement[] } | { kind: "close" }
);
type DistributiveOmit<T, K extends keyof T> = T extends unknown ? Omit<T, K> : never;
type Reply = { id: number } & ({ ok: true; rows: Record<string, unknown>[][] } | { ok: false; failure: PgFailure });

/**
 * The connection thread's code, run with `eval`, so that it needs no file of its own beside a
 * bundle. One thread serves every connection of the process (a worker's queue and its cases'
 * stores, a command's store and queue): booting a thread and loading node-postgres cost a
 * fifth of a second of CPU each time. Each connection is its own pg.Client behind its own
 * message port, answering its requests one at a time, in order.
 */
const WORKER_SOURCE = `
const { workerData, parentPort } = require("node:worker_threads");
// node-postgres asks whether it runs on Cloudflare Workers: navigator.userAgent (Node 21 on), else
// by building a fetch Response, which on Node 20 loads all of undici into this thread (a tenth of
// a second of CPU per worker started). The navigator of Node 21 answers it here too.
if (typeof navigator === "undefined") Object.defineProperty(globalThis, "navigator", { value: { userAgent: "Node.js/" + process.versions.node }, configurable: true });
const pg = require(workerData.pgPath);
const fail = (e) => ({ message: e.message || String(e), code: e.code, detail: e.detail, constraint: e.constraint, label: e.label });
parentPort.on("message", (open) => serve(open.port, open.url, open.options, new Int32Array(open.signal)));
function serve(port, url, options, signal) {
  const client = new pg.Client({ connectionString: url, options: options || undefined });
  let broken;
  client.on("error", (e) => { broken = e; });
  const connected = client.connect().catch((e) => { broken = e; });
  // Statements with parameters run as named prepared statements: Postgres parses (and, once it
  // finds a generic plan as good, plans) each text once per connection instead of every call. The
  // store's texts are few (one per table set a commit touches, one per read); past a bound, unnamed.
  const names = new Map();
  function named(st) {
    if (!st.params || st.params.length === 0) return st.sql;
    let name = names.get(st.sql);
    if (name === undefined && names.size < 500) names.set(st.sql, (name = "cf" + names.size));
    return name === undefined ? { text: st.sql, values: st.params } : { name, text: st.sql, values: st.params };
  }
  async function run(st) {
    const res = await client.query(named(st));
    const n = res.command === "SELECT" ? res.rows.length : res.rowCount;
    if (st.expectRows !== undefined && n !== st.expectRows) {
      const e = new Error("expected " + st.expectRows + " row(s), got " + n);
      e.code = "CASEFILE_EXPECT"; e.label = st.label;
      throw e;
    }
    return res.rows;
  }
  async function answer(req) {
    await connected;
    if (broken) return { ok: false, failure: fail(broken) };
    try {
      if (req.kind === "query") return { ok: true, rows: [await run(req.statement)] };
      await client.query("BEGIN");
      try {
        const rows = [];
        for (const st of req.statements) rows.push(await run(st));
        await client.query("COMMIT");
        return { ok: true, rows };
      } catch (e) {
        await client.query("ROLLBACK").catch(() => {});
        throw e;
      }
    } catch (e) {
      return { ok: false, failure: fail(e) };
    }
  }
  // One request at a time, in order: a request sent after an earlier one timed out waits for it
  // rather than running inside its transaction. Each reply carries its request's id.
  let chain = Promise.resolve();
  port.on("message", (req) => {
    chain = chain.then(async () => {
      const reply = req.kind === "close" ? await client.end().then(() => ({ ok: true, rows: [] }), (e) => ({ ok: false, failure: fail(e) })) : await answer(req);
      port.postMessage({ ...reply, id: req.id });
      Atomics.store(signal, 0, 1);
      Atomics.notify(signal, 0);
      if (req.kind === "close") port.close();
    });
  });
}
`;

/** The process's connection thread, started with its first connection. */
let hub: Worker | undefined;

function connectionThread(): Worker {
  if (hub) return hub;
  const thread = new Worker(WORKER_SOURCE, { eval: true, workerData: { pgPath: pgModulePath() } });
  // It does not keep the process alive: a caller that forgets close() still exits.
  thread.unref();
  // A thread that died answers nothing (its connections' calls time out); the next connection starts another.
  const gone = (): void => {
    if (hub === thread) hub = undefined;
  };
  thread.on("error", gone);
  thread.on("exit", gone);
  hub = thread;
  return thread;
}

/**
 * Where the worker loads node-postgres from: the bundle of it beside this code's bundle in dist/
 * (esbuild.mjs: vendor-pg.js, what the .vsix ships), else resolved from this file (the source
 * under tsx), through createRequire so that esbuild leaves the lookup to run time.
 */
function pgModulePath(): string {
  const bundled = path.join(__dirname, "vendor-pg.js");
  return existsSync(bundled) ? bundled : createRequire(__filename).resolve("pg");
}

export interface SyncClientOptions {
  /** Postgres run-time settings for the session, as `-c name=value` options (e.g. default_transaction_read_only=on). */
  settings?: Record<string, string>;
  /** How long one request may block before STORE_UNAVAILABLE. Default 60 s. */
  timeoutMs?: number;
  /** Names the store in error messages (the URL without its password). */
  where: string;
}

export class SyncPgClient {
  private readonly port: MessagePort;
  private readonly signal = new Int32Array(new SharedArrayBuffer(4));
  private readonly timeoutMs: number;
  private closed = false;
  private lastId = 0;

  constructor(
    url: string,
    private readonly opts: SyncClientOptions,
  ) {
    this.timeoutMs = opts.timeoutMs ?? 60_000;
    const { port1, port2 } = new MessageChannel();
    this.port = port1;
    const options = Object.entries(opts.settings ?? {})
      .map(([k, v]) => `-c ${k}=${v}`)
      .join(" ");
    connectionThread().postMessage({ port: port2, url, options, signal: this.signal.buffer }, [port2]);
    // Nor does the port keep the process alive.
    this.port.unref();
  }

  /** Runs one statement outside any explicit transaction and returns its rows. */
  query<T = Record<string, unknown>>(sql: string, params: PgParam[] = []): T[] {
    return this.call({ kind: "query", statement: { sql, params } })[0] as T[];
  }

  /**
   * Runs one statement outside any explicit transaction (alone, it is one), checked as a
   * transaction's are (Statement.expectRows): a commit that is one statement is one round trip.
   */
  statement(st: Statement): Record<string, unknown>[] {
    return this.call({ kind: "query", statement: st })[0]!;
  }

  /** Runs the statements in one transaction: every one's rows, or a PgError having applied none. */
  transaction(statements: Statement[]): Record<string, unknown>[][] {
    return this.call({ kind: "transaction", statements });
  }

  /** Ends the connection (the thread serves the process's others); called by the store's close(). */
  close(): void {
    if (this.closed) return;
    try {
      this.call({ kind: "close" });
    } catch {
      // A connection that never opened has nothing to end.
    } finally {
      this.closed = true;
      this.port.close();
    }
  }

  private call(req: DistributiveOmit<Request, "id">): Record<string, unknown>[][] {
    if (this.closed) throw new CasefileError("STORE_UNAVAILABLE", `${this.opts.where}: the store connection is closed`);
    const id = ++this.lastId;
    this.port.postMessage({ ...req, id });
    const deadline = Date.now() + this.timeoutMs;
    let reply: Reply | undefined;
    while (!reply) {
      // A reply to an earlier request that timed out is passed over: this request's comes after it.
      const got = receiveMessageOnPort(this.port) as { message: Reply } | undefined;
      if (got) {
        if (got.message.id === id) reply = got.message;
        continue;
      }
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new CasefileError("STORE_UNAVAILABLE", `${this.opts.where}: no answer from Postgres in ${this.timeoutMs} ms`);
      }
      // Cleared, then the port looked at once more: a reply posted in between is not missed.
      Atomics.store(this.signal, 0, 0);
      const late = receiveMessageOnPort(this.port) as { message: Reply } | undefined;
      if (late) {
        if (late.message.id === id) reply = late.message;
        continue;
      }
      Atomics.wait(this.signal, 0, 0, left);
    }
    if (!reply.ok) throw new PgError(reply.failure);
    return reply.rows;
  }
}
