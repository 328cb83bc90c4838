import assert from "node:assert/strict";
import { buildRankTable, RankTable, type RankEntry } from "../../../src/engine/rankTable";

/**
 * The compact rank table (src/engine/rankTable.ts) the tokenizer counts with: every rank of the
 * package's own table is found again by its text and by its bytes, nothing else is, and bytes
 * that are not a table of this format are not read as one.
 */
describe("rank table", () => {
  for (const name of ["o200k_base", "cl100k_base"]) {
    it(`finds every one of ${name}'s ranks by its bytes, and its text ones by their text`, () => {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const ranks = (require(`gpt-tokenizer/cjs/bpeRanks/${name}`) as { default: RankEntry[] }).default;
      const table = RankTable.from(buildRankTable(ranks));
      assert.ok(table, "the table built is read back");
      const encoder = new TextEncoder();
      let binary = 0;
      ranks.forEach((r, rank) => {
        if (r === undefined) return;
        const bytes = typeof r === "string" ? encoder.encode(r) : Uint8Array.from(r);
        assert.equal(table.rankOfBytes(bytes), rank, `rank ${rank} by its bytes`);
        if (typeof r === "string") assert.equal(table.rankOfString(r), rank, `rank ${rank} by its text`);
        else binary++;
      });
      assert.ok(binary > 0, `${name} has tokens that are not UTF-8 (${binary}), looked up by bytes`);
      assert.equal(table.rankOfString("not one token, surely: Müller GmbH 4471"), undefined, "a long text is no token");
      assert.equal(table.rankOfBytes(Uint8Array.of(0xff, 0xfe, 0xfd, 0xfc, 0xfb)), undefined, "bytes that are no token");
    });
  }

  it("gives undefined for a hole (an unused rank) and finds the ranks around it", () => {
    const table = RankTable.from(buildRankTable(["a", undefined, "bc", [0xc3]]))!;
    assert.equal(table.rankOfString("a"), 0, "rank 0");
    assert.equal(table.rankOfString("bc"), 2, "rank 2 after the hole");
    assert.equal(table.rankOfBytes(Uint8Array.of(0xc3)), 3, "a byte token");
    assert.equal(table.rankOfString(""), undefined, "the hole is not the empty string");
  });

  it("refuses bytes that are not a whole table of this format", () => {
    const good = buildRankTable(["a", "b"]);
    assert.ok(RankTable.from(good), "the table as built is read");
    assert.equal(RankTable.from(good.subarray(0, good.length - 1)), undefined, "a truncated table is refused");
    const other = good.slice();
    other[4] = 99; // the format word
    assert.equal(RankTable.from(other), undefined, "another format (or byte order) is refused");
    assert.equal(RankTable.from(new TextEncoder().encode("module.exports = [];")), undefined, "a text file is refused");
    // A table read at an offset that is not a multiple of 4 (a pooled buffer) still reads.
    const shifted = new Uint8Array(good.length + 1);
    shifted.set(good, 1);
    assert.equal(RankTable.from(shifted.subarray(1))?.rankOfString("b"), 1, "a table at an unaligned offset");
  });
});
