import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { openCaseFile } from "../../../src/casefile/index";
import { main } from "../../../src/cli/main";
import { signoffWorkflow } from "./helpers/signoffWorkflow";

/**
 * Who is acting, and the rule book's refusals, through the CLI on books and case files reopened
 * from disk: `respond` and `rules` sign with the same name (--by, else $USER, else $USERNAME,
 * else the login name), a missing rule book is called one, and a confirmed rule is not confirmed
 * again.
 */

describe("casefile: who is acting, and rule book refusals", function () {
  this.timeout(60_000);
  let dir: string;
  let book: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "casefile-who-acts-"));
    book = path.join(dir, "book.casefile");
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  async function cli(args: string[], env: NodeJS.ProcessEnv = { USER: "tester" }): Promise<{ code: number; out: string; err: string }> {
    const out: string[] = [];
    const err: string[] = [];
    const code = await main(args, { out: (l) => out.push(l), err: (l) => err.push(l), env });
    return { code, out: out.join("\n"), err: err.join("\n") };
  }

  async function answeredBy(caseFile: string): Promise<string | undefined> {
    const store = await openCaseFile(caseFile, { readOnly: true });
    try {
      const answered = store.listEvents().find((e) => e.type === "request_answered");
      return (answered?.data as { by?: string } | undefined)?.by;
    } finally {
      store.close();
    }
  }

  async function rulesOf(): Promise<{ proposedBy: string; confirmedBy?: string; confirmedAt?: string }[]> {
    const store = await openCaseFile(book, { readOnly: true });
    try {
      return store.listRules();
    } finally {
      store.close();
    }
  }

  it("respond and rules sign with the same name: --by, else $USER, else $USERNAME, else the login name", async () => {
    const workflow = path.join(dir, "signoff.ts");
    writeFileSync(workflow, signoffWorkflow());
    const login = os.userInfo().username;
    const cases: [string, string[], NodeJS.ProcessEnv, string][] = [
      ["$USER", [], { USER: "ann", USERNAME: "win-ann" }, "ann"],
      ["--by over $USER", ["--by", "ben"], { USER: "ann" }, "ben"],
      ["$USERNAME", [], { USERNAME: "win-cat" }, "win-cat"],
      ["the login name", [], {}, login],
    ];
    for (const [what, by, env, expected] of cases) {
      const caseFile = path.join(dir, `${expected}.casefile`);
      assert.equal((await cli(["run", workflow, "--case-file", caseFile], env)).code, 0, `${what}: run`);
      const store = await openCaseFile(caseFile, { readOnly: true });
      const request = store.latestCheckpoint(store.listRuns()[0]!.id)!.waiting[0]!.id;
      store.close();
      const answered = await cli(["respond", caseFile, "--request", request, "--answer", '{"decision":"approve"}', ...by], env);
      assert.equal(answered.code, 0, `${what}: ${answered.err}`);
      assert.equal(await answeredBy(caseFile), expected, `respond records ${what}`);

      const ruleBook = path.join(dir, `${expected}.rules.casefile`);
      const added = await cli(["rules", ruleBook, "add", "--statement", "1 pallet = 40 cartons", ...by], env);
      assert.equal(added.code, 0, `${what}: ${added.err}`);
      const store2 = await openCaseFile(ruleBook, { readOnly: true });
      const proposedBy = store2.listRules()[0]!.proposedBy;
      store2.close();
      assert.equal(proposedBy, expected, `rules add signs with ${what}, as respond does`);
    }
    const empty = await cli(["rules", book, "add", "--statement", "s", "--by", " "]);
    assert.equal(empty.code, 2, "an empty --by is a usage error");
    assert.equal(empty.err, "casefile: USAGE: --by needs a name");
    assert.equal(existsSync(book), false, "and makes no book");
  });

  it("a missing rule book is reported as a rule book, for every subcommand that reads one and for CASEFILE_RULES", async () => {
    for (const sub of [["list"], ["history"], ["confirm", "rule-1"], ["edit", "rule-1", "--statement", "t"], ["delete", "rule-1"]]) {
      const r = await cli(["rules", book, ...sub]);
      assert.equal(r.code, 3, `rules ${sub[0]}: ${r.out}`);
      assert.equal(
        r.err,
        `casefile: NOT_A_CASE_FILE: no rule book at ${book}; \`casefile rules ${book} add --statement TEXT\` makes one`,
        `rules ${sub[0]}`,
      );
    }
    const workflow = path.join(dir, "signoff.ts");
    writeFileSync(workflow, signoffWorkflow());
    const run = await cli(["run", workflow, "--case-file", path.join(dir, "x.casefile")], { USER: "tester", CASEFILE_RULES: book });
    assert.equal(run.code, 3, run.out);
    assert.match(run.err, new RegExp(`^casefile: NOT_A_CASE_FILE: no rule book at ${book} \\(named by CASEFILE_RULES\\)`));
    assert.deepEqual(
      readdirSync(dir).filter((f) => f.startsWith("book")),
      [],
      "no refusal made a book",
    );
  });

  it("confirming a confirmed rule again is refused naming who and when, until its statement or value changes", async () => {
    const id = /added (rule-[0-9a-f]+)/.exec(
      (await cli(["rules", book, "add", "--statement", "s", "--value", "40", "--by", "li"])).out,
    )![1]!;
    assert.equal((await cli(["rules", book, "confirm", id, "--by", "maria"])).code, 0, "first confirmation");
    const [confirmed] = await rulesOf();

    for (const by of ["maria", "ann"]) {
      const again = await cli(["rules", book, "confirm", id, "--by", by]);
      assert.equal(again.code, 3, `${by} confirming again: ${again.out}`);
      assert.equal(
        again.err,
        `casefile: RULE_CONFIRMED: rule "${id}" is already confirmed by maria at ${confirmed!.confirmedAt}, and its statement and value have not changed since; nothing to confirm`,
      );
    }
    // A new expiry keeps the confirmation, so it is still refused.
    assert.equal((await cli(["rules", book, "edit", id, "--expires", "2099-01-01", "--by", "li"])).code, 0);
    assert.equal((await cli(["rules", book, "confirm", id, "--by", "ann"])).code, 3, "an expiry-only edit keeps it confirmed");
    const [kept] = await rulesOf();
    assert.deepEqual([kept!.confirmedBy, kept!.confirmedAt], ["maria", confirmed!.confirmedAt], "the refusals re-stamped nothing");

    // A new value withdraws the confirmation: confirming it is allowed again.
    assert.equal((await cli(["rules", book, "edit", id, "--value", "48", "--by", "li"])).code, 0);
    const reconfirmed = await cli(["rules", book, "confirm", id, "--by", "ann"]);
    assert.equal(reconfirmed.code, 0, reconfirmed.err);
    const [now] = await rulesOf();
    assert.equal(now!.confirmedBy, "ann", "the changed rule is confirmed by who confirmed the change");
    const history = await cli(["rules", book, "history", id]);
    assert.deepEqual(
      history.out.split("\n").map((l) => l.split("  ")[2]!.split(":")[0]),
      ["added by li", "confirmed by maria", "edited by li", "edited by li", "confirmed by ann"],
      "the history holds no refused confirmation",
    );
  });
});
