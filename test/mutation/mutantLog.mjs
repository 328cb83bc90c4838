/**
 * A Stryker reporter (`mutant-log`) that appends one JSON line per mutant to
 * reports/mutation/mutants.jsonl as soon as it is tested, so a run stopped before its end (a time
 * limit on a shared machine) still says which mutants were killed and which survived, per file.
 * Stryker's own reports are written only when the whole run finishes.
 */
import { appendFileSync, mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { declareClassPlugin, PluginKind } from "@stryker-mutator/api/plugin";

const FILE = path.resolve("reports/mutation/mutants.jsonl");

class MutantLogReporter {
  static inject = [];
  constructor() {
    mkdirSync(path.dirname(FILE), { recursive: true });
    writeFileSync(FILE, "");
  }
  onMutantTested(m) {
    const line = {
      file: path.relative(process.cwd(), m.fileName),
      line: m.location.start.line,
      mutator: m.mutatorName,
      replacement: m.replacement,
      status: m.status,
    };
    appendFileSync(FILE, JSON.stringify(line) + "\n");
  }
}

export const strykerPlugins = [declareClassPlugin(PluginKind.Reporter, "mutant-log", MutantLogReporter)];
