import { execFileSync } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";

/**
 * A real Postgres for the tests: a fresh cluster made with Debian's initdb in a temp dir, serving
 * only on a unix socket in that dir (no port another process could hold), started once per test
 * process on first use and stopped by its pid when mocha exits (see the root `after` below).
 * initdb refuses to run as root, so as root the dir is given to the `postgres` user and the
 * server tools run as that user (/work/shared/recipes/postgres.md).
 */

export interface PgCluster {
  /** A URL for a superuser connection to the cluster's `postgres` database. */
  url: string;
  dir: string;
  /** A URL for another database of the cluster (created by `createDatabase`). */
  urlFor(db: string, user?: string): string;
  /** Runs SQL as the superuser (or `user`) with psql (setup and checks: the code under test connects with pg). */
  psql(sql: string, db?: string, user?: string): string;
  /** The postmaster's pid, from postmaster.pid. */
  pid(): number;
  /** pg_ctl restart with a mode (immediate: a crash). */
  restart(mode?: "fast" | "immediate"): void;
  stop(): void;
}

const PORT = 5432;

function binDir(): string {
  const root = "/usr/lib/postgresql";
  const versions = existsSync(root) ? readdirSync(root).filter((v) => existsSync(path.join(root, v, "bin", "initdb"))) : [];
  if (versions.length === 0) throw new Error("no Postgres server binaries in /usr/lib/postgresql/*/bin (apt-get install -y postgresql)");
  return path.join(root, versions.sort((a, b) => Number(b) - Number(a))[0]!, "bin");
}

function asPostgres(bin: string, args: string[]): string {
  const root = process.getuid?.() === 0;
  const cmd = root ? "runuser" : bin;
  const argv = root ? ["-u", "postgres", "--", bin, ...args] : args;
  return execFileSync(cmd, argv, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
}

let started: PgCluster | undefined;

/** The test process's cluster, started on first call (about a second and a half). */
export function pgCluster(): PgCluster {
  started ??= startPgCluster();
  return started;
}

/**
 * A new cluster of its own. Tests run with fsync off (nothing they check needs the disk to
 * have it: a `-m immediate` restart loses no write the kernel holds); `durable` keeps Postgres's
 * defaults (fsync, synchronous_commit on), for benchmarks of durable commits. The caller stops it.
 */
export function startPgCluster(opts: { durable?: boolean } = {}): PgCluster {
  const bin = binDir();
  const dir = mkdtempSync(path.join(os.tmpdir(), "cfpg-"));
  if (process.getuid?.() === 0) chownSync(dir, Number(execFileSync("id", ["-u", "postgres"], { encoding: "utf8" })), 0);
  const data = path.join(dir, "data");
  asPostgres(path.join(bin, "initdb"), ["-D", data, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync"]);
  const ctl = (args: string[]): string => asPostgres(path.join(bin, "pg_ctl"), ["-D", data, ...args]);
  const serverOpts = `-k ${dir} -p ${PORT} -c listen_addresses=${opts.durable ? "" : " -c fsync=off"}`;
  ctl(["-o", serverOpts, "-l", path.join(dir, "pg.log"), "-w", "start"]);
  const urlFor = (db: string, user = "postgres"): string =>
    `postgresql://${user}@localhost/${db}?host=${encodeURIComponent(dir)}&port=${PORT}`;
  let stopped = false;
  const cluster: PgCluster = {
    url: urlFor("postgres"),
    dir,
    urlFor,
    psql: (sql, db = "postgres", user = "postgres") =>
      asPostgres(path.join(bin, "psql"), ["-h", dir, "-p", String(PORT), "-U", user, "-d", db, "-v", "ON_ERROR_STOP=1", "-qAt", "-c", sql]),
    pid: () => Number(readFileSync(path.join(data, "postmaster.pid"), "utf8").split("\n")[0]),
    restart: (mode = "fast") => {
      ctl(["-m", mode, "-w", "stop"]);
      ctl(["-o", serverOpts, "-l", path.join(dir, "pg.log"), "-w", "start"]);
    },
    stop: () => {
      if (stopped) return;
      stopped = true;
      const pid = cluster.pid();
      try {
        ctl(["-m", "fast", "-w", "stop"]);
      } catch {
        // pg_ctl could not stop it: end the postmaster by its pid.
        try {
          process.kill(pid, "SIGQUIT");
        } catch {
          // already gone
        }
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return cluster;
}

/** A fresh database of the cluster, for one test or one suite. */
let dbCount = 0;
export function createDatabase(prefix = "t"): string {
  const c = pgCluster();
  const name = `${prefix}_${process.pid}_${++dbCount}`;
  c.psql(`CREATE DATABASE ${name}`);
  return c.urlFor(name);
}

// A root hook: whatever test file started the cluster, it is stopped when the run ends (under
// mocha; a benchmark script importing this starts its own cluster and stops it).
if (typeof after === "function") after(() => started?.stop());
