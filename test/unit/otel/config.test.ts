import assert from "node:assert/strict";
import { DEFAULT_TRACES_URL, otelSettings } from "../../../src/otel/config";

/** Whether and where a trace goes: the options, the editor's endpoint and the standard OTEL_* variables (src/otel/config.ts). */
describe("otel: where traces go", () => {
  it("sends nothing unless asked: --otel, an endpoint, or an OTLP endpoint variable", () => {
    assert.equal(otelSettings({}, {}), undefined, "no option and no variable: no trace");
    assert.equal(otelSettings({}, { enabled: true })?.url, DEFAULT_TRACES_URL, "--otel alone: localhost:4318");
    assert.equal(
      otelSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" }, {})?.url,
      "http://collector:4318/v1/traces",
      "the base endpoint variable turns it on, with /v1/traces appended",
    );
  });

  it("reads the traces endpoint as it is, before the base one; an explicit endpoint wins over both", () => {
    const env = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://base:4318/", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://traces:9999/custom" };
    assert.equal(otelSettings(env, { enabled: true })?.url, "http://traces:9999/custom", "the traces variable, unchanged");
    assert.equal(
      otelSettings(env, { endpoint: "http://localhost:6006" })?.url,
      "http://localhost:6006/v1/traces",
      "the editor's endpoint (Phoenix here)",
    );
    assert.equal(
      otelSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: "https://cloud.langfuse.com/api/public/otel" }, {})?.url,
      "https://cloud.langfuse.com/api/public/otel/v1/traces",
      "a base URL with a path (Langfuse)",
    );
  });

  it("names the service casefile unless OTEL_SERVICE_NAME says otherwise, and keeps content off unless asked", () => {
    assert.deepEqual(
      otelSettings({}, { enabled: true }),
      { url: DEFAULT_TRACES_URL, serviceName: "casefile", includeContent: false },
      "the defaults",
    );
    const named = otelSettings({ OTEL_SERVICE_NAME: "payables-dev" }, { enabled: true, includeContent: true });
    assert.deepEqual([named?.serviceName, named?.includeContent], ["payables-dev", true], "the service name and content, as set");
  });

  it("sends nothing when OTEL_SDK_DISABLED or OTEL_TRACES_EXPORTER=none say so, whatever else asks", () => {
    assert.equal(otelSettings({ OTEL_SDK_DISABLED: "true" }, { enabled: true }), undefined, "OTEL_SDK_DISABLED=true");
    assert.equal(otelSettings({ OTEL_TRACES_EXPORTER: "none", OTEL_EXPORTER_OTLP_ENDPOINT: "http://x:4318" }, {}), undefined, "none");
  });

  it("refuses an endpoint that is not an http(s) URL, naming where it came from", () => {
    assert.throws(
      () => otelSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: "collector:4317" }, {}),
      /^CasefileError: OTEL_EXPORTER_OTLP_ENDPOINT must be an http:\/\/ or https:\/\/ URL \(OTLP over HTTP\), not "collector:4317"$/,
      "a gRPC-style host:port",
    );
    assert.throws(
      () => otelSettings({}, { endpoint: "not a url", endpointFrom: "casefile.otel.endpoint" }),
      /^CasefileError: casefile\.otel\.endpoint is not a URL: "not a url"$/,
      "garbage, named by where it came from",
    );
  });
});
