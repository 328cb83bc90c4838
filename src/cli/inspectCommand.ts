import { SqlJsStore } from "../casefile/index";
import { CasefileError } from "../engine/errors";
import type { PostgresStore } from "../pgstore/index";
import { STORE_OPTIONS, locationFromOptions, openLocation } from "../runner/storeLocation";
import { parseOptions as parse, type Command } from "./args";
import { formatInspection, inspectCaseFile } from "./inspect";

/**
 * `casefile inspect <case file> [--run ID] [--json]`: what the case file holds, read-only. main.ts
 * loads this module on demand: inspect loads the case-file layer (sql.js) and the inspect schema,
 * never the engine's runner, the bundler or a model client; and the Postgres store only for a
 * store's case (openLocation requires it then).
 */
export const inspect: Command = async (args, io) => {
  const { values, positionals } = parse(args, { run: { type: "string" }, json: { type: "boolean" }, ...STORE_OPTIONS }, 1);
  const location = locationFromOptions("inspect", values, positionals[0]);
  if (!location) throw new CasefileError("USAGE", "inspect needs a case file (or --store URL --case ID)");
  const { store, label: file } = await openLocation(location, { readOnly: true });
  try {
    // What a killed writer left in the journal only (safe there; `casefile compact` folds it in),
    // and the rows whose stored JSON no longer reads: inspect names them and shows what it can.
    // A case of a Postgres store has no journal, and refuses a damaged row where it is read.
    const extra =
      store instanceof SqlJsStore
        ? {
            journal: { uncompactedSupersteps: store.uncompactedSupersteps(), uncompactedRecords: store.uncompactedRecords() },
            damaged: store.damagedRecords(),
          }
        : location.kind === "postgres"
          ? { damaged: (store as PostgresStore).damagedRecords() }
          : {};
    const inspected = inspectCaseFile(store, file, values.run, extra);
    if (values.run && inspected.runs.length === 0 && inspected.unreadable.length === 0)
      throw new CasefileError("UNKNOWN_RUN", `no run "${values.run}" in ${file}`);
    io.out(values.json ? JSON.stringify(inspected, null, 2) : formatInspection(file, inspected.runs, inspected));
    return 0;
  } finally {
    store.close();
  }
};
