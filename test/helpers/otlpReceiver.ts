import { MockOtlpServer, normalizeTrace } from "@elastic/mockotlpserver";

/**
 * A real OTLP/HTTP receiver on loopback for trace tests: @elastic/mockotlpserver decodes what an
 * exporter sends (protobuf or JSON) with the official protos; this collects the spans of every
 * request, flattened, with their resource's attributes beside them.
 */

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: string;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: Record<string, unknown>;
  events?: { name: string; timeUnixNano: string; attributes?: Record<string, unknown> }[];
  status?: { code?: string; message?: string };
  resource: Record<string, unknown>;
}

interface NormalizedTrace {
  resourceSpans: {
    resource?: { attributes?: Record<string, unknown> };
    scopeSpans: { spans: Omit<ReceivedSpan, "resource">[] }[];
  }[];
}

export interface OtlpReceiver {
  /** The traces URL, `http://127.0.0.1:<port>/v1/traces`. */
  tracesUrl: string;
  /** The base URL, as OTEL_EXPORTER_OTLP_ENDPOINT takes it. */
  baseUrl: string;
  /** Every span received so far, in arrival order. */
  spans: ReceivedSpan[];
  /** Every request's decoded body, whole (to search for what must not be there). */
  raw: unknown[];
  close(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const raw: unknown[] = [];
  const server = new MockOtlpServer({
    services: ["http"],
    httpHostname: "127.0.0.1",
    httpPort: 0,
    logLevel: "warn",
    onTrace: (t: unknown) => {
      const trace = normalizeTrace(t) as NormalizedTrace;
      raw.push(trace);
      for (const rs of trace.resourceSpans)
        for (const ss of rs.scopeSpans) for (const s of ss.spans) spans.push({ ...s, resource: rs.resource?.attributes ?? {} });
    },
  });
  await server.start();
  const baseUrl = String(server.httpUrl).replace(/\/$/, "");
  return { tracesUrl: `${baseUrl}/v1/traces`, baseUrl, spans, raw, close: () => server.close() };
}
