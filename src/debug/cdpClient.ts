import { randomBytes } from "node:crypto";
import http from "node:http";
import type { Socket } from "node:net";
import { z } from "zod";

/**
 * A minimal Chrome DevTools Protocol client over a WebSocket to the runner's inspector (loopback,
 * debugExecutorCode). The adapter uses it to resume a runner that js-debug paused in executor code
 * when the user presses Continue or Next on the Casefile session (runnerLink.ts); the tests use it
 * to stand in for js-debug. Node 20 has no WebSocket client without a flag, so this speaks the
 * protocol's few frames itself (RFC 6455: masked text frames out; text, continuation, ping and
 * close in). Every message in is parsed; one that is not CDP is dropped.
 */

const CdpMessageSchema = z.object({
  id: z.number().optional(),
  method: z.string().optional(),
  params: z.unknown().optional(),
  result: z.unknown().optional(),
  error: z.object({ message: z.string() }).optional(),
});

export class CdpClient {
  private next = 1;
  private buffer = Buffer.alloc(0);
  private fragments: Buffer[] = [];
  private readonly waiting = new Map<number, { resolve: (r: unknown) => void; reject: (e: Error) => void }>();
  private readonly listeners: { method: string; resolve: (params: unknown) => void }[] = [];

  private constructor(private readonly socket: Socket) {
    socket.on("data", (d: Buffer) => this.read(d));
    socket.on("close", () => {
      for (const w of this.waiting.values()) w.reject(new Error("the inspector connection closed"));
      this.waiting.clear();
    });
    socket.on("error", () => socket.destroy());
  }

  static connect(url: string): Promise<CdpClient> {
    const u = new URL(url);
    return new Promise((resolve, reject) => {
      const req = http.request({
        host: u.hostname,
        port: u.port,
        path: u.pathname,
        headers: {
          Connection: "Upgrade",
          Upgrade: "websocket",
          "Sec-WebSocket-Key": randomBytes(16).toString("base64"),
          "Sec-WebSocket-Version": "13",
        },
      });
      req.on("upgrade", (_res, socket) => resolve(new CdpClient(socket)));
      req.on("response", (res) => reject(new Error(`inspector answered HTTP ${res.statusCode}, not an upgrade`)));
      req.on("error", reject);
      req.end();
    });
  }

  send<T = Record<string, unknown>>(method: string, params: object = {}): Promise<T> {
    const id = this.next++;
    const payload = Buffer.from(JSON.stringify({ id, method, params }));
    const mask = randomBytes(4);
    const len = payload.length;
    const head = len < 126 ? Buffer.from([0x81, 0x80 | len]) : Buffer.from([0x81, 0x80 | 126, len >> 8, len & 0xff]);
    if (len >= 65536) throw new Error("CDP message too long for this client");
    const masked = Buffer.from(payload.map((b, i) => b ^ mask[i % 4]!));
    this.socket.write(Buffer.concat([head, mask, masked]));
    return new Promise((resolve, reject) => this.waiting.set(id, { resolve: resolve as (r: unknown) => void, reject }));
  }

  /** The next notification of this method (e.g. Debugger.paused). */
  once<T = Record<string, unknown>>(method: string): Promise<T> {
    return new Promise((resolve) => this.listeners.push({ method, resolve: resolve as (p: unknown) => void }));
  }

  close(): void {
    this.socket.destroy();
  }

  private read(d: Buffer): void {
    this.buffer = Buffer.concat([this.buffer, d]);
    for (;;) {
      if (this.buffer.length < 2) return;
      const fin = (this.buffer[0]! & 0x80) !== 0;
      const opcode = this.buffer[0]! & 0x0f;
      let len = this.buffer[1]! & 0x7f;
      let at = 2;
      if (len === 126) {
        if (this.buffer.length < 4) return;
        len = this.buffer.readUInt16BE(2);
        at = 4;
      } else if (len === 127) {
        if (this.buffer.length < 10) return;
        len = Number(this.buffer.readBigUInt64BE(2));
        at = 10;
      }
      if (this.buffer.length < at + len) return;
      const payload = this.buffer.subarray(at, at + len);
      this.buffer = this.buffer.subarray(at + len);
      if (opcode === 0x8) return void this.socket.end();
      if (opcode !== 0x1 && opcode !== 0x0) continue;
      this.fragments.push(payload);
      if (!fin) continue;
      let raw: unknown;
      try {
        raw = JSON.parse(Buffer.concat(this.fragments).toString("utf8"));
      } catch {
        raw = undefined;
      }
      const parsed = CdpMessageSchema.safeParse(raw);
      this.fragments = [];
      if (!parsed.success) continue;
      const message = parsed.data;
      if (message.id !== undefined) {
        const w = this.waiting.get(message.id);
        this.waiting.delete(message.id);
        if (message.error) w?.reject(new Error(message.error.message));
        else w?.resolve(message.result);
      } else if (message.method) {
        const i = this.listeners.findIndex((l) => l.method === message.method);
        if (i >= 0) this.listeners.splice(i, 1)[0]!.resolve(message.params);
      }
    }
  }
}
