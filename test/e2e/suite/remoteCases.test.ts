import * as assert from "node:assert/strict";
import { existsSync } from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import { PgQueue, PostgresStore } from "../../../src/pgstore/index";
import type { CasefileTestApi } from "../../../src/extension/extension";
import type { RunsNode } from "../../../src/extension/caseViews";
import type { RemoteNode } from "../../../src/extension/remoteCases";
import { createDatabase } from "../../helpers/pgCluster";
import { run } from "../../unit/casefile/builders";

type Remote<K extends RemoteNode["kind"]> = Extract<RemoteNode, { kind: K }>;

/**
 * Remote cases in the Runs view: a Postgres store (a cluster made for this run) named in
 * casefile.stores is listed under "Remote cases", its cases by status a page at a time; a case
 * opens read-only in the Run Inspector and pulls into the workspace, refused the second time.
 */
describe("Remote cases in the Runs view", function () {
  this.timeout(120_000);
  let api: CasefileTestApi;
  let url: string;
  const config = () => vscode.workspace.getConfiguration("casefile");

  before(async () => {
    api = await vscode.extensions.getExtension<CasefileTestApi>("casefile.casefile")!.activate();
    url = createDatabase("remote");
    const queue = new PgQueue(url);
    try {
      for (let i = 0; i < 55; i++) queue.enqueue(`q-${String(i).padStart(4, "0")}`, "/w.ts", null);
      queue.release(queue.claim("w", 60_000)!, "failed");
    } finally {
      queue.close();
    }
    const store = await PostgresStore.open(url, { caseId: "direct-1", create: true });
    store.commit({ runs: [run("r1", { status: "waiting" })] });
    store.close();
    await config().update("stores", [{ name: "prod", url }], vscode.ConfigurationTarget.Global);
  });
  after(() => config().update("stores", undefined, vscode.ConfigurationTarget.Global));

  const runs = () => api.ctx.views.trees.runs;
  async function child<K extends RemoteNode["kind"]>(parent: RunsNode | undefined, kind: K, pick?: (n: Remote<K>) => boolean) {
    const all = await runs().getChildren(parent);
    const found = all.find((n): n is Remote<K> => n.kind === kind && (!pick || pick(n as Remote<K>)));
    assert.ok(found, `a ${kind} node among ${all.map((n) => n.kind).join(", ")}`);
    return found;
  }
  const status = async (s: string) =>
    child(
      await child(await child(undefined, "remoteRoot"), "remoteStore", (n) => n.store === "prod"),
      "remoteStatus",
      (n) => n.status === s,
    );

  it("lists the store's cases under their status, fifty at a time, and More adds the next page", async () => {
    const queued = await status("queued");
    const first = await runs().getChildren(queued);
    assert.equal(first.filter((n) => n.kind === "remoteCase").length, 50, "a page of fifty");
    const more = first.at(-1)!;
    assert.equal(more.kind, "remoteMore", "the page ends with More");
    const r = (await vscode.commands.executeCommand("casefile.moreRemoteCases", more)) as { listed: number };
    assert.equal(r.listed, 54, "54 queued cases once the next page is in");
    const all = await runs().getChildren(queued);
    assert.deepEqual(
      all.map((n) => (n.kind === "remoteCase" ? n.caseId : n.kind)),
      Array.from({ length: 54 }, (_, i) => `q-${String(i + 1).padStart(4, "0")}`),
    );
    const failed = await runs().getChildren(await status("failed"));
    assert.deepEqual(
      failed.map((n) => (n.kind === "remoteCase" ? n.caseId : n.kind)),
      ["q-0000"],
    );
  });

  it("opens a case read-only in the Run Inspector, and pulls it into the workspace once", async () => {
    const [waiting] = await runs().getChildren(await status("waiting"));
    assert.ok(waiting?.kind === "remoteCase" && waiting.caseId === "direct-1", `the waiting case: ${JSON.stringify(waiting)}`);
    const opened = (await vscode.commands.executeCommand("casefile.openRemoteCase", waiting)) as { ok: boolean; file?: string };
    assert.ok(opened.ok && opened.file && existsSync(opened.file), `opened: ${JSON.stringify(opened)}`);
    assert.ok(!opened.file.startsWith(vscode.workspace.workspaceFolders![0]!.uri.fsPath), "the read-only copy is not in the workspace");
    // The tab model reaches the extension host a moment after the panel opens in the workbench.
    let tabs: string[] = [];
    for (let i = 0; i < 50 && !tabs.includes("Run Inspector: direct-1.casefile"); i++) {
      if (i > 0) await new Promise((r) => setTimeout(r, 100));
      tabs = vscode.window.tabGroups.all.flatMap((g) => g.tabs.map((t) => t.label));
    }
    assert.ok(tabs.includes("Run Inspector: direct-1.casefile"), `an inspector tab for the case among ${tabs.join(", ")}`);

    const pulled = (await vscode.commands.executeCommand("casefile.pullRemoteCase", waiting)) as { ok: boolean; file?: string };
    const expected = path.join(vscode.workspace.workspaceFolders![0]!.uri.fsPath, "cases", "direct-1.casefile");
    assert.deepEqual(pulled, { ok: true, message: `Pulled case direct-1 from prod into ${expected}.`, file: expected });
    const files = await api.ctx.views.listCaseFiles();
    assert.ok(
      files.some((f) => f.fsPath === expected),
      `the Runs view lists the pulled case file: ${files.map((f) => f.fsPath).join(", ")}`,
    );
    const again = (await vscode.commands.executeCommand("casefile.pullRemoteCase", waiting)) as { ok: boolean; reason?: string };
    assert.equal(again.ok, false);
    assert.match(again.reason ?? "", /exists: pulling never replaces a case file/);
  });

  it("keeps a store's password in secret storage, and refuses a URL that holds one, naming the setting", async () => {
    const set = (await vscode.commands.executeCommand("casefile.setStorePassword", "prod", "s3cret")) as { ok: boolean };
    assert.equal(set.ok, true);
    assert.equal(await api.ctx.extension.secrets.get("casefile.store.prod"), "s3cret");
    assert.ok(!JSON.stringify(config().get("stores")).includes("s3cret"), "the password is not in the settings");

    await config().update("stores", [{ name: "leaky", url: "postgres://u:pw@localhost/db" }], vscode.ConfigurationTarget.Global);
    const problem = await child(await child(undefined, "remoteRoot"), "remoteProblem");
    assert.match(problem.message, /^casefile\.stores\[0\] "leaky": take the password out of the url/);
    await config().update("stores", [{ name: "prod", url }], vscode.ConfigurationTarget.Global);
  });
});
