import * as assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import type { CasefileTestApi } from "../../../src/extension/extension";
import { recordMetric } from "./metrics";

const EXTENSION_ID = "casefile.casefile";

interface Manifest {
  contributes: {
    commands: { command: string; title: string; category?: string }[];
    viewsContainers: { activitybar: { id: string; title: string }[] };
    views: Record<string, { id: string; name: string }[]>;
  };
  capabilities: { untrustedWorkspaces: { supported: string | boolean; description?: string } };
}

describe("Casefile extension in VS Code", () => {
  let manifest: Manifest;

  before(async () => {
    const ext = vscode.extensions.getExtension(EXTENSION_ID);
    assert.ok(ext, `extension ${EXTENSION_ID} is loaded from the development path`);
    const wasActive = ext.isActive;
    const t0 = performance.now();
    await ext.activate();
    const t1 = performance.now();
    const api = (await ext.activate()) as CasefileTestApi;
    // The suite runs in the extension host, the same process as the extension: performance.now()
    // marks compare. Before the module runs: VS Code's side (the extension context, reading and
    // compiling dist/extension.js); then the module's own top level, activate(), and the return.
    const { moduleStartedAt, activateStartedAt, activateEndedAt } = api.marks;
    const ms = (n: number): string => `${n.toFixed(1)} ms`;
    // VS Code's own marks in the extension host (vs/base/common/performance, Date.now() resolution):
    // its "code loading" is the require() of dist/extension.js alone, what the bundle's size costs.
    const perf = (globalThis as { MonacoPerformanceMarks?: { getMarks(): { name: string; startTime: number }[] } }).MonacoPerformanceMarks;
    const at = (name: string): number | undefined =>
      perf?.getMarks().find((m) => m.name === `code/extHost/${name}/${EXTENSION_ID}`)?.startTime;
    const [willLoad, didLoad] = [at("willLoadExtensionCode"), at("didLoadExtensionCode")];
    const codeLoading = willLoad !== undefined && didLoad !== undefined ? `; VS Code's code loading mark ${didLoad - willLoad} ms` : "";
    recordMetric(
      "activation",
      wasActive
        ? `already active when the suite started; activate() body ${ms(api.activateMs)}`
        : `ext.activate() ${ms(t1 - t0)} = until the module ran ${ms(moduleStartedAt - t0)}` +
            ` + until activate() was called ${ms(activateStartedAt - moduleStartedAt)} + activate() body ${ms(api.activateMs)}` +
            ` + until resolved ${ms(t1 - activateEndedAt)}${codeLoading}`,
    );
    manifest = JSON.parse(readFileSync(path.join(ext.extensionPath, "package.json"), "utf8")) as Manifest;
  });

  it("activates", () => {
    assert.equal(vscode.extensions.getExtension(EXTENSION_ID)?.isActive, true);
  });

  it("registers every contributed command, each in the Casefile category", async () => {
    const registered = new Set(await vscode.commands.getCommands(true));
    const contributed = manifest.contributes.commands;
    assert.ok(contributed.length >= 4, "contributes run, step, openInspector and refreshViews at least");
    for (const c of contributed) {
      assert.ok(registered.has(c.command), `${c.command} is registered`);
      assert.equal(c.category, "Casefile", `${c.command} has category Casefile`);
    }
  });
});

describe("Casefile views", () => {
  const views = ["casefile.workflows", "casefile.runs", "casefile.intents", "casefile.requests", "casefile.rules"];

  it("contributes the Casefile container with Workflows, Runs, Intents, Requests and Rules", async () => {
    const registered = new Set(await vscode.commands.getCommands(true));
    // The workbench makes a `<view>.focus` command for each view it has registered.
    for (const v of views) assert.ok(registered.has(`${v}.focus`), `view ${v} exists in the workbench`);
    await vscode.commands.executeCommand("workbench.view.extension.casefile");
    for (const v of views) await vscode.commands.executeCommand(`${v}.focus`);
  });
});
