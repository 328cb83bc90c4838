import { readFileSync } from "node:fs";
import { z } from "zod";
import { JsonSchema } from "../../protocol/jsonSchema";
import { CasefileError, errorMessage, fileError, isErrnoError } from "../errors";
import type { ModelProvider, ModelRequest, ModelResponse } from "../model";
import type { Json } from "../records";

/**
 * The offline provider: answers come from a fixture file instead of a model. It is the default
 * for the demo and the tests. (`casefile eval` answers with an eval case's recorded text through
 * FixedProvider, which needs no file.)
 *
 * Fixture file:
 *   { "responses": [ { "step": "classify", "hash"?: "sha256:…", "call"?: 0,
 *                      "response": "text" | { …json… }, "usage"?: { "promptTokens": 12 } } ] }
 *
 * For a request, the first entry of the step found in this order answers it:
 *   1. an entry whose `hash` equals the request's context hash (and whose `call`, if given, matches);
 *   2. an entry without a hash whose `call` equals the request's call index;
 *   3. an entry with neither (the step's catch-all).
 * So a fixture can pin an answer to one exact context, to the n-th call of a step, or to the step.
 */

const json: z.ZodType<Json> = JsonSchema;

export const ScriptedEntrySchema = z
  .object({
    step: z.string().min(1),
    hash: z
      .string()
      .regex(/^sha256:[0-9a-f]{64}$/, "expected sha256: followed by 64 hex digits")
      .optional(),
    call: z.number().int().nonnegative().optional(),
    response: z.union([z.string(), z.record(z.string(), json), z.array(json)]),
    usage: z
      .object({
        promptTokens: z.number().int().nonnegative().optional(),
        completionTokens: z.number().int().nonnegative().optional(),
        totalTokens: z.number().int().nonnegative().optional(),
      })
      .strict()
      .optional(),
  })
  .strict();

export const ScriptedFixtureSchema = z.object({ responses: z.array(ScriptedEntrySchema) }).strict();
export type ScriptedFixture = z.infer<typeof ScriptedFixtureSchema>;
export type ScriptedEntry = z.infer<typeof ScriptedEntrySchema>;

/**
 * Parses fixture text. `file` is only used in messages: a fault names the file and the JSON path
 * of the offending field (e.g. `responses[2].hash`).
 */
export function parseFixture(text: string, file: string): ScriptedFixture {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw new CasefileError("INVALID_INPUT", `scripted fixture ${file} is not valid JSON: ${errorMessage(e)}`, {
      file,
    });
  }
  const parsed = ScriptedFixtureSchema.safeParse(raw);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${formatPath(i.path)}: ${i.message}`);
    throw new CasefileError("INVALID_INPUT", `scripted fixture ${file} is invalid:\n` + problems.map((p) => `  - ${p}`).join("\n"), {
      file,
      problems,
    });
  }
  return parsed.data;
}

function formatPath(path: readonly PropertyKey[]): string {
  if (path.length === 0) return "(root)";
  return path.map((p, i) => (typeof p === "number" ? `[${p}]` : i === 0 ? String(p) : `.${String(p)}`)).join("");
}

type MatchedBy = "hash" | "call" | "step";

export class ScriptedProvider implements ModelProvider {
  readonly name = "scripted";
  private fixture: ScriptedFixture | undefined;

  /**
   * The file is read at the first call, not here: a workflow without agent steps runs with the
   * scripted default even when no fixture file exists beside it.
   */
  constructor(readonly fixturePath: string) {}

  /** Called by the agent step for each model call. */
  async complete(request: ModelRequest, signal?: AbortSignal): Promise<ModelResponse> {
    if (signal?.aborted) {
      throw new CasefileError("MODEL_CALL_FAILED", `step "${request.step}": the call was aborted`, {
        step: request.step,
      });
    }
    const fixture = this.load(request);
    const found = findEntry(fixture.responses, request);
    if (!found) throw this.missing(request, fixture);
    const { entry, index, matchedBy } = found;
    const text = typeof entry.response === "string" ? entry.response : JSON.stringify(entry.response);
    const meta: Record<string, Json> = { fixture: this.fixturePath, entry: index, matchedBy };
    return entry.usage ? { text, usage: entry.usage, meta } : { text, meta };
  }

  private load(request: ModelRequest): ScriptedFixture {
    if (this.fixture) return this.fixture;
    let text: string;
    try {
      text = readFileSync(this.fixturePath, "utf8");
    } catch (e) {
      const why =
        (e as NodeJS.ErrnoException).code === "ENOENT"
          ? `fixture ${this.fixturePath} does not exist`
          : isErrnoError(e)
            ? fileError(e, "read the fixture", this.fixturePath).message
            : `fixture ${this.fixturePath}: ${errorMessage(e)}`;
      throw new CasefileError("MODEL_RESPONSE_MISSING", `no scripted response for step "${request.step}" (hash ${request.hash}): ${why}`, {
        step: request.step,
        hash: request.hash,
        callIndex: request.callIndex,
        fixture: this.fixturePath,
      });
    }
    this.fixture = parseFixture(text, this.fixturePath);
    return this.fixture;
  }

  private missing(request: ModelRequest, fixture: ScriptedFixture): CasefileError {
    const forStep = fixture.responses.filter((e) => e.step === request.step);
    const known =
      forStep.length === 0
        ? "the fixture has no entry for this step"
        : `the fixture has ${forStep.length} entr${forStep.length === 1 ? "y" : "ies"} for this step, keyed by ` +
          forStep.map((e) => (e.hash ? e.hash + (e.call !== undefined ? ` call ${e.call}` : "") : `call ${e.call}`)).join(", ");
    return new CasefileError(
      "MODEL_RESPONSE_MISSING",
      `no scripted response for step "${request.step}" with hash ${request.hash} (call ${request.callIndex}) in ${this.fixturePath}; ` +
        `${known}. Add { "step": "${request.step}", "hash": "${request.hash}", "response": … } to answer this context.`,
      { step: request.step, hash: request.hash, callIndex: request.callIndex, fixture: this.fixturePath },
    );
  }
}

/** The matching rule described at the top of this file. */
export function findEntry(
  entries: readonly ScriptedEntry[],
  request: Pick<ModelRequest, "step" | "hash" | "callIndex">,
): { entry: ScriptedEntry; index: number; matchedBy: MatchedBy } | undefined {
  const tiers: [MatchedBy, (e: ScriptedEntry) => boolean][] = [
    ["hash", (e) => e.hash === request.hash && (e.call === undefined || e.call === request.callIndex)],
    ["call", (e) => e.hash === undefined && e.call === request.callIndex],
    ["step", (e) => e.hash === undefined && e.call === undefined],
  ];
  for (const [matchedBy, matches] of tiers) {
    const index = entries.findIndex((e) => e.step === request.step && matches(e));
    if (index >= 0) return { entry: entries[index]!, index, matchedBy };
  }
  return undefined;
}
