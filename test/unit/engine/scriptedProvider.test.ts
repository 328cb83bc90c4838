import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { isCasefileError } from "../../../src/engine/errors";
import type { ModelRequest } from "../../../src/engine/model";
import { ScriptedProvider } from "../../../src/engine/providers/scripted";

const hashA = "sha256:" + "a".repeat(64);
const hashB = "sha256:" + "b".repeat(64);

function request(step: string, hash: string, callIndex = 0): ModelRequest {
  return {
    step,
    hash,
    callIndex,
    messages: [{ role: "user", content: "x" }],
    model: "gpt-4o-mini",
    params: {},
    responseSchema: {},
  };
}

describe("ScriptedProvider", () => {
  let dir: string;
  const write = (name: string, content: unknown): string => {
    const file = path.join(dir, name);
    writeFileSync(file, typeof content === "string" ? content : JSON.stringify(content, null, 2));
    return file;
  };

  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), "casefile-scripted-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("matches by step and hash before call index and the catch-all", async () => {
    const file = write("wf.responses.json", {
      responses: [
        { step: "classify", response: "catch-all" },
        { step: "classify", call: 0, response: "by call" },
        {
          step: "classify",
          hash: hashA,
          response: { action: "approve", reason: "by hash" },
          usage: { promptTokens: 10, completionTokens: 4 },
        },
        { step: "other", hash: hashB, response: "other step" },
      ],
    });
    const p = new ScriptedProvider(file);
    const r = await p.complete(request("classify", hashA));
    assert.equal(r.text, '{"action":"approve","reason":"by hash"}');
    assert.deepEqual(r.usage, { promptTokens: 10, completionTokens: 4 });
    assert.deepEqual(r.meta, { fixture: file, entry: 2, matchedBy: "hash" });
    assert.equal(p.name, "scripted");
  });

  it("matches by step and call index when no hash matches", async () => {
    const file = write("f.json", {
      responses: [
        { step: "classify", response: "catch-all" },
        { step: "classify", call: 1, response: "second call" },
        { step: "classify", call: 0, response: "first call" },
        { step: "classify", hash: hashB, response: "other context" },
      ],
    });
    const p = new ScriptedProvider(file);
    assert.equal((await p.complete(request("classify", hashA, 0))).text, "first call");
    const second = await p.complete(request("classify", hashA, 1));
    assert.equal(second.text, "second call");
    assert.equal(second.meta?.matchedBy, "call");
    assert.equal(second.usage, undefined);
  });

  it("falls back to the step's entry with neither hash nor call", async () => {
    const file = write("f.json", {
      responses: [
        { step: "classify", call: 0, response: "first call" },
        { step: "classify", response: ["a", 1] },
      ],
    });
    const r = await new ScriptedProvider(file).complete(request("classify", hashA, 3));
    assert.equal(r.text, '["a",1]');
    assert.equal(r.meta?.matchedBy, "step");
  });

  it("needs both to match when an entry names a hash and a call", async () => {
    const file = write("f.json", { responses: [{ step: "classify", hash: hashA, call: 1, response: "pinned" }] });
    const p = new ScriptedProvider(file);
    assert.equal((await p.complete(request("classify", hashA, 1))).text, "pinned");
    await assert.rejects(p.complete(request("classify", hashA, 0)), (e: Error & { code?: string }) => {
      assert.equal(e.code, "MODEL_RESPONSE_MISSING", e.message);
      assert.match(e.message, /^no scripted response for step "classify" with hash sha256:a+ \(call 0\)/);
      return true;
    });
  });

  it("reports a missing response as MODEL_RESPONSE_MISSING naming the step, the hash and what the fixture has", async () => {
    const file = write("f.json", {
      responses: [
        { step: "classify", hash: hashB, response: "x" },
        { step: "classify", call: 4, response: "y" },
      ],
    });
    await assert.rejects(new ScriptedProvider(file).complete(request("classify", hashA, 1)), (e: unknown) => {
      assert.ok(isCasefileError(e), "expected: isCasefileError(e)");
      assert.equal(e.code, "MODEL_RESPONSE_MISSING");
      assert.match(e.message, /step "classify"/);
      assert.ok(e.message.includes(hashA), e.message);
      assert.ok(e.message.includes(file), e.message);
      assert.match(e.message, /2 entries for this step, keyed by sha256:b+, call 4/);
      assert.deepEqual(e.details, { step: "classify", hash: hashA, callIndex: 1, fixture: file });
      return true;
    });
  });

  it("says when the fixture has no entry for the step at all", async () => {
    const file = write("f.json", { responses: [] });
    await assert.rejects(new ScriptedProvider(file).complete(request("review", hashA)), /step "review".*no entry for this step/s);
  });

  it("reports a missing fixture file as a missing response naming the file, step and hash", async () => {
    const file = path.join(dir, "absent.responses.json");
    await assert.rejects(new ScriptedProvider(file).complete(request("classify", hashA)), (e: unknown) => {
      assert.ok(isCasefileError(e), "expected: isCasefileError(e)");
      assert.equal(e.code, "MODEL_RESPONSE_MISSING");
      assert.ok(e.message.includes(file) && e.message.includes(hashA) && e.message.includes('"classify"'), e.message);
      assert.match(e.message, /does not exist/);
      return true;
    });
  });

  it("rejects a bad fixture naming the file and the path of each bad field", async () => {
    const file = write("bad.json", {
      responses: [
        { step: "classify", response: "ok" },
        { step: "classify", hash: "md5:abc", response: "x" },
        { step: "", call: -1, response: 3 },
        // A hash with something before it (the regex is anchored at both ends).
        { step: "classify", hash: "x" + hashA, response: "y" },
        { step: "classify", hash: hashA + "0", response: "z" },
      ],
    });
    await assert.rejects(new ScriptedProvider(file).complete(request("classify", hashA)), (e: unknown) => {
      assert.ok(isCasefileError(e), "expected: isCasefileError(e)");
      assert.equal(e.code, "INVALID_INPUT");
      assert.ok(e.message.includes(file), e.message);
      assert.match(e.message, /responses\[1\]\.hash: expected sha256:/);
      assert.match(e.message, /responses\[2\]\.step/);
      assert.match(e.message, /responses\[2\]\.call/);
      assert.match(e.message, /responses\[2\]\.response/);
      assert.match(e.message, /responses\[3\]\.hash: expected sha256:/);
      assert.match(e.message, /responses\[4\]\.hash: expected sha256:/);
      return true;
    });
  });

  it("rejects a fixture that is not JSON, naming the file", async () => {
    const file = write("broken.json", '{ "responses": [ ');
    await assert.rejects(new ScriptedProvider(file).complete(request("classify", hashA)), (e: unknown) => {
      assert.ok(isCasefileError(e) && e.code === "INVALID_INPUT", 'expected: isCasefileError(e) && e.code === "INVALID_INPUT"');
      assert.ok(e.message.includes(file) && /not valid JSON/.test(e.message), e.message);
      return true;
    });
  });

  it("refuses an already aborted call", async () => {
    const file = write("f.json", { responses: [{ step: "classify", response: "x" }] });
    const ac = new AbortController();
    ac.abort();
    await assert.rejects(
      new ScriptedProvider(file).complete(request("classify", hashA), ac.signal),
      /step "classify": the call was aborted/,
    );
  });
});
