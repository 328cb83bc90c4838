import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { openCaseFile } from "../../../src/casefile/index";
import { isCasefileError } from "../../../src/engine/errors";
import { addRule } from "../../../src/engine/rules";

/** A writer that waits for the lock (OpenOptions.waitForLockMs): bounded, and it sees what the holder wrote. */

describe("case file lock: a writer that waits", () => {
  let dir: string;
  let file: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "casefile-lock-wait-"));
    file = path.join(dir, "book.casefile");
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("gets the file once the holder closes it, and reads what the holder committed", async () => {
    const holder = await openCaseFile(file, { create: true });
    setTimeout(() => {
      addRule(holder, { statement: "1 pallet = 40 cartons", value: 40, proposedBy: "li" });
      holder.close();
    }, 150);
    const waiter = await openCaseFile(file, { waitForLockMs: 5000 });
    try {
      assert.deepEqual(
        waiter.listRules().map((r) => r.statement),
        ["1 pallet = 40 cartons"],
        "the waiter sees the holder's commit",
      );
    } finally {
      waiter.close();
    }
  });

  it("gives up after the time it was given, saying it waited; without one it does not wait", async () => {
    const holder = await openCaseFile(file, { create: true });
    try {
      await assert.rejects(
        openCaseFile(file, { waitForLockMs: 200 }),
        (e: unknown) =>
          isCasefileError(e) &&
          e.code === "CASE_FILE_LOCKED" &&
          /is locked by pid \d+ .*\(still locked after waiting 0\.2 s\)$/.test(e.message),
      );
      await assert.rejects(
        openCaseFile(file, {}),
        (e: unknown) => isCasefileError(e) && e.code === "CASE_FILE_LOCKED" && !e.message.includes("waiting"),
      );
    } finally {
      holder.close();
    }
  });
});
