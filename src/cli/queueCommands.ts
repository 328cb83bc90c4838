import path from "node:path";
import { CasefileError } from "../engine/errors";
import type { EventRecord } from "../engine/records";
import { PgQueue, isPostgresUrl } from "../pgstore/index";
import { runWorker } from "../runner/worker";
import { jsonOption, parseOptions, type Command } from "./args";
import { providerOption } from "./providerArgs";
import { eventsAsJsonl } from "./report";

/**
 * `casefile enqueue` and `casefile worker`: the queue of a Postgres store (src/pgstore/queue.ts).
 * main.ts loads this module on demand.
 */

function storeUrl(command: string, url: string | undefined): string {
  if (url === undefined) throw new CasefileError("USAGE", `${command} needs --store postgres://…`);
  if (!isPostgresUrl(url)) throw new CasefileError("USAGE", `${command}: --store takes a postgres:// URL`);
  return url;
}

function positiveInt(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 1) throw new CasefileError("USAGE", `--${name} must be a whole number of at least 1, not "${value}"`);
  return n;
}

export const enqueue: Command = async (args, io) => {
  const { values, positionals } = parseOptions(
    args,
    { store: { type: "string" }, case: { type: "string" }, input: { type: "string" }, tenant: { type: "string" } },
    1,
  );
  const workflow = positionals[0];
  if (!workflow || !values.case) throw new CasefileError("USAGE", "enqueue needs a workflow file, --store URL and --case ID");
  const queue = new PgQueue(storeUrl("enqueue", values.store), values.tenant ?? io.env.CASEFILE_TENANT);
  try {
    queue.enqueue(values.case, path.resolve(workflow), jsonOption(values.input, "input") ?? null);
  } finally {
    queue.close();
  }
  io.out(`case ${values.case} queued`);
  return 0;
};

export const worker: Command = async (args, io) => {
  const { values, positionals } = parseOptions(
    args,
    {
      store: { type: "string" },
      concurrency: { type: "string" },
      "lease-ms": { type: "string" },
      "idle-exit-ms": { type: "string" },
      tenant: { type: "string" },
      provider: { type: "string" },
    },
    1,
  );
  const workflow = positionals[0];
  if (!workflow) throw new CasefileError("USAGE", "worker needs a workflow file and --store URL");
  const stop = new AbortController();
  const onSignal = (): void => stop.abort();
  process.once("SIGTERM", onSignal);
  process.once("SIGINT", onSignal);
  // Its output's reader gone (a pipe closed): stop as on SIGTERM, each case at a superstep boundary.
  io.closed?.addEventListener("abort", onSignal, { once: true });
  try {
    const report = await runWorker(workflow, {
      url: storeUrl("worker", values.store),
      tenant: values.tenant ?? io.env.CASEFILE_TENANT,
      concurrency: positiveInt("concurrency", values.concurrency),
      leaseMs: positiveInt("lease-ms", values["lease-ms"]),
      idleExitMs: positiveInt("idle-exit-ms", values["idle-exit-ms"]),
      provider: providerOption(values.provider, io),
      env: io.env,
      log: (line) => io.err(line),
      // As run prints them (README, Events), each with the case it belongs to: a worker runs many.
      ...(eventsAsJsonl(io) ? { onEvent: (caseId: string, e: EventRecord) => io.out(JSON.stringify({ caseId, ...e })) } : {}),
      signal: stop.signal,
    });
    io.out(`worker: ${report.finished} case(s) run to a stop, ${report.lost} lease(s) lost`);
    return 0;
  } finally {
    io.closed?.removeEventListener("abort", onSignal);
    process.off("SIGTERM", onSignal);
    process.off("SIGINT", onSignal);
  }
};
