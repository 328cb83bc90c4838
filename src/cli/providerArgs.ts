import type { Json } from "../engine/records";
import { CasefileError } from "../engine/errors";
import { ProviderConfigSchema, type ProviderConfig } from "../protocol/provider";
import { jsonOption, type Io } from "./args";

/**
 * The provider options of the commands that call a model (run, resume, respond, replay, eval,
 * enqueue, experiment). Apart from args.ts, which every command imports: they need the runner
 * protocol's schemas, which the other commands (inspect, --help...) then never build.
 */

/** `--provider JSON`, else $CASEFILE_PROVIDER, parsed with the runner protocol's schema. */
export function providerOption(value: string | undefined, io: Io): ProviderConfig | undefined {
  const raw = jsonOption(value, "provider") ?? jsonOption(io.env.CASEFILE_PROVIDER, "provider (CASEFILE_PROVIDER)");
  if (raw === undefined) return undefined;
  return providerConfigOf(raw, "--provider");
}

/** A provider config given as JSON (`--provider`, an experiment's `--variant`), parsed with the runner protocol's schema; `what` names it in the error. */
export function providerConfigOf(raw: Json, what: string): ProviderConfig {
  const parsed = ProviderConfigSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new CasefileError("USAGE", `${what}: ${issue.message} at "${issue.path.join(".") || "(root)"}"`);
  }
  return parsed.data;
}
