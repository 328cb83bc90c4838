import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { COMMANDS, main } from "../../../src/cli/main";

/**
 * `casefile --help`, the unknown-command error and README's CLI block are all the one command
 * table in src/cli/main.ts: a command added there without a synopsis, or a synopsis changed
 * without README, fails here.
 */

const readme = readFileSync(path.resolve(__dirname, "../../../README.md"), "utf8");

/** The lines of README's fenced block under "## CLI". */
function readmeCliBlock(): string[] {
  const m = /^## CLI\n\n```\n([\s\S]*?)```/m.exec(readme);
  assert.ok(m, 'README.md has a "## CLI" section opening with a fenced block');
  return m[1]!.trimEnd().split("\n");
}

async function run(argv: string[]): Promise<{ code: number; out: string[]; err: string[] }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(argv, { out: (l) => out.push(...l.split("\n")), err: (l) => err.push(...l.split("\n")), env: {} });
  return { code, out, err };
}

describe("cli: one command table for --help, unknown commands and README", () => {
  it("every command in the table has a synopsis line naming it", () => {
    assert.ok(COMMANDS.length > 0, "expected: COMMANDS.length > 0");
    for (const c of COMMANDS) {
      assert.ok(c.synopsis.length > 0, `${c.name} has a synopsis`);
      for (const line of c.synopsis) assert.ok(line.startsWith(`casefile ${c.name} `) || line === `casefile ${c.name}`, line);
    }
    assert.equal(new Set(COMMANDS.map((c) => c.name)).size, COMMANDS.length, "no command twice");
  });

  it("--help prints every synopsis, in the table's order", async () => {
    const r = await run(["--help"]);
    assert.equal(r.code, 0);
    assert.deepEqual(r.out, ["usage:", ...COMMANDS.flatMap((c) => c.synopsis.map((l) => `  ${l}`))]);
  });

  it("README's CLI block lists each synopsis, and nothing else", () => {
    assert.deepEqual(
      readmeCliBlock(),
      COMMANDS.flatMap((c) => c.synopsis),
    );
  });

  it("an unknown command is one usage line naming every command", async () => {
    for (const [argv, what] of [
      [["frobnicate"], 'unknown command "frobnicate"'],
      [[], "no command given"],
      [["toString"], 'unknown command "toString"'],
    ] as const) {
      const r = await run([...argv]);
      assert.equal(r.code, 2, JSON.stringify(argv));
      assert.equal(r.err.length, 1, JSON.stringify(r.err));
      assert.ok(r.err[0]!.startsWith(`casefile: USAGE: ${what} (one of `), `${JSON.stringify(argv)}: ${r.err[0]}`);
      assert.match(r.err[0]!, /\(one of [^)]+\); casefile --help for usage$/);
      assert.ok(r.err[0]!.includes(`(one of ${COMMANDS.map((c) => c.name).join(", ")})`), r.err[0]);
    }
  });
});
