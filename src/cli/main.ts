import { baselineWasmOnly } from "../casefile/sqlite";
import { fileError, isCasefileError, isErrnoError } from "../engine/errors";
import type { Command, Io } from "./args";
import { EXIT_OUTPUT_CLOSED, processIo } from "./processIo";
import { RULES_USAGE } from "./rulesUsage";

/**
 * `casefile` — the runner in-process, for terminals and CI.
 *
 * Exit codes: 0 the command did what was asked (a run completed or is waiting for a person);
 * 1 the run ended failed or stopped; 2 usage error; 3 refused (bad case file, invalid input,
 * workflow error...); 141 its stdout or stderr closed early (processIo.ts). Errors are one line
 * on stderr: `casefile: CODE: message`.
 */

export type { Command, Io };

/**
 * Every command: its name, its synopsis (one line per form, as `--help` and README's CLI block
 * print it) and its handler. `--help`, the unknown-command error and `commands` are made from
 * this one table; test/unit/cli/usage.test.ts checks README's CLI block against it.
 *
 * A command gives its handler either directly (`handler`) or as `load`, which requires the
 * module holding it on first use, so a command pays only for its own code: dist/cli.js (one
 * CommonJS bundle, hence `require` rather than `import()`) initialises a module when it is first
 * required, and zod, yaml, the OpenAI client and the tokenizer's tables are bundles of their own
 * beside it (esbuild.mjs). `--help` loads none of them.
 */
export type CommandEntry = { name: string; synopsis: readonly string[] } & ({ handler: Command } | { load: () => Promise<Command> });

export const COMMANDS: readonly CommandEntry[] = [
  {
    name: "run",
    synopsis: [
      "casefile run <workflow.ts> [--case-file F | --store URL --case ID] [--input JSON] [--provider JSON] [--token-budget N] [--otel] [--otel-content]",
    ],
    load: async () => (require("./sessionCommands") as typeof import("./sessionCommands")).sessionCommands.run,
  },
  {
    name: "resume",
    synopsis: [
      "casefile resume (<case file> | --store URL --case ID) --checkpoint ID [--patch JSON] [--workflow F] [--provider JSON] [--token-budget N] [--otel] [--otel-content]",
    ],
    load: async () => (require("./sessionCommands") as typeof import("./sessionCommands")).sessionCommands.resume,
  },
  {
    name: "respond",
    synopsis: [
      "casefile respond (<case file> | --store URL --case ID) --request ID --answer JSON [--by NAME] [--workflow F] [--provider JSON] [--token-budget N] [--otel] [--otel-content]",
    ],
    load: async () => (require("./sessionCommands") as typeof import("./sessionCommands")).sessionCommands.respond,
  },
  {
    name: "inspect",
    synopsis: ["casefile inspect (<case file> | --store URL --case ID) [--run ID] [--json]"],
    load: async () => (require("./inspectCommand") as typeof import("./inspectCommand")).inspect,
  },
  {
    name: "replay",
    synopsis: [
      "casefile replay (<case file> | --store URL --case ID) --step AGENT_CALL_ID|SUPERSTEP:EXECUTOR [--run ID] [--mode recorded|live|edited] [--messages FILE.json] [--provider JSON] [--token-budget N] [--workflow F]",
    ],
    load: async () => (require("./replayCommand") as typeof import("./replayCommand")).replay,
  },
  {
    name: "export-eval",
    synopsis: [
      "casefile export-eval (<case file> | --store URL --case ID) --step AGENT_CALL_ID|SUPERSTEP:EXECUTOR [--run ID] [--format json|promptfoo|openai-jsonl|openai-evals] [--out PATH] [--expect JSON] [--workflow F] [--json]",
    ],
    load: async () => (require("./evalCommands") as typeof import("./evalCommands")).exportEval,
  },
  {
    name: "eval",
    synopsis: ["casefile eval <dir or files...> [--provider JSON] [--junit PATH] [--workflow F] [--json]"],
    load: async () => (require("./evalCommands") as typeof import("./evalCommands")).runEval,
  },
  {
    name: "export-otel",
    synopsis: ["casefile export-otel (<case file> | --store URL --case ID) [--run ID] [--endpoint URL] [--content]"],
    load: async () => (require("./otelCommand") as typeof import("./otelCommand")).exportOtel,
  },
  {
    name: "experiment",
    synopsis: [
      "casefile experiment <dir or files...> --variant NAME=SPEC [--variant NAME=SPEC ...] [--repeat N] [--baseline NAME] [--out PATH]",
    ],
    load: async () => (require("./experimentCommand") as typeof import("./experimentCommand")).experiment,
  },
  {
    name: "enqueue",
    synopsis: ["casefile enqueue <workflow.ts> --store URL --case ID [--input JSON] [--tenant T]"],
    load: async () => (require("./queueCommands") as typeof import("./queueCommands")).enqueue,
  },
  {
    name: "worker",
    synopsis: [
      "casefile worker <workflow.ts> --store URL [--concurrency N] [--lease-ms N] [--idle-exit-ms N] [--tenant T] [--provider JSON]",
    ],
    load: async () => (require("./queueCommands") as typeof import("./queueCommands")).worker,
  },
  {
    name: "cases",
    synopsis: ["casefile cases --store URL [--status S] [--after CURSOR] [--limit N] [--tenant T] [--json]"],
    load: async () => (require("./casesCommand") as typeof import("./casesCommand")).cases,
  },
  {
    name: "pull",
    synopsis: ["casefile pull --store URL --case ID --out F.casefile [--tenant T]"],
    load: async () => (require("./pullCommand") as typeof import("./pullCommand")).pull,
  },
  {
    name: "compact",
    synopsis: ["casefile compact <case file>"],
    load: async () => (require("./compactCommand") as typeof import("./compactCommand")).compact,
  },
  {
    name: "dap",
    synopsis: ["casefile dap"],
    load: async () => (require("./dapCommand") as typeof import("./dapCommand")).dap,
  },
  {
    name: "rules",
    synopsis: RULES_USAGE.split("\n").map((l) => l.trim()),
    load: async () => (require("./ruleCommands") as typeof import("./ruleCommands")).rules,
  },
];

/** The handlers by name, for main(): a `load`ed one requires its module when first called. */
export const commands: Record<string, Command> = Object.fromEntries(
  COMMANDS.map((c) => [c.name, "handler" in c ? c.handler : async (args: string[], io: Io) => (await c.load())(args, io)]),
);

/** What `casefile --help` prints. */
export const USAGE = ["usage:", ...COMMANDS.flatMap((c) => c.synopsis.map((l) => `  ${l}`))].join("\n");

export async function main(argv: string[], io: Io): Promise<number> {
  const [name, ...rest] = argv;
  if (name === "--help" || name === "-h") {
    io.out(USAGE);
    return 0;
  }
  const command = name === undefined ? undefined : Object.hasOwn(commands, name) ? commands[name] : undefined;
  if (!command) {
    const what = name === undefined ? "no command given" : `unknown command "${name}"`;
    io.err(`casefile: USAGE: ${what} (one of ${Object.keys(commands).join(", ")}); casefile --help for usage`);
    return 2;
  }
  try {
    return await command(rest, io);
  } catch (e) {
    if (isCasefileError(e)) {
      io.err(`casefile: ${e.code}: ${e.message.split("\n").join(" ")}`);
      return e.code === "USAGE" ? 2 : 3;
    }
    // A file-system error a command did not name itself is still the user's to fix, not a bug.
    if (isErrnoError(e)) {
      io.err(`casefile: FILE_ERROR: ${fileError(e, e.syscall ?? "use").message}`);
      return 3;
    }
    io.err(`casefile: INTERNAL: ${(e as Error).stack ?? String(e)}`);
    return 3;
  }
}

/** Entry point of bin/casefile.js: the process's arguments, streams and exit code. */
export function cli(): void {
  baselineWasmOnly();
  // A pipe closed early ends the command quietly (processIo.ts), whatever code it returns.
  const io = processIo(process.env);
  void main(process.argv.slice(2), io).then((code) => {
    process.exitCode = io.outputClosed() ? EXIT_OUTPUT_CLOSED : code;
  });
}

if (require.main === module) cli();
