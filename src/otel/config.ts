import { CasefileError } from "../engine/errors";

/**
 * Whether and where a run's trace is sent, from the command's options (`--otel`,
 * `--otel-content`), the editor's settings (casefile.otel.*, passed to the runner) and the
 * standard OpenTelemetry variables, which a user may already have set for other tools:
 *   OTEL_EXPORTER_OTLP_TRACES_ENDPOINT  the traces URL, used as it is
 *   OTEL_EXPORTER_OTLP_ENDPOINT         the receiver's base URL; `/v1/traces` is appended
 *   OTEL_SERVICE_NAME                   the resource's service.name (default "casefile")
 *   OTEL_SDK_DISABLED=true, OTEL_TRACES_EXPORTER=none   nothing is sent, whatever else says so
 * Either endpoint variable turns tracing on by itself, as it does for any instrumented program.
 */
export interface OtelSettings {
  url: string;
  serviceName: string;
  includeContent: boolean;
}

export const DEFAULT_TRACES_URL = "http://localhost:4318/v1/traces";

/**
 * Undefined when no trace is to be sent. `endpoint` is an explicit base URL (the editor's setting,
 * export-otel's --endpoint), named in an error as `endpointFrom`.
 */
export function otelSettings(
  env: NodeJS.ProcessEnv,
  opts: { enabled?: boolean; endpoint?: string; includeContent?: boolean; endpointFrom?: string },
): OtelSettings | undefined {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === "true" || env.OTEL_TRACES_EXPORTER?.trim().toLowerCase() === "none") return undefined;
  const tracesEnv = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  const baseEnv = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  if (!opts.enabled && !opts.endpoint && !tracesEnv && !baseEnv) return undefined;
  const url = opts.endpoint
    ? tracesUrl(opts.endpoint, opts.endpointFrom ?? "the trace endpoint")
    : tracesEnv
      ? checkedUrl(tracesEnv, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
      : baseEnv
        ? tracesUrl(baseEnv, "OTEL_EXPORTER_OTLP_ENDPOINT")
        : DEFAULT_TRACES_URL;
  return { url, serviceName: env.OTEL_SERVICE_NAME?.trim() || "casefile", includeContent: opts.includeContent === true };
}

/** A receiver's base URL with the signal path appended, as the OTLP exporter specification says. */
function tracesUrl(base: string, where: string): string {
  const url = checkedUrl(base, where);
  return url.endsWith("/v1/traces") ? url : `${url.replace(/\/+$/, "")}/v1/traces`;
}

function checkedUrl(text: string, where: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new CasefileError("USAGE", `${where} is not a URL: "${text}"`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:")
    throw new CasefileError("USAGE", `${where} must be an http:// or https:// URL (OTLP over HTTP), not "${text}"`);
  return text;
}
