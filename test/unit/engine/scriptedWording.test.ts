import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { isCasefileError } from "../../../src/engine/errors";
import type { ModelRequest } from "../../../src/engine/model";
import { parseFixture, ScriptedProvider } from "../../../src/engine/providers/scripted";

/**
 * The scripted provider's messages word for word, with the details a caller gets, as a person
 * writing a fixture reads them (a missing entry says what the fixture does hold and what to add;
 * an unreadable or bad fixture names the file and each bad field), and that a fixture is read
 * once. Each names the slip in providers/scripted.ts it catches.
 */

const hashA = "sha256:" + "a".repeat(64);
const hashB = "sha256:" + "b".repeat(64);
const request = (step: string, hash = hashA, callIndex = 0): ModelRequest => ({
  step,
  hash,
  callIndex,
  messages: [{ role: "user", content: "x" }],
  model: "gpt-4o-mini",
  params: {},
  responseSchema: {},
});

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), "s18e-scripted-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const write = (name: string, content: unknown): string => {
  const file = path.join(dir, name);
  writeFileSync(file, typeof content === "string" ? content : JSON.stringify(content));
  return file;
};

/** The CasefileError `p` rejects with. */
async function refusal(p: Promise<unknown>): Promise<{ code: string; message: string; details: Record<string, unknown> }> {
  try {
    await p;
  } catch (e) {
    assert.ok(isCasefileError(e), `a CasefileError: ${String(e)}`);
    return { code: e.code, message: e.message, details: e.details };
  }
  throw new Error("not refused");
}

describe("scripted provider: what a fixture's author reads", () => {
  it("no entry for the context: says what the fixture holds for the step (one entry, by call) and what to add", async () => {
    const file = write("f.json", { responses: [{ step: "classify", call: 3, response: "x" }] });
    const r = await refusal(new ScriptedProvider(file).complete(request("classify", hashB, 1)));
    assert.equal(r.code, "MODEL_RESPONSE_MISSING");
    assert.equal(
      r.message,
      `no scripted response for step "classify" with hash ${hashB} (call 1) in ${file}; the fixture has 1 entry for this step, keyed by call 3. ` +
        `Add { "step": "classify", "hash": "${hashB}", "response": … } to answer this context.`,
    );
    assert.deepEqual(r.details, { step: "classify", hash: hashB, callIndex: 1, fixture: file });
  });

  it("entries keyed by a hash alone, by a hash and a call, and no entry at all are each described", async () => {
    const file = write("f.json", {
      responses: [
        { step: "classify", hash: hashA, response: "x" },
        { step: "classify", hash: hashA, call: 2, response: "y" },
        { step: "other", response: "z" },
      ],
    });
    const keyed = await refusal(new ScriptedProvider(file).complete(request("classify", hashB)));
    assert.ok(keyed.message.includes(`the fixture has 2 entries for this step, keyed by ${hashA}, ${hashA} call 2. Add`), keyed.message);
    const none = await refusal(new ScriptedProvider(file).complete(request("review", hashB)));
    assert.ok(none.message.includes(`(call 0) in ${file}; the fixture has no entry for this step. Add`), none.message);
  });

  it("a fixture that does not exist, or is a folder, is a missing response naming the file and why", async () => {
    const absent = path.join(dir, "absent.json");
    const r = await refusal(new ScriptedProvider(absent).complete(request("classify")));
    assert.equal(r.message, `no scripted response for step "classify" (hash ${hashA}): fixture ${absent} does not exist`);
    assert.deepEqual(r.details, { step: "classify", hash: hashA, callIndex: 0, fixture: absent });
    const folder = path.join(dir, "folder.json");
    mkdirSync(folder);
    const f = await refusal(new ScriptedProvider(folder).complete(request("classify")));
    assert.equal(
      f.message,
      `no scripted response for step "classify" (hash ${hashA}): cannot read the fixture ${folder}: it is a directory (EISDIR)`,
    );
  });

  it("a fixture path the file system refuses outright (a NUL in it) is a missing response naming the file and why", async () => {
    // Kills scripted.ts:118 StringLiteral: not an errno error, so the message quotes what Node said.
    const bad = path.join(dir, "bad\0name.json");
    const r = await refusal(new ScriptedProvider(bad).complete(request("classify")));
    assert.equal(r.code, "MODEL_RESPONSE_MISSING");
    const prefix = `no scripted response for step "classify" (hash ${hashA}): fixture ${bad}: `;
    assert.ok(r.message.startsWith(prefix) && r.message.length > prefix.length, r.message);
    assert.match(r.message.slice(prefix.length), /null bytes/);
  });

  it("an entry pinned to another hash does not answer by its call index", async () => {
    // Kills scripted.ts:153 ConditionalExpression: the call tier takes only entries without a hash.
    const file = write("f.json", {
      responses: [
        { step: "classify", hash: hashB, call: 0, response: "for B" },
        { step: "classify", response: "catch-all" },
      ],
    });
    const r = await new ScriptedProvider(file).complete(request("classify", hashA, 0));
    assert.deepEqual([r.text, r.meta?.matchedBy, r.meta?.entry], ["catch-all", "step", 1]);
  });

  it("an answer given as JSON is sent as its text, and the fixture is read once (a later change or removal is not seen)", async () => {
    const file = write("f.json", {
      responses: [
        { step: "classify", response: { action: "approve" } },
        { step: "list", response: [1, 2] },
      ],
    });
    const p = new ScriptedProvider(file);
    assert.equal((await p.complete(request("classify"))).text, '{"action":"approve"}');
    rmSync(file);
    assert.equal((await p.complete(request("list"))).text, "[1,2]", "answered from the fixture read at the first call");
  });

  it("an aborted call is refused naming the step, with the step in the details", async () => {
    const ac = new AbortController();
    ac.abort();
    const r = await refusal(new ScriptedProvider(path.join(dir, "never-read.json")).complete(request("classify"), ac.signal));
    assert.deepEqual([r.code, r.message, r.details], ["MODEL_CALL_FAILED", 'step "classify": the call was aborted', { step: "classify" }]);
  });
});

describe("parseFixture: the bad fixture's message", () => {
  it("lists each problem one a line under the file, by its path ((root) for the whole value)", () => {
    assert.throws(
      () => parseFixture(JSON.stringify([]), "fx.json"),
      (e: unknown) =>
        isCasefileError(e) &&
        e.code === "INVALID_INPUT" &&
        /^scripted fixture fx\.json is invalid:\n {2}- \(root\): /.test(e.message) &&
        (e.details as { file?: string }).file === "fx.json",
    );
    assert.throws(
      () => parseFixture(JSON.stringify({ responses: [{ step: "a", response: "x", usage: { promptTokens: -1 } }] }), "fx.json"),
      (e: unknown) => isCasefileError(e) && /\n {2}- responses\[0\]\.usage\.promptTokens: /.test(e.message),
    );
    // Kills scripted.ts:66 StringLiteral: two problems are two lines, word for word with the details.
    assert.throws(
      () =>
        parseFixture(
          JSON.stringify({
            responses: [
              { step: "", response: "x" },
              { step: "b", call: -1, response: "y" },
            ],
          }),
          "fx.json",
        ),
      (e: unknown) => {
        assert.ok(isCasefileError(e), `a CasefileError: ${String(e)}`);
        const problems = (e.details as { problems: string[] }).problems;
        assert.equal(problems.length, 2, problems.join(" | "));
        assert.match(problems[0]!, /^responses\[0\]\.step: /);
        assert.match(problems[1]!, /^responses\[1\]\.call: /);
        assert.equal(e.message, `scripted fixture fx.json is invalid:\n  - ${problems[0]}\n  - ${problems[1]}`);
        return true;
      },
    );
  });

  it("text that is no JSON names the file and what the parser said", () => {
    assert.throws(
      () => parseFixture("{", "fx.json"),
      (e: unknown) =>
        isCasefileError(e) &&
        e.code === "INVALID_INPUT" &&
        e.message.startsWith("scripted fixture fx.json is not valid JSON: ") &&
        JSON.stringify(e.details) === '{"file":"fx.json"}',
    );
  });
});
