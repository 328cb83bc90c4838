import { CasefileError } from "../errors";
import type { ModelProvider, ModelRequest, ModelResponse } from "../model";

/**
 * A provider that answers one step with one given text, whatever the request: `casefile eval`
 * uses it to give an eval case's recorded answer back to the agent step, so the current proposal
 * schema and commit rules judge exactly what the model said. A constructor, not a fixture file.
 */
export class FixedProvider implements ModelProvider {
  readonly name = "fixed";

  constructor(
    readonly step: string,
    readonly text: string,
  ) {}

  /** Called by `casefile eval` (or an agent step) once per model call. */
  async complete(request: ModelRequest, signal?: AbortSignal): Promise<ModelResponse> {
    if (signal?.aborted)
      throw new CasefileError("MODEL_CALL_FAILED", `step "${request.step}": the call was aborted`, { step: request.step });
    if (request.step !== this.step)
      throw new CasefileError(
        "MODEL_RESPONSE_MISSING",
        `no fixed response for step "${request.step}" (hash ${request.hash}): this provider answers step "${this.step}" only`,
        { step: request.step, hash: request.hash, callIndex: request.callIndex },
      );
    return { text: this.text, meta: { fixed: this.step } };
  }
}
