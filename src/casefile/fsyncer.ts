import { fsyncSync } from "node:fs";
import { getSystemErrorName } from "node:util";
import { Worker } from "node:worker_threads";

/**
 * fsync on a helper thread, so that the journal's fsync (waiting on the disk) and applying the
 * batch to the in-memory database (CPU) overlap inside one synchronous commit. The calling thread
 * blocks in Atomics.wait until the fsync is done, so `commit` still returns only once the record
 * is on disk. Without worker threads (or if the helper cannot start) fsync simply runs inline.
 *
 * Shared words: [0] request number, [1] number of the last request done, [2] fd, [3] errno (0 = ok),
 * [4] set to 1 once the helper runs.
 */
const WORKER_SOURCE = `
const { workerData } = require("node:worker_threads");
const { fsyncSync } = require("node:fs");
const state = new Int32Array(workerData);
Atomics.store(state, 4, 1);
let seen = 0;
for (;;) {
  Atomics.wait(state, 0, seen);
  seen = Atomics.load(state, 0);
  if (seen < 0) break;
  let errno = 0;
  try { fsyncSync(Atomics.load(state, 2)); } catch (e) { errno = typeof e.errno === "number" ? e.errno : -5; }
  Atomics.store(state, 3, errno);
  Atomics.store(state, 1, seen);
  Atomics.notify(state, 1);
}
`;

/**
 * A helper that has not started by then is taken as unable to (its error event cannot reach us
 * while this thread blocks), and fsync runs inline from then on.
 */
const STARTUP_LIMIT_MS = 5000;

export class Fsyncer {
  private state: Int32Array | undefined;
  private readonly worker: Worker | undefined;
  private request = 0;
  private fd: number | undefined;

  constructor() {
    try {
      const shared = new SharedArrayBuffer(20);
      this.worker = new Worker(WORKER_SOURCE, { eval: true, workerData: shared });
      // A store left open must not keep the process alive.
      this.worker.unref();
      this.state = new Int32Array(shared);
    } catch {
      this.worker = undefined;
      this.state = undefined;
    }
  }

  /** Starts fsync(fd); the caller must call wait() before starting another. */
  start(fd: number): void {
    this.fd = fd;
    if (!this.state) return;
    this.request++;
    Atomics.store(this.state, 2, fd);
    Atomics.store(this.state, 0, this.request);
    Atomics.notify(this.state, 0);
  }

  /** Blocks until the fsync started last has finished; throws its error as fsyncSync would. */
  wait(): void {
    const fd = this.fd!;
    this.fd = undefined;
    if (!this.state) return fsyncSync(fd);
    const since = Date.now();
    for (;;) {
      const done = Atomics.load(this.state, 1);
      if (done === this.request) break;
      Atomics.wait(this.state, 1, done, 250);
      if (Atomics.load(this.state, 4) === 0 && Date.now() - since > STARTUP_LIMIT_MS) {
        this.close();
        this.state = undefined;
        return fsyncSync(fd);
      }
    }
    const errno = Atomics.load(this.state, 3);
    if (errno !== 0) {
      const code = getSystemErrorName(errno);
      throw Object.assign(new Error(`${code}: fsync failed`), { code, errno, syscall: "fsync" });
    }
  }

  /** Stops the helper thread. Called when the journal closes. */
  close(): void {
    if (!this.state || !this.worker) return;
    Atomics.store(this.state, 0, -1);
    Atomics.notify(this.state, 0);
    void this.worker.terminate();
  }
}
