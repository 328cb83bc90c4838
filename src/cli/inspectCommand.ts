import path from "node:path";
import { openCaseFile } from "../casefile/index";
import { CasefileError } from "../engine/errors";
import { parseOptions as parse, type Command } from "./args";
import { formatInspection, inspectCaseFile } from "./inspect";

/**
 * `casefile inspect <case file> [--run ID] [--json]`: what the case file holds, read-only. main.ts
 * loads this module on demand: inspect loads the case-file layer (sql.js) and the inspect schema,
 * never the engine's runner, the bundler or a model client.
 */
export const inspect: Command = async (args, io) => {
  const { values, positionals } = parse(args, { run: { type: "string" }, json: { type: "boolean" } }, 1);
  const caseFile = positionals[0];
  if (!caseFile) throw new CasefileError("USAGE", "inspect needs a case file");
  const store = await openCaseFile(caseFile, { readOnly: true });
  try {
    const file = path.resolve(caseFile);
    // What a killed writer left in the journal only (safe there; `casefile compact` folds it in),
    // and the rows whose stored JSON no longer reads: inspect names them and shows what it can.
    const journal = { uncompactedSupersteps: store.uncompactedSupersteps(), uncompactedRecords: store.uncompactedRecords() };
    const inspected = inspectCaseFile(store, file, values.run, { journal, damaged: store.damagedRecords() });
    if (values.run && inspected.runs.length === 0 && inspected.unreadable.length === 0)
      throw new CasefileError("UNKNOWN_RUN", `no run "${values.run}" in ${file}`);
    io.out(values.json ? JSON.stringify(inspected, null, 2) : formatInspection(file, inspected.runs, inspected));
    return 0;
  } finally {
    store.close();
  }
};
