import assert from "node:assert/strict";
import { install, panels } from "./helpers/fakeVscode";

install();
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { WebviewChannel } = require("../../../src/extension/webviewChannel") as typeof import("../../../src/extension/webviewChannel");
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { parseInspectorMessage } = require("../../../src/protocol/webview") as typeof import("../../../src/protocol/webview");
type InspectorToHost = import("../../../src/protocol/webview").InspectorToHost;

/**
 * The host side of the webview boundary: every message from the page is parsed before anything
 * acts on it. Kills the mutant "the extension host skips the parse of webview messages"
 * (webviewChannel.ts receive handing the raw data on), which only the e2e suite caught before.
 */
describe("webview channel: messages from the page are parsed at the host", () => {
  function channel() {
    const received: InspectorToHost[] = [];
    const warnings: string[] = [];
    const media = { path: "/ext/media" } as never;
    const ch = new WebviewChannel<InspectorToHost, { type: string }>({
      viewType: "casefile.inspector",
      title: "Run Inspector",
      column: 1 as never,
      media,
      page: { title: "Run Inspector", script: "inspector.js", stylesheet: "inspector.css", loading: "Loading" },
      log: { warn: (m: string) => warnings.push(m) } as never,
      name: "Run Inspector",
      parse: parseInspectorMessage,
      receive: (m) => void received.push(m),
      greeting: () => [{ type: "load" }],
      holds: () => false,
    });
    return { ch, received, warnings, page: panels[panels.length - 1]! };
  }

  it("drops a malformed message (counted and logged, naming what is wrong) and never hands it on", async () => {
    const { ch, received, warnings, page } = channel();
    await page.fromPage({ type: "resumeFrom", runId: 42 });
    await page.fromPage({ type: "deleteEverything" });
    await page.fromPage("ready");
    assert.deepEqual(received, [], "a malformed message reached the panel's handler");
    assert.equal(ch.dropped, 3, `dropped ${ch.dropped} of 3 malformed messages`);
    assert.equal(warnings.length, 3, `warnings: ${JSON.stringify(warnings)}`);
    assert.match(warnings[0]!, /^Run Inspector: dropped a malformed message from the webview: .*runId/s);
    assert.deepEqual(page.posted, [], "a malformed `ready` made the channel greet the page");
  });

  it("hands on a well-formed message, parsed, and greets the page once it says ready", async () => {
    const { ch, received, page } = channel();
    await page.fromPage({ type: "resumeFrom", runId: "run-1", checkpointId: "run-1:2", extra: "not in the schema" });
    await page.fromPage({ type: "ready" });
    assert.equal(ch.dropped, 0);
    assert.deepEqual(received, [{ type: "resumeFrom", runId: "run-1", checkpointId: "run-1:2" }], "the message as the schema parses it");
    assert.deepEqual(page.posted, [{ type: "load" }]);
  });
});
