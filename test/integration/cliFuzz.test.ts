import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { startErp, type ErpServer } from "../../examples/erp/server";
import { invoiceSeed } from "../../examples/invoice/erpData";
import { openCaseFile } from "../../src/casefile/index";
import { main } from "../../src/cli/main";
import { root, tempDir } from "./helpers";

/**
 * Hostile arguments and inputs for every command, run through `main()` in this process. Each must
 * be refused the way a user can act on: exit 2 (usage) or 3 (refused), exactly one stderr line
 * `casefile: CODE: message`, never INTERNAL, never a stack; and nothing created or changed beside
 * a case file it was handed. One test per input, so the list of what was tried is the test list.
 */

const invoiceWorkflow = path.join(root, "examples/invoice/workflow.ts");
const counterWorkflow = path.join(root, "test/fixtures/workflows/counter.ts");
const brokenWorkflow = path.join(root, "test/fixtures/workflows/broken.ts");
const SQLITE3 = "/usr/bin/sqlite3";

interface Ran {
  code: number;
  out: string[];
  err: string[];
}

async function cli(args: string[]): Promise<Ran> {
  const out: string[] = [];
  const err: string[] = [];
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const k of ["CASEFILE_PROVIDER", "CASEFILE_RULES", "CASEFILE_TOKEN_BUDGET", "CASEFILE_EVENTS"]) delete env[k];
  const code = await main(args, {
    out: (l) => out.push(...l.split("\n")),
    err: (l) => err.push(...l.split("\n")),
    env,
  });
  return { code, out, err };
}

/** A refusal a user can act on: the exit code, one typed line, no stack. */
function assertRefused(r: Ran, what: string): void {
  const detail = `${what}\nexit ${r.code}\nstderr:\n${r.err.join("\n")}`;
  assert.ok(r.code === 2 || r.code === 3, `exit 2 or 3: ${detail}`);
  assert.equal(r.err.length, 1, `exactly one stderr line: ${detail}`);
  assert.match(r.err[0]!, /^casefile: [A-Z_]+: /, detail);
  assert.ok(!r.err[0]!.includes("INTERNAL"), detail);
  assert.ok(![...r.err, ...r.out].some((l) => l.includes("    at ")), `no stack: ${detail}`);
}

/** Every name in a folder with the sha256 of each file: what "nothing created or changed" compares. */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of readdirSync(dir).sort()) {
    const p = path.join(dir, name);
    out[name] = statSync(p).isDirectory() ? "(dir)" : createHash("sha256").update(readFileSync(p)).digest("hex");
  }
  return out;
}

describe("CLI fuzz: hostile arguments and inputs are refused with one typed line", function () {
  this.timeout(120_000);
  let dir: string;
  let erp: ErpServer;
  /** Pristine fixtures; every test works on its own copy. */
  let invoice: string;
  let counter: string;
  let ruleBook: string;
  let ids: { run: string; checkpoint: string; request: string; step: string };
  let n = 0;

  /** A fresh folder holding a copy of `file` (or a file made by `make`) under `name`. */
  const place = (name: string, make: (target: string) => void): string => {
    const sub = path.join(dir, `t${++n}`);
    mkdirSync(sub);
    const target = path.join(sub, name);
    make(target);
    return target;
  };
  const copyOf = (from: string, name = path.basename(from)) => place(name, (t) => copyFileSync(from, t));
  const sql = (file: string, statement: string) => execFileSync(SQLITE3, [file, statement]);

  before(async () => {
    dir = tempDir("casefile-fuzz-");
    erp = await startErp({ dataDir: path.join(dir, "erp"), seed: invoiceSeed });
    invoice = path.join(dir, "invoice.casefile");
    const ran = await cli([
      "run",
      invoiceWorkflow,
      "--case-file",
      invoice,
      "--input",
      JSON.stringify({ invoiceId: "INV-1001", erpUrl: erp.url }),
    ]);
    assert.equal(ran.code, 0, ran.err.join("\n"));
    counter = path.join(dir, "counter.casefile");
    const c = await cli(["run", counterWorkflow, "--case-file", counter, "--input", '{"limit":2,"delayMs":0}']);
    assert.equal(c.code, 0, c.err.join("\n"));
    ruleBook = path.join(dir, "rules.casefile");
    const added = await cli(["rules", ruleBook, "add", "--statement", "EUR only", "--by", "fuzz"]);
    assert.equal(added.code, 0, added.err.join("\n"));
    const store = await openCaseFile(invoice, { readOnly: true });
    try {
      const run = store.listRuns()[0]!;
      const latest = store.latestCheckpoint(run.id)!;
      ids = { run: run.id, checkpoint: latest.id, request: latest.waiting[0]!.id, step: store.listAgentCalls(run.id)[0]!.id };
    } finally {
      store.close();
    }
  });

  after(async () => {
    await erp?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Runs `args(file)` on a case file made by `make`, asserting the refusal and an untouched folder. */
  function refusedOn(title: string, make: () => string, args: (file: string) => string[]): void {
    it(title, async () => {
      const file = make();
      const folder = path.dirname(file);
      const before = snapshot(folder);
      const r = await cli(args(file));
      assertRefused(r, title);
      assert.deepEqual(snapshot(folder), before, `nothing created or changed beside the file: ${title}`);
    });
  }

  /** Runs arguments that need no case file of their own. */
  function refused(title: string, args: () => string[]): void {
    it(title, async () => assertRefused(await cli(args()), title));
  }

  // ---------------------------------------------------------------------------------------------
  // Case files that are not whole, handed to every command that opens one.
  const hostileFiles: [string, () => string][] = [
    ["a missing case file", () => place("missing.casefile", () => undefined)],
    ["a directory", () => place("dir.casefile", (t) => mkdirSync(t))],
    ["an empty file", () => place("empty.casefile", (t) => writeFileSync(t, ""))],
    ["random bytes", () => place("random.casefile", (t) => writeFileSync(t, randomBytes(8192)))],
    ["a text file", () => place("notes.casefile", (t) => writeFileSync(t, "these are my notes\n"))],
    [
      "a truncated real case file",
      () => place("truncated.casefile", (t) => writeFileSync(t, readFileSync(invoice).subarray(0, Math.floor(statSync(invoice).size / 2)))),
    ],
    [
      "a SQLite database that is not a case file",
      () =>
        place("other.casefile", (t) => {
          sql(t, "CREATE TABLE x (a)");
        }),
    ],
    [
      "a case file of a newer schema",
      () => {
        const f = copyOf(invoice, "newer.casefile");
        sql(f, "UPDATE meta SET schema_version = 99");
        return f;
      },
    ],
  ];
  const damaged =
    (table: string, set: string, where = "1") =>
    () => {
      const f = copyOf(invoice, `damaged-${table}.casefile`);
      sql(f, `UPDATE ${table} SET data = ${set} WHERE ${where}`);
      return f;
    };
  const damagedBy = (name: string, statement: string) => () => {
    const f = copyOf(invoice, `damaged-${name}.casefile`);
    sql(f, statement);
    return f;
  };
  const NOT_JSON = "'not json'";
  const WRONG_SHAPE = `'{"id": 7}'`;

  const commandsOnFile: [string, (file: string) => string[]][] = [
    ["resume", (f) => ["resume", f, "--checkpoint", ids.checkpoint]],
    ["respond", (f) => ["respond", f, "--request", ids.request, "--answer", '"approve"', "--workflow", invoiceWorkflow]],
    ["inspect", (f) => ["inspect", f]],
    ["inspect --json", (f) => ["inspect", f, "--json"]],
    ["replay", (f) => ["replay", f, "--step", ids.step, "--workflow", invoiceWorkflow]],
    ["export-eval", (f) => ["export-eval", f, "--step", ids.step, "--workflow", invoiceWorkflow, "--out", f + ".eval.json"]],
    ["rules list", (f) => ["rules", f, "list"]],
    ["rules add", (f) => ["rules", f, "add", "--statement", "x", "--by", "fuzz"]],
  ];
  for (const [fileTitle, make] of hostileFiles) {
    for (const [cmd, args] of commandsOnFile) {
      // `rules add` creates a missing rule book: that is its job, not a refusal.
      if (cmd === "rules add" && fileTitle === "a missing case file") continue;
      refusedOn(`${cmd} on ${fileTitle}`, make, args);
    }
  }

  // A real case file with damaged rows: each command refused where it reads the row.
  const damagedFiles: [string, () => string, string[]][] = [
    ["a state value that is not JSON", damaged("state_values", NOT_JSON), ["resume", "respond", "replay", "export-eval"]],
    ["a checkpoint that is not JSON", damaged("checkpoints", NOT_JSON), ["resume", "respond", "replay", "export-eval"]],
    ["a checkpoint of the wrong shape", damaged("checkpoints", WRONG_SHAPE), ["resume", "respond", "replay"]],
    ["a run record that is not JSON", damaged("runs", NOT_JSON), ["resume", "respond", "replay", "export-eval"]],
    ["an agent call that is not JSON", damaged("agent_calls", NOT_JSON), ["replay", "export-eval"]],
    ["an agent call of the wrong shape", damaged("agent_calls", "'[1, 2]'"), ["replay", "export-eval"]],
    ["a verdict that is not JSON", damaged("verdicts", NOT_JSON), ["export-eval"]],
    ["an event that is not JSON", damaged("events", NOT_JSON), ["respond"]],
    ["a step stored as a blob", damaged("steps", "X'00ff'"), ["respond"]],
    ["an agent call that is not JSON, resumed", damaged("agent_calls", NOT_JSON), ["resume", "respond"]],
    [
      "a run whose status column disagrees with its record",
      damagedBy("status", "UPDATE runs SET status = 'bogus'"),
      ["resume", "respond", "replay", "export-eval"],
    ],
    [
      "a checkpoint whose superstep column is text",
      damagedBy("superstep", "UPDATE checkpoints SET superstep = 'abc'"),
      ["resume", "respond", "replay", "export-eval"],
    ],
    ["its runs deleted", damagedBy("no-runs", "DELETE FROM runs"), ["resume", "replay", "export-eval"]],
  ];
  for (const [fileTitle, make, cmds] of damagedFiles) {
    for (const [cmd, args] of commandsOnFile.filter(([c]) => cmds.includes(c))) {
      refusedOn(`${cmd} on a real case file with ${fileTitle}`, make, args);
    }
  }
  refusedOn(
    "rules list on a rule book whose rule is not JSON",
    () => {
      const f = copyOf(ruleBook);
      sql(f, `UPDATE rules SET data = ${NOT_JSON}`);
      return f;
    },
    (f) => ["rules", f, "list"],
  );

  // ---------------------------------------------------------------------------------------------
  // Arguments.
  refused("no command", () => []);
  refused("an unknown command", () => ["frobnicate"]);
  refused("an unknown flag before any command", () => ["--frobnicate"]);

  refused("run without a workflow", () => ["run"]);
  refused("run of a missing workflow file", () => ["run", path.join(dir, "nope.ts"), "--case-file", path.join(dir, "nope.casefile")]);
  refused("run of a workflow that does not build", () => ["run", brokenWorkflow, "--case-file", place("b.casefile", () => undefined)]);
  refused("run of a workflow file whose top level throws (notes, not code)", () => [
    "run",
    place("notes.ts", (t) => writeFileSync(t, "these are my notes\n")),
    "--case-file",
    place("n.casefile", () => undefined),
  ]);
  refused("run with --input that is not JSON", () => ["run", counterWorkflow, "--input", "{limit: 2"]);
  refused("run with --provider that is not JSON", () => ["run", counterWorkflow, "--provider", "scripted"]);
  refused("run with --provider of an unknown kind", () => ["run", counterWorkflow, "--provider", '{"kind":"telepathy"}']);
  refused("run with --provider that is a JSON array", () => ["run", counterWorkflow, "--provider", "[1]"]);
  refused("run with --token-budget that is not a number", () => ["run", counterWorkflow, "--token-budget", "lots"]);
  refused("run with an unknown flag", () => ["run", counterWorkflow, "--frobnicate"]);
  refused("run with an extra positional", () => ["run", counterWorkflow, "extra.ts"]);
  refused("run with --case-file that is a directory", () => [
    "run",
    counterWorkflow,
    "--case-file",
    dir,
    "--input",
    '{"limit":1,"delayMs":0}',
  ]);
  refused("run with --case-file under a missing folder", () => [
    "run",
    counterWorkflow,
    "--case-file",
    path.join(dir, "no", "such", "x.casefile"),
    "--input",
    '{"limit":1,"delayMs":0}',
  ]);
  refused("run with --case-file under a file", () => [
    "run",
    counterWorkflow,
    "--case-file",
    path.join(invoice, "x.casefile"),
    "--input",
    '{"limit":1,"delayMs":0}',
  ]);
  refused("run with --case-file that is random bytes", () => [
    "run",
    counterWorkflow,
    "--case-file",
    place("r.casefile", (t) => writeFileSync(t, randomBytes(4096))),
    "--input",
    '{"limit":1,"delayMs":0}',
  ]);

  const onCounter = (title: string, args: (f: string) => string[]) => refusedOn(title, () => copyOf(counter), args);
  const onInvoice = (title: string, args: (f: string) => string[]) => refusedOn(title, () => copyOf(invoice), args);

  refused("resume without a case file", () => ["resume"]);
  onCounter("resume without --checkpoint", (f) => ["resume", f]);
  onCounter("resume with --checkpoint and no value", (f) => ["resume", f, "--checkpoint"]);
  onCounter("resume of an unknown checkpoint", (f) => ["resume", f, "--checkpoint", "no-such-checkpoint"]);
  onInvoice("resume with --workflow naming a file whose top level throws", (f) => [
    "resume",
    f,
    "--checkpoint",
    ids.checkpoint,
    "--workflow",
    place("notes.ts", (t) => writeFileSync(t, "these are my notes\n")),
  ]);
  onInvoice("resume with --patch that is not JSON", (f) => ["resume", f, "--checkpoint", ids.checkpoint, "--patch", "{decision:"]);
  onInvoice("resume with --patch that is an array", (f) => ["resume", f, "--checkpoint", ids.checkpoint, "--patch", "[1,2]"]);
  onInvoice("resume with --patch that is a string", (f) => ["resume", f, "--checkpoint", ids.checkpoint, "--patch", '"x"']);
  onInvoice("resume with --patch of an unknown key", (f) => ["resume", f, "--checkpoint", ids.checkpoint, "--patch", '{"nope":1}']);
  onInvoice("resume with --patch of a wrong-typed value", (f) => [
    "resume",
    f,
    "--checkpoint",
    ids.checkpoint,
    "--patch",
    '{"invoice":42}',
  ]);
  onInvoice("resume with --provider that is not JSON", (f) => ["resume", f, "--checkpoint", ids.checkpoint, "--provider", "{"]);
  onInvoice("resume with --workflow that is missing", (f) => [
    "resume",
    f,
    "--checkpoint",
    ids.checkpoint,
    "--workflow",
    path.join(dir, "gone.ts"),
  ]);
  onInvoice("resume with --workflow that is a directory", (f) => ["resume", f, "--checkpoint", ids.checkpoint, "--workflow", dir]);
  onInvoice("resume with an extra positional", (f) => ["resume", f, "extra", "--checkpoint", ids.checkpoint]);
  onInvoice("resume with an unknown flag", (f) => ["resume", f, "--checkpoint", ids.checkpoint, "--frobnicate"]);

  refused("respond without a case file", () => ["respond"]);
  onInvoice("respond without --request", (f) => ["respond", f, "--answer", '"approve"']);
  onInvoice("respond without --answer", (f) => ["respond", f, "--request", ids.request]);
  onInvoice("respond to an unknown request", (f) => ["respond", f, "--request", "no-such-request", "--answer", '"approve"']);
  onInvoice("respond with --answer that is not JSON", (f) => ["respond", f, "--request", ids.request, "--answer", "approve"]);
  onInvoice("respond with --answer of the wrong type", (f) => ["respond", f, "--request", ids.request, "--answer", '{"nope":[1]}']);
  onInvoice("respond with an extra positional", (f) => ["respond", f, "more", "--request", ids.request, "--answer", '"approve"']);
  onInvoice("respond with an unknown flag", (f) => ["respond", f, "--request", ids.request, "--answer", '"approve"', "--x"]);

  refused("inspect without a case file", () => ["inspect"]);
  onInvoice("inspect of an unknown run", (f) => ["inspect", f, "--run", "no-such-run"]);
  onInvoice("inspect with an extra positional", (f) => ["inspect", f, f]);
  onInvoice("inspect with an unknown flag", (f) => ["inspect", f, "--frobnicate"]);
  onInvoice("inspect with a value for --json", (f) => ["inspect", f, "--json=yes"]);

  refused("replay without a case file", () => ["replay"]);
  onInvoice("replay without --step", (f) => ["replay", f]);
  onInvoice("replay with an extra positional", (f) => ["replay", f, "again", "--step", ids.step]);
  onInvoice("replay of an unknown step", (f) => ["replay", f, "--step", "no-such-step"]);
  onInvoice("replay with an unknown --mode", (f) => ["replay", f, "--step", ids.step, "--mode", "sideways"]);
  onInvoice("replay --mode edited without --messages", (f) => ["replay", f, "--step", ids.step, "--mode", "edited"]);
  const withMessages = (title: string, make: (t: string) => void) =>
    onInvoice(`replay --mode edited with --messages ${title}`, (f) => {
      const m = path.join(path.dirname(f), "..", `messages-${n}.json`);
      make(m);
      return ["replay", f, "--step", ids.step, "--mode", "edited", "--messages", m];
    });
  withMessages("naming a missing file", () => undefined);
  withMessages("naming a directory", (m) => mkdirSync(m));
  withMessages("that is not JSON", (m) => writeFileSync(m, "[{role: user}"));
  withMessages("that is a JSON object without messages", (m) => writeFileSync(m, '{"role":"user"}'));
  withMessages("that is an empty array", (m) => writeFileSync(m, "[]"));
  withMessages("that is an array of numbers", (m) => writeFileSync(m, "[1,2,3]"));
  withMessages("with an unknown role", (m) => writeFileSync(m, '[{"role":"god","content":"hi"}]'));
  withMessages("with content that is not a string", (m) => writeFileSync(m, '[{"role":"user","content":{"a":1}}]'));
  onInvoice("replay with --provider of the wrong type", (f) => ["replay", f, "--step", ids.step, "--provider", '{"kind":42}']);

  refused("export-eval without a case file", () => ["export-eval"]);
  onInvoice("export-eval without --step", (f) => ["export-eval", f]);
  onInvoice("export-eval with an extra positional", (f) => ["export-eval", f, "more", "--step", ids.step]);
  onInvoice("export-eval of an unknown step", (f) => ["export-eval", f, "--step", "no-such-step"]);
  onInvoice("export-eval with an unknown --format", (f) => ["export-eval", f, "--step", ids.step, "--format", "csv"]);
  onInvoice("export-eval with --expect that is not JSON", (f) => ["export-eval", f, "--step", ids.step, "--expect", "{verdict"]);
  onInvoice("export-eval with --expect that is an array", (f) => ["export-eval", f, "--step", ids.step, "--expect", "[1]"]);
  onInvoice("export-eval with --expect of an unknown field", (f) => ["export-eval", f, "--step", ids.step, "--expect", '{"mood":"good"}']);
  onInvoice("export-eval with --expect of a wrong-typed verdict", (f) => [
    "export-eval",
    f,
    "--step",
    ids.step,
    "--expect",
    '{"verdict":7}',
  ]);
  onInvoice("export-eval --out naming an existing directory", (f) => ["export-eval", f, "--step", ids.step, "--out", path.dirname(f)]);
  onInvoice("export-eval --out under a file", (f) => ["export-eval", f, "--step", ids.step, "--out", path.join(f, "x.json")]);
  onInvoice("export-eval --out under a read-only folder", (f) => ["export-eval", f, "--step", ids.step, "--out", readOnlyPath(dir)]);

  refused("eval without arguments", () => ["eval"]);
  refused("eval of a missing path", () => ["eval", path.join(dir, "no-evals")]);
  refused("eval of an empty folder", () => ["eval", place("empty", (t) => mkdirSync(t))]);
  const evalDir = (title: string, files: Record<string, string | Buffer>) =>
    refused(`eval of a folder with ${title}`, () => {
      const d = place("evals", (t) => mkdirSync(t));
      for (const [name, body] of Object.entries(files)) writeFileSync(path.join(d, name), body);
      return ["eval", d];
    });
  evalDir("a case file that is not JSON", { "a.eval.json": "{not json" });
  evalDir("a case file that is random bytes", { "a.eval.json": randomBytes(2048) });
  evalDir("a case file that is JSON of the wrong shape", { "a.eval.json": '{"id": 1, "messages": "hi"}' });
  evalDir("a case file that is a JSON array", { "a.json": "[1,2,3]" });
  evalDir("a promptfoo file that is not YAML", { "a.yaml": "tests: [unclosed\n  - : :" });
  evalDir("a promptfoo file of the wrong shape", { "a.yaml": "tests: 42\n" });
  refused("eval of an OpenAI evals JSONL file named directly", () => [
    "eval",
    place("a.jsonl", (t) => writeFileSync(t, '{"input":[],"ideal":"x"}\n')),
  ]);
  refused("eval of an OpenAI Evals config named directly", () => [
    "eval",
    place("a.openai-eval.json", (t) => writeFileSync(t, '{"eval":{"data_source_config":{"type":"custom","item_schema":{}}},"run":{}}\n')),
  ]);
  refused("eval with --provider that is not JSON", () => ["eval", dir, "--provider", "nope"]);
  refused("eval with an unknown flag", () => ["eval", dir, "--frobnicate"]);

  refused("rules without a rule book", () => ["rules"]);
  refused("rules without a subcommand", () => ["rules", ruleBook]);
  refused("rules with an unknown subcommand", () => ["rules", copyOf(ruleBook), "frobnicate"]);
  const onBook = (title: string, args: string[]) =>
    refusedOn(
      title,
      () => copyOf(ruleBook),
      (f) => ["rules", f, ...args],
    );
  onBook("rules add without --statement", ["add", "--by", "fuzz"]);
  onBook("rules add with --value that is not JSON", ["add", "--statement", "x", "--value", "{a", "--by", "fuzz"]);
  onBook("rules add with --expires that is not a date", ["add", "--statement", "x", "--expires", "tomorrow-ish", "--by", "fuzz"]);
  onBook("rules add with an extra positional", ["add", "extra", "--statement", "x", "--by", "fuzz"]);
  onBook("rules add with an unknown flag", ["add", "--statement", "x", "--by", "fuzz", "--frobnicate"]);
  onBook("rules confirm without a RULE_ID", ["confirm", "--by", "fuzz"]);
  onBook("rules confirm with two RULE_IDs", ["confirm", "a", "b", "--by", "fuzz"]);
  onBook("rules confirm of an unknown rule", ["confirm", "no-such-rule", "--by", "fuzz"]);
  onBook("rules edit of an unknown rule", ["edit", "no-such-rule", "--statement", "y", "--by", "fuzz"]);
  onBook("rules edit without a change", ["edit", "no-such-rule", "--by", "fuzz"]);
  onBook("rules edit with --value that is not JSON", ["edit", "no-such-rule", "--value", "[", "--by", "fuzz"]);
  onBook("rules delete of an unknown rule", ["delete", "no-such-rule", "--by", "fuzz"]);
  onBook("rules history of an unknown rule", ["history", "no-such-rule"]);
  onBook("rules list with an unknown flag", ["list", "--frobnicate"]);
  refusedOn(
    "rules list on a case file with an extra positional",
    () => copyOf(ruleBook),
    (f) => ["rules", f, "list", "extra"],
  );
});

/**
 * A path under a folder this process cannot write: a chmod 555 folder, or for root (whom
 * permission bits do not stop) a path under /sys, which the kernel refuses to anyone.
 */
function readOnlyPath(dir: string): string {
  if (process.getuid?.() === 0) return "/sys/casefile-fuzz/out.eval.json";
  const ro = path.join(dir, "read-only");
  mkdirSync(ro, { recursive: true });
  execFileSync("chmod", ["555", ro]);
  return path.join(ro, "sub", "out.eval.json");
}
