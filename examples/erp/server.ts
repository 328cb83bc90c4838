import { randomUUID } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync, fsyncSync, openSync, closeSync } from "node:fs";
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
  /** Reads the server's own data from disk (what the kill test checks against). */
  snapshot(): ErpData;
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
    save(dataFile, data);
  }
  const load = (): ErpData => JSON.parse(readFileSync(dataFile, "utf8")) as ErpData;

  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString("utf8")));
    req.on("end", () => {
      try {
        handle(req, res, body);
      } catch (e) {
        send(res, 500, { error: (e as Error).message });
      }
    });
  });

  function handle(req: http.IncomingMessage, res: http.ServerResponse, body: string): void {
    const url = new URL(req.url ?? "/", "http://erp");
    const parts = url.pathname.split("/").filter(Boolean).map(decodeURIComponent);
    const data = load();
    const method = req.method ?? "GET";
    const parse = (): Record<string, unknown> => (body ? (JSON.parse(body) as Record<string, unknown>) : {});

    if (parts[0] === "idempotency" && parts[1] && method === "GET") {
      const hit = data.idempotency[parts[1]];
      return hit ? send(res, 200, hit.body) : send(res, 404, { error: `no request with idempotency key ${parts[1]}` });
    }
    if (parts[0] === "admin" && parts.length === 3 && method === "POST") {
      const coll = (data.collections[parts[1]!] ??= {});
      const prev = coll[parts[2]!];
      coll[parts[2]!] = { id: parts[2]!, version: (prev?.version ?? 0) + 1, data: parse() };
      logWrite(data, "ADMIN", parts[1]!, coll[parts[2]!]!);
      save(dataFile, data);
      return send(res, 200, coll[parts[2]!], etag(coll[parts[2]!]!));
    }
    const [name, id] = parts;
    if (!name || parts.length > 2) return send(res, 404, { error: `no route ${method} ${url.pathname}` });
    const coll = data.collections[name] ?? {};

    if (method === "GET" && !id) return send(res, 200, Object.values(coll));
    if (method === "GET" && id) {
      const rec = coll[id];
      return rec ? send(res, 200, rec, etag(rec)) : send(res, 404, { error: `${name}/${id} not found` });
    }
    if (method === "POST" && !id) {
      const key = header(req, "idempotency-key");
      if (key && data.idempotency[key]) {
        const first = data.idempotency[key]!;
        return send(res, first.status, first.body);
      }
      const input = parse();
      const newId = typeof input.id === "string" ? input.id : `${name.slice(0, 3).toUpperCase()}-${Object.keys(coll).length + 1001}`;
      if (coll[newId]) return send(res, 409, { error: `${name}/${newId} already exists` });
      const rec: ErpRecord = { id: newId, version: 1, data: input };
      data.collections[name] = { ...coll, [newId]: rec };
      data.writes[name] = (data.writes[name] ?? 0) + 1;
      if (key) data.idempotency[key] = { status: 201, body: rec };
      logWrite(data, "POST", name, rec, key);
      save(dataFile, data);
      return send(res, 201, rec, etag(rec));
    }
    if ((method === "PUT" || method === "PATCH") && id) {
      const rec = coll[id];
      if (!rec) return send(res, 404, { error: `${name}/${id} not found` });
      const key = header(req, "idempotency-key");
      if (key && data.idempotency[key]) return send(res, data.idempotency[key]!.status, data.idempotency[key]!.body);
      const ifMatch = header(req, "if-match");
      if (ifMatch && ifMatch !== etag(rec)) {
        return send(res, 412, { error: `${name}/${id} is at ${etag(rec)}, not ${ifMatch}`, current: rec });
      }
      // PATCH merges, so a writer that set one field leaves the others as a concurrent writer left them.
      const next: ErpRecord = { id, version: rec.version + 1, data: method === "PATCH" ? { ...rec.data, ...parse() } : parse() };
      coll[id] = next;
      data.collections[name] = coll;
      data.writes[name] = (data.writes[name] ?? 0) + 1;
      if (key) data.idempotency[key] = { status: 200, body: next };
      logWrite(data, method, name, next, key);
      save(dataFile, data);
      return send(res, 200, next, etag(next));
    }
    return send(res, 405, { error: `${method} not allowed on ${url.pathname}` });
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
    snapshot: load,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function logWrite(data: ErpData, method: ErpWrite["method"], collection: string, rec: ErpRecord, key?: string): void {
  const entry: ErpWrite = { at: new Date().toISOString(), method, collection, id: rec.id, version: rec.version };
  if (key) entry.idempotencyKey = key;
  (data.log ??= []).push(entry);
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

/** Writes the whole data file durably (temp file, fsync, rename): the ERP must not lose writes either. */
function save(file: string, data: ErpData): void {
  const tmp = `${file}.tmp`;
  writeFileSync(tmp, JSON.stringify(data));
  const fd = openSync(tmp, "r+");
  fsyncSync(fd);
  closeSync(fd);
  renameSync(tmp, file);
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
