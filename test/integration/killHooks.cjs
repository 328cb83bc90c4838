"use strict";
/**
 * Fault-injection preload for the kill test (`node --require killHooks.cjs bin/casefile.js ...`).
 * It changes no behaviour: it only holds the process still at one chosen moment inside the case
 * file's own durability code, after saying so on stderr, so that the harness's SIGKILL lands
 * exactly there rather than wherever a random timer happens to fall:
 *
 *   KILLTEST_HOOK=append    halfway through writing a journal record (the kill leaves a torn record)
 *   KILLTEST_HOOK=rename    during compaction, the temp database written, before the rename over the file
 *   KILLTEST_HOOK=truncate  during compaction, after the rename, before the journal is emptied
 *   KILLTEST_HOOK=pg-commit    a Postgres transaction's statements run, its COMMIT not yet sent
 *   KILLTEST_HOOK=pg-committed COMMIT sent to Postgres, its answer not yet read (durable, unacknowledged)
 *
 * KILLTEST_HOOK_AT=n picks the n-th such moment in this process; KILLTEST_HOOK_MS is how long to
 * hold still. The store reaches node:fs through property lookups at call time (esbuild's CommonJS
 * output), so wrapping the module's functions here is seen by the bundled store. The pg hooks
 * act in the worker thread that holds the store's connection (syncClient.ts): a --require preload
 * runs in worker threads too.
 */
// A --require preload is plain CommonJS: it runs before any TypeScript loader could.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const fs = require("node:fs");

const hook = process.env.KILLTEST_HOOK;
const at = Number(process.env.KILLTEST_HOOK_AT || 1);
const holdMs = Number(process.env.KILLTEST_HOOK_MS || 5000);
let seen = 0;

function hold(what) {
  // stderr is a pipe: written synchronously, so the harness reads this before we block.
  fs.writeSync(2, `KILLTEST-PAUSE ${what}\n`);
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, holdMs);
}

function pathOf(fd) {
  try {
    return fs.readlinkSync(`/proc/self/fd/${fd}`);
  } catch {
    return "";
  }
}

if (hook === "append") {
  const writeSync = fs.writeSync;
  fs.writeSync = function (fd, buffer, offset, length, ...rest) {
    if (typeof fd === "number" && fd > 2 && ArrayBuffer.isView(buffer) && pathOf(fd).endsWith(".journal") && ++seen === at) {
      const off = typeof offset === "number" ? offset : 0;
      const len = typeof length === "number" ? length : buffer.byteLength - off;
      if (len > 1) {
        // Half the record now; the journal's write loop writes the rest after the hold.
        const n = writeSync.call(fs, fd, buffer, off, Math.floor(len / 2));
        hold(`mid-append ${pathOf(fd)}`);
        return n;
      }
    }
    return writeSync.call(fs, fd, buffer, offset, length, ...rest);
  };
} else if (hook === "rename") {
  const renameSync = fs.renameSync;
  fs.renameSync = function (from, to) {
    if (String(from).endsWith(".casefile.tmp") && ++seen === at) hold(`compaction-before-rename ${to}`);
    return renameSync.call(fs, from, to);
  };
} else if (hook === "truncate") {
  // Only the truncate that follows a compaction's rename counts (opening a journal with a torn
  // tail also truncates, possibly to 0, and is not the window this mode is for).
  const renameSync = fs.renameSync;
  let renamed = false;
  fs.renameSync = function (from, to) {
    const r = renameSync.call(fs, from, to);
    if (String(from).endsWith(".casefile.tmp")) renamed = true;
    return r;
  };
  const ftruncateSync = fs.ftruncateSync;
  fs.ftruncateSync = function (fd, len) {
    if (renamed && (len === 0 || len === undefined) && pathOf(fd).endsWith(".journal")) {
      renamed = false;
      if (++seen === at) hold(`compaction-before-journal-truncate ${pathOf(fd)}`);
    }
    return ftruncateSync.call(fs, fd, len);
  };
} else if (hook === "pg-commit" || hook === "pg-committed") {
  // node-postgres sends COMMIT as a simple query: 'Q', a 4-byte length, then "COMMIT\0".
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const net = require("node:net");
  const write = net.Socket.prototype.write;
  net.Socket.prototype.write = function (chunk, ...rest) {
    const isCommit =
      Buffer.isBuffer(chunk) && chunk.length >= 12 && chunk[0] === 0x51 && chunk.toString("latin1", 5, 12) === "COMMIT\0";
    if (!isCommit || ++seen !== at) return write.call(this, chunk, ...rest);
    if (hook === "pg-commit") {
      hold("pg-before-commit");
      return write.call(this, chunk, ...rest);
    }
    // Node writes to the socket at once when nothing is queued before it (pg does not cork a
    // simple query), so COMMIT is with the server when write returns: hold before its answer is read.
    const r = write.call(this, chunk, ...rest);
    hold("pg-after-commit-sent");
    return r;
  };
}
