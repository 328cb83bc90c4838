import { randomUUID } from "node:crypto";
import { closeSync, existsSync, fdatasync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, write, writeFileSync } from "node:fs";
import http from "node:http";
import path from "node:path";

/**
 * A small system of record for the examples and the tests: an HTTP server on loopback that
 * keeps collections of records on disk, versions every record (ETag `"v<n>"`), honours
 * If-Match on writes (412 on mismatch), remembers Idempotency-Key so a repeated create returns
 * the first result, and lets a test change a record behind the workflow's back.
 *
 *   GET    /:collection                 list
 *   GET    /:collection/:id             one record, ETag header
 *   POST   /:collection                 create (Idempotency-Key honoured); 201 + ETag
 *   PUT    /:collection/:id             replace (If-Match honoured); 200 + ETag
 *   PATCH  /:collection/:id             merge fields (If-Match and Idempotency-Key honoured); 200 + ETag
 *   GET    /idempotency/:key            the response first given for that key, or 404
 *   POST   /admin/:collection/:id       set a record as an outside change (bumps the version)
 */

export interface ErpRecord {
  id: string;
  version: number;
  data: Record<string, unknown>;
}

interface ErpData {
  collections: Record<string, Record<string, ErpRecord>>;
  idempotency: Record<string, { status: number; body: unknown }>;
  /** How many writes each collection has taken, for tests that count effects. */
  writes: Record<string, number>;
  /**
   * Every write that changed a record, in order (an idempotent replay is not one). The kill test
   * checks it for effects applied twice. Absent in data files written before it existed.
   */
  log?: ErpWrite[];
  /** How many changes of the log (ErpLog) the file already holds: reading the log again skips them. */
  changes?: number;
}

export interface ErpWrite {
  at: string;
  method: "POST" | "PUT" | "PATCH" | "ADMIN";
  collection: string;
  id: string;
  version: number;
  idempotencyKey?: string;
}

export interface ErpServer {
  url: string;
  port: number;
  dataFile: string;
  close(): Promise<void>;
  /** Reads the server's own data from disk, its file and log (what the kill test checks against). */
  snapshot(): ErpData;
  /** Replaces all of the server's data with `data` (a snapshot taken earlier), durably: what a test that rewinds the ERP calls. */
  restore(data: ErpData): void;
}

export interface ErpOptions {
  port?: number;
  /** Folder holding `erp.json`; a temporary folder when omitted. */
  dataDir?: string;
  /** Records to create when the data file does not exist yet. */
  seed?: Record<string, Record<string, Record<string, unknown>>>;
}

export async function startErp(opts: ErpOptions = {}): Promise<ErpServer> {
  const dir = opts.dataDir ?? path.join(process.env.TMPDIR ?? "/tmp", `erp-${randomUUID().slice(0, 8)}`);
  mkdirSync(dir, { recursive: true });
  const dataFile = path.join(dir, "erp.json");
  if (!existsSync(dataFile)) {
    const data: ErpData = { collections: {}, idempotency: {}, writes: {} };
    for (const [name, records] of Object.entries(opts.seed ?? {})) {
      data.collections[name] = {};
      for (const [id, rec] of Object.entries(records)) data.collections[name]![id] = { id, version: 1, data: rec };
    }
    writeDurably(dataFile, data);
  }
  // The records live in memory, read from disk once here; every change is one line of the log
  // beside the file, made durable before its request is answered (ErpLog). The changes a
  // previous server logged are folded into the file first, so the log starts empty.
  let data = readData(dir);
  if ((data.changes ?? 0) > 0) writeDurably(dataFile, data);
  const log = new ErpLog(path.join(dir, LOG_FILE));

  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString("utf8")));
    req.on("end", () => {
      let status: number;
      let answer: unknown;
      let tag: string | undefined;
      try {
        [status, answer, tag] = handle(req, body);
      } catch (e) {
        [status, answer, tag] = [500, { error: (e as Error).message }, undefined];
      }
      // Nothing is answered before every change made so far is on disk, reads included: no
      // client ever sees a record a crash could take back.
      log.afterDurable((e) =>
        e ? send(res, 500, { error: `the ERP could not store the write: ${e.message}` }) : send(res, status, answer, tag),
      );
    });
  });

  type Answer = [status: number, body: unknown, etag?: string];

  /** Applies a change to the records in memory and logs it. */
  function change(fields: Omit<ErpChange, "n">): void {
    const c: ErpChange = { n: (data.changes ?? 0) + 1, ...fields };
    apply(data, c);
    log.append(c);
  }

  function handle(req: http.IncomingMessage, body: string): Answer {
    const url = new URL(req.url ?? "/", "http://erp");
    const parts = url.pathname.split("/").filter(Boolean).map(decodeURIComponent);
    const method = req.method ?? "GET";
    const parse = (): Record<string, unknown> => (body ? (JSON.parse(body) as Record<string, unknown>) : {});

    if (parts[0] === "idempotency" && parts[1] && method === "GET") {
      const hit = data.idempotency[parts[1]];
      return hit ? [200, hit.body] : [404, { error: `no request with idempotency key ${parts[1]}` }];
    }
    if (parts[0] === "admin" && parts.length === 3 && method === "POST") {
      const prev = data.collections[parts[1]!]?.[parts[2]!];
      const rec: ErpRecord = { id: parts[2]!, version: (prev?.version ?? 0) + 1, data: parse() };
      change({ collection: parts[1]!, record: rec, counted: false, write: writeOf("ADMIN", parts[1]!, rec) });
      return [200, rec, etag(rec)];
    }
    const [name, id] = parts;
    if (!name || parts.length > 2) return [404, { error: `no route ${method} ${url.pathname}` }];
    const coll = data.collections[name] ?? {};

    if (method === "GET" && !id) return [200, Object.values(coll)];
    if (method === "GET" && id) {
      const rec = coll[id];
      return rec ? [200, rec, etag(rec)] : [404, { error: `${name}/${id} not found` }];
    }
    if (method === "POST" && !id) {
      const key = header(req, "idempotency-key");
      const first = key === undefined ? undefined : data.idempotency[key];
      if (first) return [first.status, first.body];
      const input = parse();
      const newId = typeof input.id === "string" ? input.id : `${name.slice(0, 3).toUpperCase()}-${Object.keys(coll).length + 1001}`;
      if (coll[newId]) return [409, { error: `${name}/${newId} already exists` }];
      const rec: ErpRecord = { id: newId, version: 1, data: input };
      change({
        collection: name,
        record: rec,
        counted: true,
        ...(key ? { key, status: 201 } : {}),
        write: writeOf("POST", name, rec, key),
      });
      return [201, rec, etag(rec)];
    }
    if ((method === "PUT" || method === "PATCH") && id) {
      const rec = coll[id];
      if (!rec) return [404, { error: `${name}/${id} not found` }];
      const key = header(req, "idempotency-key");
      const first = key === undefined ? undefined : data.idempotency[key];
      if (first) return [first.status, first.body];
      const ifMatch = header(req, "if-match");
      if (ifMatch && ifMatch !== etag(rec)) return [412, { error: `${name}/${id} is at ${etag(rec)}, not ${ifMatch}`, current: rec }];
      // PATCH merges, so a writer that set one field leaves the others as a concurrent writer left them.
      const next: ErpRecord = { id, version: rec.version + 1, data: method === "PATCH" ? { ...rec.data, ...parse() } : parse() };
      change({
        collection: name,
        record: next,
        counted: true,
        ...(key ? { key, status: 200 } : {}),
        write: writeOf(method, name, next, key),
      });
      return [200, next, etag(next)];
    }
    return [405, { error: `${method} not allowed on ${url.pathname}` }];
  }

  // Clients (undici's fetch) reuse idle connections; a long idle timeout keeps a loaded test
  // machine from closing one just as a client sends on it.
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    dataFile,
    snapshot: () => readData(dir),
    restore: (to) => {
      // Whole, in place of everything: the file first, then the log emptied, then memory.
      writeDurably(dataFile, { ...to, changes: data.changes ?? 0 });
      data = readData(dir);
    },
    close: () =>
      new Promise<void>((resolve) => server.close(() => resolve())).then(() => {
        log.close();
      }),
  };
}

const LOG_FILE = "erp.log";

/** One change to the records: a record set (created or replaced), the idempotency key it answered, the write it logs. */
interface ErpChange {
  /** Its place in the order of changes, from 1: the file's `changes` says how many it holds. */
  n: number;
  collection: string;
  record: ErpRecord;
  /** Counted in `writes` (an outside change through /admin is not). */
  counted: boolean;
  key?: string;
  status?: number;
  write: ErpWrite;
}

/** Applies one change to the records: what a request does in memory, and what reading the log does again. */
function apply(data: ErpData, c: ErpChange): void {
  data.changes = c.n;
  (data.collections[c.collection] ??= {})[c.record.id] = c.record;
  if (c.counted) data.writes[c.collection] = (data.writes[c.collection] ?? 0) + 1;
  if (c.key !== undefined) data.idempotency[c.key] = { status: c.status!, body: c.record };
  (data.log ??= []).push(c.write);
}

/**
 * The records as the disk holds them: `erp.json` with the changes of `erp.log` it does not hold
 * yet applied, in order. A last line cut short (the process killed while appending it) was never
 * answered, so it is left out; a damaged line before the last is refused.
 */
function readData(dir: string): ErpData {
  const data = JSON.parse(readFileSync(path.join(dir, "erp.json"), "utf8")) as ErpData;
  let text: string;
  try {
    text = readFileSync(path.join(dir, LOG_FILE), "utf8");
  } catch {
    return data;
  }
  const lines = text.split("\n");
  // The text after the last newline is a line never finished.
  lines.pop();
  lines.forEach((line, i) => {
    try {
      const c = JSON.parse(line) as ErpChange;
      if (c.n > (data.changes ?? 0)) apply(data, c);
    } catch (e) {
      throw new Error(`${path.join(dir, LOG_FILE)}: line ${i + 1} is damaged: ${(e as Error).message}`);
    }
  });
  return data;
}

/**
 * The ERP's write-ahead log: one JSON line per change, appended and fsync'd before the request that
 * made it is answered. Changes that arrive while an fsync runs share the next one, so many workers
 * writing at once cost one fsync per batch rather than per write.
 */
class ErpLog {
  private readonly fd: number;
  private pending: string[] = [];
  private waiting: ((e?: Error) => void)[] = [];
  private flushing = false;

  constructor(file: string) {
    this.fd = openSync(file, "a");
  }

  append(c: ErpChange): void {
    this.pending.push(JSON.stringify(c) + "\n");
  }

  /** Calls `then` once every change appended so far is durable (at once when none is outstanding). */
  afterDurable(then: (e?: Error) => void): void {
    if (!this.flushing && this.pending.length === 0) return then();
    this.waiting.push(then);
    this.flush();
  }

  private flush(): void {
    if (this.flushing || this.pending.length === 0) return;
    this.flushing = true;
    const text = this.pending.join("");
    const waiting = this.waiting;
    this.pending = [];
    this.waiting = [];
    const done = (e: Error | null): void => {
      this.flushing = false;
      for (const then of waiting) then(e ?? undefined);
      // Answers that arrived during this fsync and changed nothing waited only for it.
      if (this.pending.length === 0) {
        const readers = this.waiting;
        this.waiting = [];
        for (const then of readers) then();
      } else this.flush();
    };
    write(this.fd, text, (e) => (e ? done(e) : fdatasync(this.fd, done)));
  }

  close(): void {
    closeSync(this.fd);
  }
}

function writeOf(method: ErpWrite["method"], collection: string, rec: ErpRecord, key?: string): ErpWrite {
  const entry: ErpWrite = { at: new Date().toISOString(), method, collection, id: rec.id, version: rec.version };
  if (key) entry.idempotencyKey = key;
  return entry;
}

export function etag(rec: { version: number }): string {
  return `"v${rec.version}"`;
}

function header(req: http.IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function send(res: http.ServerResponse, status: number, body: unknown, tag?: string): void {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (tag) headers.etag = tag;
  res.writeHead(status, headers);
  res.end(JSON.stringify(body));
}

/**
 * Writes the whole data file durably (temp file, fsync, rename, the folder fsync'd), then empties
 * the log beside it: at start and on restore, never per request. A crash between the two leaves
 * log lines the file holds already, which reading skips by their number.
 */
function writeDurably(file: string, data: ErpData): void {
  const tmp = `${file}.tmp`;
  writeFileSync(tmp, JSON.stringify(data));
  const fd = openSync(tmp, "r+");
  fsyncSync(fd);
  closeSync(fd);
  renameSync(tmp, file);
  const logFile = path.join(path.dirname(file), LOG_FILE);
  if (existsSync(logFile)) writeFileSync(logFile, "");
  const dir = openSync(path.dirname(file), "r");
  fsyncSync(dir);
  closeSync(dir);
}

// `tsx examples/erp/server.ts [--port N] [--data DIR]` serves until killed.
if (require.main === module) {
  const arg = (name: string): string | undefined => {
    const i = process.argv.indexOf(name);
    return i > 0 ? process.argv[i + 1] : undefined;
  };
  void startErp({ port: Number(arg("--port") ?? 4410), dataDir: arg("--data") }).then((s) =>
    console.log(`ERP stand-in on ${s.url} (data ${s.dataFile})`),
  );
}
