import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { openCaseFile } from "../../../src/casefile/index";
import { main } from "../../../src/cli/main";
import type { RuleRecord } from "../../../src/engine/records";

const fixtures = path.resolve(__dirname, "../../fixtures/rules");

describe("business rules: casefile rules CLI and the runner's rule book", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "casefile-rules-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  async function cli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; out: string; err: string }> {
    const out: string[] = [];
    const err: string[] = [];
    const code = await main(args, { out: (l) => out.push(l), err: (l) => err.push(l), env: { USER: "tester", ...env } });
    return { code, out: out.join("\n"), err: err.join("\n") };
  }

  it("adds, confirms, edits and deletes rules, each change an audit event, and `run` reads the book", async () => {
    const book = path.join(dir, "rules.casefile");
    const added = await cli([
      "rules",
      book,
      "add",
      "--statement",
      "Supplier 3 invoices per pallet",
      "--value",
      '{"cartonsPerPallet":40}',
      "--source-case",
      "run-42",
      "--by",
      "agent:review",
    ]);
    assert.equal(added.code, 0, added.err);
    const id = /added (rule-[0-9a-f]+)/.exec(added.out)![1]!;

    const listed = await cli(["rules", book, "list", "--json"]);
    const rules = (JSON.parse(listed.out) as { rules: (RuleRecord & { state: string })[] }).rules;
    assert.deepEqual(
      rules.map((r) => [r.id, r.state, r.proposedBy, r.sourceCase]),
      [[id, "proposed", "agent:review", "run-42"]],
    );

    const workflow = path.join(fixtures, "advisor.ts");
    const caseFile = path.join(dir, "a.casefile");
    const before = await cli(["run", workflow, "--case-file", caseFile], { CASEFILE_RULES: book });
    assert.equal(before.code, 0, before.err);

    assert.equal((await cli(["rules", book, "confirm", id])).code, 0);
    const caseFile2 = path.join(dir, "b.casefile");
    assert.equal((await cli(["run", workflow, "--case-file", caseFile2], { CASEFILE_RULES: book })).code, 0);

    const edited = await cli(["rules", book, "edit", id, "--statement", "Supplier 3 invoices per pallet of 48 cartons", "--by", "li"]);
    assert.match(edited.out, /confirm it again/);
    assert.equal((await cli(["rules", book, "delete", id, "--by", "li"])).code, 0);
    assert.match((await cli(["rules", book, "list"])).out, /no rules in/);
    assert.match(
      (await cli(["rules", book, "list", "--all"])).out,
      new RegExp(`${id}  \\[deleted\\]  Supplier 3 invoices per pallet of 48 cartons`),
    );

    const history = JSON.parse((await cli(["rules", book, "history", id, "--json"])).out) as {
      events: { data: { op: string; by: string } }[];
    };
    assert.deepEqual(
      history.events.map((e) => `${e.data.op} by ${e.data.by}`),
      ["added by agent:review", "confirmed by tester", "edited by li", "deleted by li"],
    );
    // The text history says what an edit changed, as the audit trail records it.
    const text = (await cli(["rules", book, "history", id])).out.split("\n");
    assert.match(
      text[2]!,
      new RegExp(
        `  ${id}  edited by li: statement "Supplier 3 invoices per pallet" -> "Supplier 3 invoices per pallet of 48 cartons"; confirmation by tester withdrawn$`,
      ),
      "the edit line names the field, before and after",
    );

    // What each run's agent was given: nothing before the confirmation, the rule after it.
    const contextOf = async (file: string): Promise<string> => {
      const store = await openCaseFile(file, { readOnly: true });
      try {
        return store.listAgentCalls()[0]!.request.messages[0]!.content;
      } finally {
        store.close();
      }
    };
    assert.equal(await contextOf(caseFile), "Rules in force:\n");
    assert.equal(await contextOf(caseFile2), `Rules in force:\n- [${id}] Supplier 3 invoices per pallet {"cartonsPerPallet":40}`);
  });

  it("refuses a rules command without a subcommand, and an unknown rule, with the usual exit codes", async () => {
    const book = path.join(dir, "rules.casefile");
    const usage = await cli(["rules", book]);
    assert.equal(usage.code, 2);
    assert.match(usage.err, /rules needs a rule book and a subcommand/);
    await cli(["rules", book, "add", "--statement", "x"]);
    const unknown = await cli(["rules", book, "confirm", "rule-00000000"]);
    assert.equal(unknown.code, 3);
    assert.match(unknown.err, /UNKNOWN_RULE: no rule "rule-00000000"/);
  });
});
