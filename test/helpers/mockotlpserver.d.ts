// @elastic/mockotlpserver ships no types: its two exports as test/helpers/otlpReceiver.ts uses them.
declare module "@elastic/mockotlpserver" {
  export class MockOtlpServer {
    constructor(opts: Record<string, unknown>);
    /** A URL once started. */
    httpUrl: URL | null;
    start(): Promise<void>;
    close(): Promise<void>;
  }
  export function normalizeTrace(trace: unknown): unknown;
}
