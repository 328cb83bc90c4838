import { parseArgs, type ParseArgsConfig } from "node:util";
import { CasefileError } from "../engine/errors";
import type { Json } from "../engine/records";
import type { TokenBudget } from "../protocol/runner";
import { defaultBudgetOf } from "../runner/budget";

/**
 * The argument helpers of every command (main.ts's and those in their own modules): a parse
 * error is a USAGE error naming the option. They live here, not in main.ts, so the command
 * modules need no runtime import of main.ts, which imports them.
 */

/** The streams and environment a command runs with; main.ts passes the process's. */
export interface Io {
  out: (line: string) => void;
  err: (line: string) => void;
  env: NodeJS.ProcessEnv;
}

export type Command = (args: string[], io: Io) => Promise<number>;

/**
 * Parses a command's options strictly. `maxPositionals` is how many bare arguments it takes (the
 * case file, a rule id...); one more is refused naming it, rather than silently ignored.
 */
export function parseOptions<T extends ParseArgsConfig["options"]>(args: string[], options: T, maxPositionals = Infinity) {
  let parsed;
  try {
    parsed = parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (e) {
    throw new CasefileError("USAGE", (e as Error).message);
  }
  const extra = parsed.positionals[maxPositionals];
  if (extra !== undefined) throw new CasefileError("USAGE", `unexpected argument "${extra}"`);
  return parsed;
}

export function jsonOption(value: string | undefined, name: string): Json | undefined {
  if (value === undefined) return undefined;
  try {
    return JSON.parse(value) as Json;
  } catch (e) {
    throw new CasefileError("USAGE", `--${name} is not valid JSON: ${(e as Error).message}`);
  }
}

/**
 * `--token-budget N`, else $CASEFILE_TOKEN_BUDGET: the hard token budget for agent steps that
 * declare none (a step's own budget wins; 0 for none). The editor's casefile.tokenBudget setting.
 */
export function tokenBudgetOption(value: string | undefined, io: Io): TokenBudget | undefined {
  if (value !== undefined) return defaultBudgetOf(value, "--token-budget");
  return defaultBudgetOf(io.env.CASEFILE_TOKEN_BUDGET, "CASEFILE_TOKEN_BUDGET");
}
