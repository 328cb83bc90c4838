import assert from "node:assert/strict";
import { buildRankTable, RankTable } from "../../../src/engine/rankTable";

/**
 * The edges of reading a rank table file (dist/<encoding>.ranks) that the tokenizer would
 * otherwise trust: too short for a header, a header claiming more slots than any table has, bytes
 * left over after the tokens; and a token longer than the lookup's first scratch buffer. Each
 * names the slip in rankTable.ts it catches (a refused file would silently fall back to the
 * package's ranks; an accepted bad one would count wrong).
 */
describe("rank table: files that are not a table, and long tokens", () => {
  it("bytes too short to hold a header are not a table (not a RangeError)", () => {
    for (const n of [0, 3, 15]) assert.equal(RankTable.from(new Uint8Array(n)), undefined, `${n} bytes`);
  });

  it("a header claiming 2^31 slots is refused before anything is read", () => {
    const t = buildRankTable(["a", "b"]);
    const words = new Uint32Array(t.buffer, t.byteOffset, 4);
    words[3] = 31;
    assert.equal(RankTable.from(t), undefined, "log2 of the slot count above 30");
  });

  it("a table with a byte more or less after its tokens is refused", () => {
    const t = buildRankTable(["ab", "c"]);
    const longer = new Uint8Array(t.length + 1);
    longer.set(t);
    assert.equal(RankTable.from(longer), undefined, "one byte too many");
    assert.equal(RankTable.from(t.subarray(0, t.length - 1)), undefined, "one byte too few");
  });

  it("a header claiming more ranks than the file holds is refused", () => {
    const t = buildRankTable(["ab", "c"]);
    const words = new Uint32Array(t.buffer, t.byteOffset, 4);
    words[2] = 1000;
    assert.equal(RankTable.from(t), undefined, "rank count past the end of the file");
  });

  it("finds a token of 200 characters by its text (past the first 256-byte scratch buffer), and its prefix is no token", () => {
    const long = "x".repeat(99) + "é".repeat(101); // 99 + 202 bytes
    const table = RankTable.from(buildRankTable(["a", long, "b"]))!;
    assert.equal(table.rankOfString(long), 1, "the long token by its text");
    assert.equal(table.rankOfString(long.slice(0, 150)), undefined, "its first 150 characters are no token");
    assert.equal(table.rankOfString("b"), 2, "a short lookup after the scratch grew");
    assert.equal(table.rankOfBytes(new TextEncoder().encode(long)), 1, "the long token by its bytes");
  });

  it("has the fewest slots that keep the table at most half full: 2n slots when 2n is a power of two, not twice that", () => {
    // kills rankTable.ts:38 EqualityOperator (`1 << bits < n * 2` as `<=`): a table of 2^k ranks doubled its slots, and its file
    const slotBits = (n: number) => {
      const t = buildRankTable(Array.from({ length: n }, (_, i) => `t${i}`));
      return new Uint32Array(t.buffer, t.byteOffset, 4)[3];
    };
    assert.deepEqual(
      [1, 2, 3, 4, 5, 8, 1024].map((n) => [n, slotBits(n)]),
      [
        [1, 1],
        [2, 2],
        [3, 3],
        [4, 3],
        [5, 4],
        [8, 4],
        [1024, 11],
      ],
      "log2 of the slot count for n ranks",
    );
    const two = buildRankTable(["a", "b"]);
    assert.equal(two.byteLength, (4 + 3 + 4) * 4 + 2, "header, 3 offsets, 4 slots and 2 bytes");
    assert.equal(RankTable.from(two)!.rankOfString("b"), 1, "and it is read back");
  });

  it("with more tokens than slots would hold at half load, every one is still found (linear probing wraps around)", () => {
    const tokens = Array.from({ length: 3000 }, (_, i) => `t${i}`);
    const table = RankTable.from(buildRankTable(tokens))!;
    const missing = tokens.filter((t, i) => table.rankOfString(t) !== i);
    assert.deepEqual(missing, [], "every token found at its rank");
    assert.equal(table.rankOfString("t3000"), undefined, "one more is none");
  });
});
