/**
 * A BPE rank table in one flat binary form that is ready to use as soon as its bytes are read:
 * no JSON to parse and no 200,000-entry Map to build. gpt-tokenizer keeps an encoding's ranks as
 * an array of strings (or byte arrays, for tokens that are not valid UTF-8) and builds a Map
 * from it on first use; in a CLI run with a model step that cost more than everything else the
 * run did (about 120 ms of JSON.parse and Map inserts, and the garbage collection after).
 *
 * esbuild.mjs writes each encoding's table beside the bundles (dist/<encoding>.ranks) from the
 * installed package's own ranks; src/engine/tokens.ts reads it, or builds it in memory from the
 * package when there is no file (running from source). The layout, all little-endian words:
 *
 *   header   4 x u32: MAGIC, FORMAT, rank count n, log2 of the slot count
 *   offsets  (n + 1) x u32: rank r's bytes are bytes[offsets[r] .. offsets[r + 1])
 *   slots    2^k x u32: an open-addressing hash table (FNV-1a, linear probing); 0 empty, else rank + 1
 *   bytes    every token's bytes, in rank order
 */

const MAGIC = 0x4b524643; // "CFRK"
/** Bumped when the layout changes: a table of another format (or byte order) is not read. */
const FORMAT = 1;
const HEADER_WORDS = 4;

/** A rank as gpt-tokenizer's bpeRanks modules give it: the token's text, or its bytes when they are not UTF-8. */
export type RankEntry = string | readonly number[] | undefined;

function fnv1a(bytes: Uint8Array, start: number, end: number): number {
  let h = 0x811c9dc5;
  for (let i = start; i < end; i++) h = Math.imul(h ^ bytes[i]!, 0x01000193);
  return h >>> 0;
}

/** Builds the binary table from an encoding's ranks (index = rank; holes are unused ranks). */
export function buildRankTable(ranks: readonly RankEntry[]): Uint8Array {
  const encoder = new TextEncoder();
  const tokens = ranks.map((r) => (r === undefined ? new Uint8Array(0) : typeof r === "string" ? encoder.encode(r) : Uint8Array.from(r)));
  const n = tokens.length;
  let bits = 1;
  while (1 << bits < n * 2) bits++;
  const byteLength = tokens.reduce((sum, t) => sum + t.length, 0);
  const words = HEADER_WORDS + n + 1 + (1 << bits);
  const out = new Uint8Array(words * 4 + byteLength);
  const view = new Uint32Array(out.buffer, 0, words);
  view.set([MAGIC, FORMAT, n, bits]);
  const offsets = view.subarray(HEADER_WORDS, HEADER_WORDS + n + 1);
  const slots = view.subarray(HEADER_WORDS + n + 1);
  const bytes = out.subarray(words * 4);
  const mask = (1 << bits) - 1;
  let at = 0;
  tokens.forEach((t, rank) => {
    offsets[rank] = at;
    bytes.set(t, at);
    at += t.length;
    if (t.length === 0) return;
    let slot = fnv1a(t, 0, t.length) & mask;
    while (slots[slot] !== 0) slot = (slot + 1) & mask;
    slots[slot] = rank + 1;
  });
  offsets[n] = at;
  return out;
}

/** Rank lookups over a table built by buildRankTable, reading it where it lies. */
export class RankTable {
  private readonly offsets: Uint32Array;
  private readonly slots: Uint32Array;
  private readonly bytes: Uint8Array;
  private readonly mask: number;
  private readonly encoder = new TextEncoder();
  private scratch = new Uint8Array(256);

  /** Returns undefined for bytes that are not a table of this format (another version or byte order, or truncated). */
  static from(data: Uint8Array): RankTable | undefined {
    if (data.byteLength < HEADER_WORDS * 4) return undefined;
    // Uint32Array needs 4-byte alignment; a small file read may sit at any offset of a pooled buffer.
    const aligned = data.byteOffset % 4 === 0 ? data : data.slice();
    const [magic, format, n, bits] = new Uint32Array(aligned.buffer, aligned.byteOffset, HEADER_WORDS);
    if (magic !== MAGIC || format !== FORMAT || bits! > 30) return undefined;
    const words = HEADER_WORDS + n! + 1 + 2 ** bits!;
    if (aligned.byteLength < words * 4) return undefined;
    const view = new Uint32Array(aligned.buffer, aligned.byteOffset, words);
    const bytes = aligned.subarray(words * 4);
    if (bytes.byteLength !== view[HEADER_WORDS + n!]) return undefined;
    return new RankTable(view, n!, bits!, bytes);
  }

  private constructor(view: Uint32Array, n: number, bits: number, bytes: Uint8Array) {
    this.offsets = view.subarray(HEADER_WORDS, HEADER_WORDS + n + 1);
    this.slots = view.subarray(HEADER_WORDS + n + 1);
    this.bytes = bytes;
    this.mask = (1 << bits) - 1;
  }

  /** The rank of a token given by its bytes, or undefined when it is not one. */
  rankOfBytes(key: Uint8Array): number | undefined {
    return this.lookup(key, key.length);
  }

  /** The rank of a token given by its text (its UTF-8 bytes), or undefined when it is not one. */
  rankOfString(key: string): number | undefined {
    if (this.scratch.length < key.length * 3) this.scratch = new Uint8Array(key.length * 3);
    const { written } = this.encoder.encodeInto(key, this.scratch);
    return this.lookup(this.scratch, written);
  }

  private lookup(key: Uint8Array, length: number): number | undefined {
    const { offsets, slots, bytes, mask } = this;
    for (let slot = fnv1a(key, 0, length) & mask; ; slot = (slot + 1) & mask) {
      const entry = slots[slot]!;
      if (entry === 0) return undefined;
      const start = offsets[entry - 1]!;
      if (offsets[entry]! - start !== length) continue;
      let i = 0;
      while (i < length && bytes[start + i] === key[i]) i++;
      if (i === length) return entry - 1;
    }
  }
}
