import os from "node:os";
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
  /**
   * Aborted when a reader of the output has gone (stdout or stderr's pipe closed early:
   * `casefile inspect F | head -1`); later lines to it are dropped. processIo.ts sets it for the
   * process's streams; commands that run on (a run, a worker) stop at their next boundary.
   */
  closed?: AbortSignal;
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

/**
 * Who is acting, for the name an audit record carries (`respond`'s answer, every `rules` change):
 * `--by NAME`, else $USER, else $USERNAME (Windows), else the OS account's login name; undefined
 * when there is none (a uid without a passwd entry). `rules` refuses a change without a name;
 * `respond` records the answer without one.
 */
export function actingUser(by: string | undefined, io: Io): string | undefined {
  if (by !== undefined && by.trim() === "") throw new CasefileError("USAGE", "--by needs a name");
  const named = [by, io.env.USER, io.env.USERNAME].find((n) => n !== undefined && n.trim() !== "");
  if (named !== undefined) return named;
  try {
    return os.userInfo().username || undefined;
  } catch {
    return undefined; // no passwd entry for this uid
  }
}
