import type { OtelSettings } from "./config";
import { runSpans, type RunRecords } from "./spans";

/**
 * Sends one recorded run as a trace: its spans (spans.ts) through the SDK (export.ts). Called by
 * runner/session.ts after a run, resume or answer with tracing on (the CLI's --otel, the editor's
 * casefile.otel.* settings through the runner), and by `casefile export-otel` for runs recorded
 * before. Each call sends the run as it is recorded then, whole, as a trace of its own.
 */
export async function traceRun(records: RunRecords, settings: OtelSettings): Promise<{ traceId: string; spans: number }> {
  const spans = runSpans(records, { includeContent: settings.includeContent });
  // The SDK is required here, on first use, from its own bundle (dist/otel-export.js, esbuild.mjs).
  const { sendSpans } = require("./export") as typeof import("./export");
  return sendSpans(spans, { url: settings.url, serviceName: settings.serviceName });
}
