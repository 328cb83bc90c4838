import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import path from "node:path";
import { z } from "zod";
import { buildModelRequest, requestHash } from "../../../src/engine/contextRequest";
import { isCasefileError } from "../../../src/engine/errors";
import type { BuildModelRequestInput } from "../../../src/engine/contextRequest";

const repoRoot = path.resolve(__dirname, "../../..");

const proposal = z.object({
  action: z.enum(["approve", "hold", "escalate"]),
  reason: z.string(),
  facts: z.array(z.string()),
});

function input(overrides: Partial<BuildModelRequestInput> = {}): BuildModelRequestInput {
  return {
    step: "classify",
    messages: [
      { role: "system", content: "Decide what to do with the invoice." },
      { role: "user", content: "Facts: invoice.total = 1200 (erp, v7)" },
    ],
    model: "gpt-4o-mini",
    params: { temperature: 0, seed: 7 },
    responseSchema: proposal,
    callIndex: 0,
    ...overrides,
  };
}

describe("buildModelRequest", () => {
  it("carries the step, call index, messages, model, params and the JSON Schema of the proposal", () => {
    const r = buildModelRequest(input({ callIndex: 2 }));
    assert.equal(r.step, "classify");
    assert.equal(r.callIndex, 2);
    assert.equal(r.model, "gpt-4o-mini");
    assert.deepEqual(r.params, { temperature: 0, seed: 7 });
    assert.equal(r.messages.length, 2);
    const schema = r.responseSchema as Record<string, unknown>;
    assert.equal(schema.type, "object");
    assert.equal(schema.additionalProperties, false);
    assert.deepEqual(schema.required, ["action", "reason", "facts"]);
    assert.match(r.hash, /^sha256:[0-9a-f]{64}$/);
  });

  it("gives the same hash for the same input, and the recorded pieces hash to it", () => {
    const a = buildModelRequest(input());
    const b = buildModelRequest(input({ callIndex: 5 }));
    assert.equal(a.hash, b.hash, "the call index is not part of the context");
    assert.equal(requestHash(a), a.hash);
  });

  it("ignores key order in params and in the schema", () => {
    const a = buildModelRequest(input({ params: { temperature: 0, seed: 7, extra: { b: 1, a: 2 } } }));
    const b = buildModelRequest(input({ params: { extra: { a: 2, b: 1 }, seed: 7, temperature: 0 } }));
    assert.equal(a.hash, b.hash);
    // The same JSON Schema with its keys in another order, as a recorded request read back.
    const reversed = (v: unknown): unknown =>
      v && typeof v === "object" && !Array.isArray(v)
        ? Object.fromEntries(
            Object.entries(v)
              .reverse()
              .map(([k, x]) => [k, reversed(x)]),
          )
        : v;
    const c = { ...a, responseSchema: reversed(a.responseSchema) as typeof a.responseSchema };
    assert.notEqual(JSON.stringify(c.responseSchema), JSON.stringify(a.responseSchema));
    assert.equal(requestHash(c), a.hash);
  });

  it("changes the hash when any part changes", () => {
    const base = buildModelRequest(input()).hash;
    const variants: Partial<BuildModelRequestInput>[] = [
      {
        messages: [
          { role: "system", content: "Decide what to do with the invoice." },
          { role: "user", content: "Facts: invoice.total = 1201 (erp, v7)" },
        ],
      },
      {
        messages: [
          { role: "user", content: "Decide what to do with the invoice." },
          { role: "user", content: "Facts: invoice.total = 1200 (erp, v7)" },
        ],
      },
      {
        messages: [
          { role: "user", content: "Facts: invoice.total = 1200 (erp, v7)" },
          { role: "system", content: "Decide what to do with the invoice." },
        ],
      },
      { model: "gpt-4o" },
      { params: { temperature: 0.2, seed: 7 } },
      { params: { temperature: 0 } },
      { responseSchema: proposal.extend({ amount: z.number() }) },
      {
        responseSchema: z.object({
          action: z.enum(["approve", "hold"]),
          reason: z.string(),
          facts: z.array(z.string()),
        }),
      },
    ];
    const hashes = new Set([base]);
    for (const v of variants) hashes.add(buildModelRequest(input(v)).hash);
    assert.equal(hashes.size, variants.length + 1);
  });

  it("gives the same hash in another process, run after run (pinned value)", () => {
    const script = `
      const { z } = require("zod");
      const { buildModelRequest } = require("./src/engine/contextRequest.ts");
      const r = buildModelRequest({
        step: "other-name", callIndex: 9, model: "gpt-4o-mini",
        params: { seed: 7, temperature: 0 },
        messages: [{ role: "system", content: "Decide what to do with the invoice." }, { role: "user", content: "Facts: invoice.total = 1200 (erp, v7)" }],
        responseSchema: z.object({ action: z.enum(["approve", "hold", "escalate"]), reason: z.string(), facts: z.array(z.string()) }),
      });
      process.stdout.write(r.hash);`;
    const other = execFileSync(process.execPath, ["-r", "tsx/cjs", "-e", script], { cwd: repoRoot, encoding: "utf8" });
    const here = buildModelRequest(input()).hash;
    assert.equal(other, here);
    // Pinned: a change here means every recorded hash stops matching, so it must be deliberate.
    assert.equal(here, PINNED_HASH);
  });

  it("copies its input: mutating the caller's objects later does not change the request", () => {
    const params = { temperature: 0, nested: { a: 1 } };
    const messages = [{ role: "user" as const, content: "hi" }];
    const r = buildModelRequest(input({ params, messages }));
    params.nested.a = 2;
    messages[0]!.content = "changed";
    assert.deepEqual(r.params, { temperature: 0, nested: { a: 1 } });
    assert.equal(r.messages[0]!.content, "hi");
    assert.equal(requestHash(r), r.hash);
  });

  it("refuses params JSON would silently alter, naming the step and the path", () => {
    assert.throws(
      () => buildModelRequest(input({ params: { temperature: Number.NaN } })),
      (e: unknown) => isCasefileError(e) && e.code === "INVALID_WORKFLOW" && /step "classify": params\.temperature is NaN/.test(e.message),
    );
    assert.throws(
      () => buildModelRequest(input({ params: { when: new Date(0) as unknown as string } })),
      /params\.when is a Date instance/,
    );
  });

  it("refuses a bad message role, an empty model and a schema JSON Schema cannot express", () => {
    assert.throws(
      () => buildModelRequest(input({ messages: [{ role: "tool" as "user", content: "x" }] })),
      /step "classify": context message 0 has role "tool"/,
    );
    assert.throws(() => buildModelRequest(input({ model: "" })), /step "classify": no model/);
    assert.throws(
      () => buildModelRequest(input({ responseSchema: z.object({ at: z.date() }) })),
      (e: unknown) =>
        isCasefileError(e) && e.code === "INVALID_WORKFLOW" && /step "classify": the response schema cannot be expressed/.test(e.message),
    );
  });
});

const PINNED_HASH = "sha256:e456ddc8ea7c123cc6eede3524f1b56725a506c9e1fcc479d19964ecb34360b5";
