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
 *   KILLTEST_HOOK=pg-commit    a Postgres commit's statement about to be sent (nothing of it reaches Postgres)
 *   KILLTEST_HOOK=pg-committed a Postgres commit's statement sent, its answer not yet read (durable, unacknowledged)
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
  // A commit is one statement (src/pgstore/rows.ts, writeStatement: "WITH lock AS ..."). node-postgres
  // sends a query in Query.submit, its messages corked and written out as submit returns; pg is
  // loaded in the connection thread (syncClient.ts) by require, which this wraps to find it.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const Module = require("node:module");
  const load = Module._load;
  Module._load = function (...args) {
    const m = load.apply(this, args);
    const proto = m && m.Query && m.Client ? m.Query.prototype : undefined;
    if (proto && !proto.killHooked) {
      proto.killHooked = true;
      const submit = proto.submit;
      proto.submit = function (connection) {
        const isCommit = typeof this.text === "string" && this.text.startsWith("WITH lock AS");
        if (!isCommit || ++seen !== at) return submit.call(this, connection);
        if (hook === "pg-commit") {
          hold("pg-before-commit");
          return submit.call(this, connection);
        }
        // Node writes to the socket at once when nothing is queued before it, so the statement is
        // with the server when submit returns: hold before its answer is read.
        const r = submit.call(this, connection);
        hold("pg-after-commit-sent");
        return r;
      };
    }
    return m;
  };
}
