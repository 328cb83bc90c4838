import { CasefileError, errorMessage } from "../engine/errors";
import { otelSettings } from "../otel/config";
import { readRunRecords, type RunRecords } from "../otel/spans";
import { traceRun } from "../otel/trace";
import { STORE_OPTIONS, locationFromOptions, openLocation } from "../runner/storeLocation";
import { parseOptions as parse, type Command } from "./args";

/**
 * `casefile export-otel <case file> [--run ID] [--content]`: sends runs already recorded as
 * OpenTelemetry traces, one trace per run (every run of the case, or the one --run names), so a
 * run made offline can be looked at in Jaeger, Phoenix, the Aspire dashboard or Langfuse. The
 * case is opened read-only; where to send is the --endpoint option, else the standard
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT / OTEL_EXPORTER_OTLP_ENDPOINT, else localhost:4318.
 * main.ts loads this module on demand; the SDK itself loads only when a trace is sent.
 */
export const exportOtel: Command = async (args, io) => {
  const { values, positionals } = parse(
    args,
    { run: { type: "string" }, endpoint: { type: "string" }, content: { type: "boolean" }, ...STORE_OPTIONS },
    1,
  );
  const location = locationFromOptions("export-otel", values, positionals[0]);
  if (!location) throw new CasefileError("USAGE", "export-otel needs a case file (or --store URL --case ID)");
  const settings = otelSettings(io.env, {
    enabled: true,
    endpoint: values.endpoint,
    endpointFrom: "--endpoint",
    includeContent: values.content,
  });
  if (!settings) throw new CasefileError("USAGE", "export-otel: tracing is turned off by OTEL_SDK_DISABLED or OTEL_TRACES_EXPORTER=none");
  const { store, label } = await openLocation(location, { readOnly: true });
  let runs: RunRecords[];
  try {
    const ids = values.run !== undefined ? [values.run] : store.listRuns().map((r) => r.id);
    runs = ids.map((id) => {
      const records = readRunRecords(store, id);
      if (!records) throw new CasefileError("UNKNOWN_RUN", `no run "${id}" in ${label}`);
      return records;
    });
  } finally {
    store.close();
  }
  if (runs.length === 0) throw new CasefileError("UNKNOWN_RUN", `${label} records no run to export`);
  for (const records of runs) {
    let sent;
    try {
      sent = await traceRun(records, settings);
    } catch (e) {
      throw new CasefileError("EXPORT_FAILED", `the trace of run ${records.run.id} was not sent to ${settings.url}: ${errorMessage(e)}`);
    }
    io.out(`run ${records.run.id}: ${sent.spans} spans sent to ${settings.url} (trace ${sent.traceId})`);
  }
  return 0;
};
