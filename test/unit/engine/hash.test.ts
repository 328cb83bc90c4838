import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { canonicalJson, stableHash } from "../../../src/engine/hash";

/**
 * The text and fingerprint every recorded request, extract and effect basis is compared by
 * (issue 18: the mutants of hash.ts). Equal values must give equal hashes whatever the order
 * their keys were built in, or a recorded replay misses its answer and an extract is made again
 * for nothing; and the hash is plain sha256 of that text, so a person can recompute it.
 */
describe("stable hashing of JSON values", () => {
  it("writes object keys sorted at every depth, arrays in their own order, and drops undefined members", () => {
    assert.equal(
      canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null }, u: undefined }),
      '{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}',
      "sorted keys inside arrays too; the array keeps its order; no u",
    );
    assert.equal(canonicalJson([2, 1]), "[2,1]", "an array stays an array, not an object of indexes");
    assert.equal(canonicalJson(null), "null", "null is a value, not an object to sort");
    assert.equal(canonicalJson("x"), '"x"', "a string as JSON");
  });

  it("gives values equal but for key order one hash, and different values different hashes", () => {
    const request = { model: "gpt-4o-mini", params: { temperature: 0, seed: 7 }, messages: [{ role: "user", content: "pay?" }] };
    const reordered = { messages: [{ content: "pay?", role: "user" }], params: { seed: 7, temperature: 0 }, model: "gpt-4o-mini" };
    assert.equal(stableHash(reordered), stableHash(request), "key order never changes the hash");
    assert.notEqual(stableHash({ ...request, model: "gpt-4o" }), stableHash(request), "another model, another hash");
    assert.notEqual(stableHash([1, 2]), stableHash([2, 1]), "array order is part of the value");
  });

  it("is sha256 of the canonical text in hex, prefixed with the algorithm", () => {
    const value = { b: [1, null], a: "€" };
    const expected = "sha256:" + createHash("sha256").update('{"a":"€","b":[1,null]}').digest("hex");
    assert.equal(stableHash(value), expected, "what `printf '%s' <canonical JSON> | sha256sum` gives, with the prefix");
  });
});
