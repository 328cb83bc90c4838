import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Span } from "@opentelemetry/api";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { defaultResource, resourceFromAttributes } from "@opentelemetry/resources";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from "@opentelemetry/semantic-conventions";
import type { SpanDescription } from "./spans";

/**
 * The thin part that needs the OpenTelemetry SDK: span descriptions (spans.ts) become SDK spans
 * with their recorded start and end times, and go to an OTLP receiver over HTTP as protobuf (the
 * one encoding Phoenix, Jaeger, the Aspire dashboard and Langfuse all accept on /v1/traces).
 *
 * esbuild.mjs builds this module, with the SDK, into a bundle of its own (dist/otel-export.js)
 * that the CLI and the runner `require` only when a trace is sent: `casefile --help`, `inspect`
 * and a run without --otel never load it (cold start, issue 16).
 */

/** @opentelemetry/core's ExportResultCode.SUCCESS (core is the SDK's own dependency, not ours). */
const EXPORT_SUCCESS = 0;

export interface OtelTarget {
  /** The traces URL, `.../v1/traces` (config.ts resolves it from the option and the OTEL_* variables). */
  url: string;
  serviceName: string;
  serviceVersion?: string;
  timeoutMs?: number;
}

/**
 * Sends the spans as one trace and resolves when the receiver accepted them; rejects with the
 * exporter's error when it did not (unreachable, refused, timed out). Headers come from the
 * standard OTEL_EXPORTER_OTLP_HEADERS / OTEL_EXPORTER_OTLP_TRACES_HEADERS, read by the exporter.
 */
export async function sendSpans(spans: readonly SpanDescription[], target: OtelTarget): Promise<{ traceId: string; spans: number }> {
  const memory = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({
    resource: defaultResource().merge(
      resourceFromAttributes({
        [ATTR_SERVICE_NAME]: target.serviceName,
        ...(target.serviceVersion ? { [ATTR_SERVICE_VERSION]: target.serviceVersion } : {}),
      }),
    ),
    spanProcessors: [new SimpleSpanProcessor(memory)],
  });
  const tracer = provider.getTracer("casefile");
  const made = new Map<string, Span>();
  // Parents come before their children (spans.ts): each is started in its parent's context.
  for (const d of spans) {
    const parent = d.parentId === undefined ? undefined : made.get(d.parentId);
    const span = tracer.startSpan(
      d.name,
      { kind: d.kind === "client" ? SpanKind.CLIENT : SpanKind.INTERNAL, startTime: new Date(d.start), attributes: d.attributes },
      parent ? trace.setSpan(ROOT_CONTEXT, parent) : ROOT_CONTEXT,
    );
    for (const e of d.events) span.addEvent(e.name, e.attributes, new Date(e.at));
    if (d.error) {
      span.setAttribute("error.type", d.error.type);
      span.addEvent("exception", { "exception.type": d.error.type, "exception.message": d.error.message }, new Date(d.end));
      span.setStatus({ code: SpanStatusCode.ERROR, message: d.error.message });
    }
    made.set(d.id, span);
  }
  // Children end before their parents, at the times the run recorded.
  for (const d of [...spans].reverse()) made.get(d.id)!.end(new Date(d.end));
  const finished = memory.getFinishedSpans();
  // The standard OTEL_EXPORTER_OTLP_(TRACES_)TIMEOUT, read by the exporter, else 5 s: a receiver
  // that is not running costs a run that long (the exporter retries within it), not the SDK's 10 s.
  const timeoutSet = Boolean(process.env.OTEL_EXPORTER_OTLP_TRACES_TIMEOUT || process.env.OTEL_EXPORTER_OTLP_TIMEOUT);
  const exporter = new OTLPTraceExporter({ url: target.url, ...(timeoutSet ? {} : { timeoutMillis: target.timeoutMs ?? 5_000 }) });
  try {
    await new Promise<void>((resolve, reject) =>
      exporter.export(finished, (result) =>
        result.code === EXPORT_SUCCESS ? resolve() : reject(result.error ?? new Error("the receiver did not accept the spans")),
      ),
    );
  } finally {
    await exporter.shutdown().catch(() => {});
    await provider.shutdown().catch(() => {});
  }
  return { traceId: finished[0]?.spanContext().traceId ?? "", spans: finished.length };
}
