/**
 * A webview's one channel to the extension host: `post` for intents, `request` for questions
 * that have an answer (an id, a timeout, the reply's type checked), and every message from the
 * host parsed with the panel's zod schema before anything reads it. A message that does not
 * parse, or an answer to a request this page did not make, is dropped and logged to the console;
 * the panel keeps what it shows. Each panel's entry script connects once.
 */

interface VsCodeApi {
  postMessage(message: unknown): void;
  getState(): unknown;
  setState(state: unknown): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

export type Parsed<In> = { ok: true; message: In } | { ok: false; error: string };

/** A request as the caller writes it: the host channel adds the id. */
export type Unaddressed<M> = M extends { requestId: string } ? Omit<M, "requestId"> : never;

/** When a message arrived and when it had been parsed (`performance.now()`): read for paint timings. */
export interface Arrival {
  receivedAt: number;
  parsedAt: number;
}

export interface Host<Out extends { type: string }, In extends { type: string }> {
  post(message: Out): void;
  /**
   * Posts `message` with a fresh requestId and resolves with the host's message of type `reply`
   * that carries the same id; rejects with a `RequestTimeout` after `timeoutMs`.
   */
  request<R extends In["type"]>(message: Unaddressed<Out>, reply: R, timeoutMs?: number): Promise<Extract<In, { type: R }>>;
  /** What VS Code keeps for the page across reloads of a hidden panel (setState/getState). */
  readonly saved: unknown;
  save(state: unknown): void;
}

export class RequestTimeout extends Error {
  constructor(readonly ms: number) {
    super(`The extension did not answer within ${ms / 1000} s.`);
  }
}

export const REQUEST_TIMEOUT_MS = 30_000;

interface Pending {
  reply: string;
  resolve(message: unknown): void;
  reject(err: Error): void;
  timer: ReturnType<typeof setTimeout>;
}

/**
 * Connects the page to its host. `receive` gets every parsed message that answers no request
 * (a message without a requestId); answers go to the promise `request` returned.
 */
export function connectHost<Out extends { type: string }, In extends { type: string; requestId?: string | undefined }>(opts: {
  /** The panel's name, for the console. */
  name: string;
  parse(data: unknown): Parsed<In>;
  receive(message: In, arrival: Arrival): void;
}): Host<Out, In> {
  const vscode = acquireVsCodeApi();
  const pending = new Map<string, Pending>();
  let requests = 0;

  window.addEventListener("message", (event: MessageEvent<unknown>) => {
    const receivedAt = performance.now();
    const parsed = opts.parse(event.data);
    const parsedAt = performance.now();
    if (!parsed.ok) {
      console.warn(`${opts.name}: dropped a malformed message from the host: ${parsed.error}`);
      return;
    }
    const message = parsed.message;
    if (typeof message.requestId !== "string") {
      opts.receive(message, { receivedAt, parsedAt });
      return;
    }
    const waiting = pending.get(message.requestId);
    if (!waiting || waiting.reply !== message.type) {
      console.warn(`${opts.name}: dropped an answer to a request it did not make (${message.type} ${message.requestId})`);
      return;
    }
    pending.delete(message.requestId);
    clearTimeout(waiting.timer);
    waiting.resolve(message);
  });

  return {
    post: (message) => vscode.postMessage(message),
    request<R extends In["type"]>(message: Unaddressed<Out>, reply: R, timeoutMs = REQUEST_TIMEOUT_MS) {
      const requestId = `${message.type}-${++requests}`;
      return new Promise<Extract<In, { type: R }>>((resolve, reject) => {
        const timer = setTimeout(() => {
          if (pending.delete(requestId)) reject(new RequestTimeout(timeoutMs));
        }, timeoutMs);
        pending.set(requestId, { reply, resolve: resolve as (m: unknown) => void, reject, timer });
        vscode.postMessage({ ...message, requestId });
      });
    },
    get saved() {
      return vscode.getState();
    },
    save: (state) => vscode.setState(state),
  };
}
