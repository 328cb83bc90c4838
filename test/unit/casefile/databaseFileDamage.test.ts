import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { SqlJsStore } from "../../../src/casefile";
import { isCasefileError } from "../../../src/engine/errors";

/**
 * Damage that only SQLite's quick_check finds (databaseFile.ts's loadDatabase): the file opens and
 * its meta row reads, but pages of a table are overwritten. A survivor of the mutation run over
 * databaseFile.ts (issue 18): no test reached the refusal after quick_check.
 */
describe("database file: damage found by quick_check", () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(path.join(os.tmpdir(), "casefile-s18b-qc-"))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  // Kills the refusal after quick_check dropped (made false) and its problems joined without "; ".
  it("pages overwritten in a table are refused at open, listing every problem quick_check found", async function () {
    this.timeout(60_000);
    const file = path.join(dir, "c.casefile");
    const w = await SqlJsStore.open(file, { create: true });
    for (let i = 0; i < 50; i++) w.commit({ values: [{ run: "r1", key: `k${i}`, version: 1, value: "v".repeat(500) }] });
    w.close();
    const pages = statSync(file).size / 4096;
    const messages: string[] = [];
    for (let page = 2; page < pages; page++) {
      const bytes = readFileSync(file);
      bytes.fill(0xab, page * 4096, page * 4096 + 8); // the b-tree page header
      const damaged = path.join(dir, `page${page}.casefile`);
      writeFileSync(damaged, bytes);
      try {
        const r = await SqlJsStore.open(damaged, { readOnly: true });
        r.close();
        messages.push(`page ${page}: opened`);
      } catch (e) {
        assert.ok(isCasefileError(e) && e.code === "CORRUPT_CASE_FILE", `page ${page}: ${String(e)}`);
        messages.push(e.message.replace(damaged, `page${page}`));
      }
    }
    assert.ok(
      messages.some((m) => /^page\d+ is corrupted: \*\*\* in database main \*\*\*\nTree \d+ page \d+: /.test(m)),
      `no damage was reported as quick_check's findings:\n${messages.join("\n")}`,
    );
    assert.ok(
      messages.some((m) => /is corrupted: \*\*\* in database main \*\*\*\n.*; wrong # of entries in index /s.test(m)),
      `no refusal listed several problems, each after "; ":\n${messages.join("\n")}`,
    );
  });
  // kills databaseFile.ts:59 ArrayDeclaration [errorMessage(e)] -> [] (a quick_check that throws would be refused saying nothing)
  it("a page quick_check cannot walk (its b-tree type zeroed) is refused with SQLite's reason", async function () {
    this.timeout(60_000);
    const file = path.join(dir, "c.casefile");
    const w = await SqlJsStore.open(file, { create: true });
    for (let i = 0; i < 50; i++) w.commit({ values: [{ run: "r1", key: `k${i}`, version: 1, value: "v".repeat(500) }] });
    w.close();
    const pages = statSync(file).size / 4096;
    const refusals: string[] = [];
    for (let page = 1; page < pages; page++) {
      const bytes = readFileSync(file);
      bytes[page * 4096] = 0; // the page type: no b-tree page is of type 0
      const damaged = path.join(dir, `page${page}.casefile`);
      writeFileSync(damaged, bytes);
      try {
        (await SqlJsStore.open(damaged, { readOnly: true })).close();
      } catch (e) {
        assert.ok(isCasefileError(e) && e.code === "CORRUPT_CASE_FILE", `page ${page}: ${String(e)}`);
        refusals.push(e.message.replace(damaged, `page${page}`));
      }
    }
    assert.ok(refusals.length > 0, "some zeroed page type is refused");
    for (const m of refusals) assert.match(m, /^page\d+ is corrupted: \S/, `every refusal says what SQLite found: ${JSON.stringify(m)}`);
    assert.ok(
      refusals.some((m) => /^page\d+ is corrupted: database disk image is malformed$/.test(m)),
      `no refusal gave the error quick_check threw:\n${refusals.join("\n")}`,
    );
  });
});
