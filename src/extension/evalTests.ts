import { existsSync } from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import type { ProviderConfig } from "../protocol/runner";
import type { CaseOutcome, EvalCaseNode, EvalFileText, EvalTree } from "./evalTestTree";
import { runCli } from "./cliProcess";
import { providerFromSettings, type RunSessions } from "./runSessions";
import { canRunWorkflowCode } from "./trust";

/**
 * Eval cases in VS Code's Testing view. Every eval file of the workspace (our `*.eval.json`, and
 * promptfoo YAML holding Casefile's metadata) is listed as workflow -> step -> case, kept up to date
 * by file watchers. A run spawns `casefile eval <files> --json` (the extension host never runs
 * workflow code) and reads its typed lines (src/protocol/evalRun.ts): a failure shows expected
 * against actual, the case's line in its file, and a link to the step in the Run Inspector.
 *
 * Profiles: "Recorded answer" (default, offline: the answer recorded in the case) and, when the
 * casefile.provider settings name an OpenAI-compatible or Azure provider, one that asks it. The
 * recorded profile supports continuous runs: saving a workflow file re-runs the cases that run
 * with it (and saving an eval file its own cases). In Restricted Mode the cases are listed and
 * every run is refused with the reason, without starting a process.
 *
 * Created by extension.ts at activation; the parsing (zod, yaml) loads on first discovery.
 */

type Tree = typeof import("./evalTestTree");
type Outcome = CaseOutcome | { kind: "refused"; message: string } | { kind: "skipped" };

export class EvalTests implements vscode.Disposable {
  readonly controller: vscode.TestController;
  private readonly disposables: vscode.Disposable[] = [];
  /** The default profile; the e2e suite starts a continuous run with its handler. */
  readonly recorded: vscode.TestRunProfile;
  /** The profile of the provider the casefile.* settings name, if they name one eval runs can ask (read by the e2e suite). */
  providerProfile: vscode.TestRunProfile | undefined;
  /** The eval files read, by path: the tree is rebuilt from them when one changes. */
  private readonly texts = new Map<string, string>();
  private tree: EvalTree = { workflows: [], problems: [] };
  private readonly cases = new Map<string, EvalCaseNode>();
  private watching = false;
  private discovered: Promise<void> | undefined;
  private rebuildTimer: ReturnType<typeof setTimeout> | undefined;
  /** The continuous runs in progress: each re-runs what a saved file affects, within what it asked for. */
  private readonly continuous = new Set<vscode.TestRunRequest>();
  /** Each case's last outcome, by item id: read by the e2e suite. */
  readonly outcomes = new Map<string, Outcome>();

  constructor(
    private readonly extension: vscode.ExtensionContext,
    private readonly runs: RunSessions,
    private readonly log: vscode.LogOutputChannel,
  ) {
    this.controller = vscode.tests.createTestController("casefile.evals", "Casefile eval cases");
    // Called by VS Code when the Testing view first shows (item undefined): the workspace is searched then, not at activation.
    this.controller.resolveHandler = (item) => (item ? undefined : this.discover());
    this.controller.refreshHandler = () => this.discover(true);
    this.recorded = this.controller.createRunProfile(
      "Recorded answer",
      vscode.TestRunProfileKind.Run,
      (request, token) => this.handle(request, token, undefined),
      true,
      undefined,
      true,
    );
    this.updateProviderProfile();
    this.disposables.push(
      this.controller,
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration("casefile")) this.updateProviderProfile();
      }),
      // Called by VS Code after a document is saved: continuous runs re-run the cases it affects.
      vscode.workspace.onDidSaveTextDocument((doc) => void this.saved(doc.uri.fsPath)),
    );
  }

  /** Lists the workspace's eval files (once, unless `again`), then keeps the list current with watchers. */
  discover(again = false): Promise<void> {
    if (this.discovered && !again) return this.discovered;
    this.discovered = (async () => {
      const { EVAL_FILE_GLOBS } = await tree();
      const found = (await Promise.all(EVAL_FILE_GLOBS.map((g) => vscode.workspace.findFiles(g, "**/node_modules/**")))).flat();
      this.texts.clear();
      await Promise.all(found.map((uri) => this.read(uri)));
      this.watch(EVAL_FILE_GLOBS);
      await this.rebuild();
    })();
    return this.discovered;
  }

  private watch(globs: readonly string[]): void {
    if (this.watching) return;
    this.watching = true;
    for (const glob of globs) {
      const watcher = vscode.workspace.createFileSystemWatcher(glob);
      const changed = (uri: vscode.Uri) => void this.read(uri).then(() => this.rebuildSoon());
      this.disposables.push(
        watcher,
        watcher.onDidCreate(changed),
        watcher.onDidChange(changed),
        watcher.onDidDelete((uri) => {
          this.texts.delete(uri.fsPath);
          this.rebuildSoon();
        }),
      );
    }
  }

  private async read(uri: vscode.Uri): Promise<void> {
    if (uri.fsPath.split(path.sep).includes("node_modules")) return;
    try {
      this.texts.set(uri.fsPath, Buffer.from(await vscode.workspace.fs.readFile(uri)).toString("utf8"));
    } catch {
      this.texts.delete(uri.fsPath); // gone between the event and the read
    }
  }

  /** One rebuild per burst of file events (an export writes, an editor saves). */
  private rebuildSoon(): void {
    clearTimeout(this.rebuildTimer);
    this.rebuildTimer = setTimeout(() => void this.rebuild(), 200);
  }

  /** The TestItems from the files read; an item keeps its object (and VS Code its last result) while its id stays. */
  private async rebuild(): Promise<void> {
    const { buildEvalTree } = await tree();
    const files: EvalFileText[] = [...this.texts].map(([p, text]) => ({ path: p, text }));
    this.tree = buildEvalTree(files);
    this.cases.clear();
    const old = new Map<string, vscode.TestItem>();
    const collect = (items: vscode.TestItemCollection) =>
      items.forEach((i) => {
        old.set(i.id, i);
        collect(i.children);
      });
    collect(this.controller.items);
    const item = (id: string, label: string, uri?: vscode.Uri) => {
      const kept = old.get(id);
      const i = kept && kept.uri?.toString() === uri?.toString() ? kept : this.controller.createTestItem(id, label, uri);
      i.label = label;
      return i;
    };
    const top: vscode.TestItem[] = [];
    for (const wf of this.tree.workflows) {
      const w = item(wf.id, wf.name);
      w.description = wf.description;
      w.children.replace(
        wf.steps.map((s) => {
          const st = item(s.id, s.step);
          st.children.replace(
            s.cases.map((c) => {
              this.cases.set(c.id, c);
              const ci = item(c.id, c.caseId, vscode.Uri.file(c.file));
              ci.description = c.description;
              ci.range = new vscode.Range(c.line, 0, c.line, 0);
              return ci;
            }),
          );
          return st;
        }),
      );
      top.push(w);
    }
    for (const p of this.tree.problems) {
      const i = item(p.id, vscode.workspace.asRelativePath(p.file), vscode.Uri.file(p.file));
      i.error = p.message;
      top.push(i);
    }
    this.controller.items.replace(top);
  }

  private updateProviderProfile(): void {
    const provider = providerFromSettings();
    this.providerProfile?.dispose();
    this.providerProfile = undefined;
    if (provider?.kind === "vscode-lm") {
      // The editor's models answer the runner over IPC; `casefile eval` is a plain child process.
      this.log.info(
        "Testing view: casefile.provider is vscode-lm, which eval runs cannot reach; only the recorded-answer profile is offered",
      );
      return;
    }
    if (provider?.kind !== "openai" && provider?.kind !== "azure") return;
    const model = provider.kind === "openai" ? provider.model : provider.deployment;
    this.providerProfile = this.controller.createRunProfile(
      `Provider: ${provider.kind}${model ? ` ${model}` : ""}`,
      vscode.TestRunProfileKind.Run,
      (request, token) => this.handle(request, token, provider),
      false,
    );
  }

  /** A profile's run handler, called by VS Code. A continuous request waits for saves instead of running now. */
  private async handle(request: vscode.TestRunRequest, token: vscode.CancellationToken, provider: ProviderConfig | undefined) {
    if (request.continuous) {
      this.continuous.add(request);
      token.onCancellationRequested(() => this.continuous.delete(request));
      return;
    }
    await this.execute(request, token, provider);
  }

  private async saved(file: string): Promise<void> {
    if (this.continuous.size === 0) return;
    // The tree first reads the saved eval file, if that is what was saved.
    if (this.texts.has(file)) {
      await this.read(vscode.Uri.file(file));
      await this.rebuild();
    }
    const { casesAffectedBy } = await tree();
    const affected = new Set(casesAffectedBy(this.tree, file).map((c) => c.id));
    for (const request of this.continuous) {
      const items = this.leaves(request).filter((i) => affected.has(i.id));
      if (items.length) await this.execute(new vscode.TestRunRequest(items, undefined, request.profile), undefined, undefined);
    }
  }

  /** The case items a request names (all when it names none), less those it excludes. */
  private leaves(request: vscode.TestRunRequest): vscode.TestItem[] {
    const excluded = new Set((request.exclude ?? []).map((i) => i.id));
    const out: vscode.TestItem[] = [];
    const walk = (i: vscode.TestItem) => {
      if (excluded.has(i.id)) return;
      if (this.cases.has(i.id)) out.push(i);
      i.children.forEach(walk);
    };
    if (request.include) request.include.forEach(walk);
    else this.controller.items.forEach(walk);
    return out;
  }

  /**
   * Runs the request's cases: one `casefile eval --json` over their files, in a child process,
   * each case reported as its line arrives. Returns each case's outcome (the e2e suite reads it).
   */
  async execute(
    request: vscode.TestRunRequest,
    token: vscode.CancellationToken | undefined,
    provider: ProviderConfig | undefined,
  ): Promise<Map<string, Outcome>> {
    await this.discover();
    const items = this.leaves(request);
    const run = this.controller.createTestRun(request);
    const outcomes = new Map<string, Outcome>();
    const report = (item: vscode.TestItem, o: Outcome) => {
      outcomes.set(item.id, o);
      this.outcomes.set(item.id, o);
    };
    const trust = canRunWorkflowCode();
    if (!trust.ok) {
      this.log.info(`Testing view: ${items.length} eval case(s) not run: workspace is in Restricted Mode`);
      for (const item of items) {
        run.errored(item, new vscode.TestMessage(trust.reason));
        report(item, { kind: "refused", message: trust.reason });
      }
      run.end();
      return outcomes;
    }
    const { outcomeOf, caseItemId } = await tree();
    const { parseEvalRunLine } = await import("../protocol/evalRun.js");
    const byId = new Map(items.map((i) => [i.id, i]));
    const files = [...new Set(items.map((i) => this.cases.get(i.id)!.file))];
    for (const item of items) run.started(item);
    if (files.length === 0) {
      run.end();
      return outcomes;
    }
    const args = ["eval", ...files, "--json", ...(provider ? ["--provider", JSON.stringify(provider)] : [])];
    // The recorded profile asks no model, whatever CASEFILE_PROVIDER the editor was started with.
    const env = provider ? await this.runs.environment(provider) : withoutProvider(process.env);
    const cwd = vscode.workspace.getWorkspaceFolder(vscode.Uri.file(files[0]!))?.uri.fsPath ?? path.dirname(files[0]!);
    this.log.info(`Testing view: casefile ${args.map((a) => (a.includes(" ") ? JSON.stringify(a) : a)).join(" ")}`);
    const { code, out } = await runCli(this.extension, args, cwd, {
      env,
      ...(token ? { cancel: token } : {}),
      onLine: (line) => {
        const parsed = parseEvalRunLine(line);
        if (!parsed.ok) {
          this.log.warn(`Testing view: a line of eval --json did not parse: ${parsed.error}`);
          run.appendOutput(`${line}\r\n`);
          return;
        }
        if (parsed.value.type !== "case") return;
        const item = byId.get(caseItemId(parsed.value.file, parsed.value.id));
        if (!item) return; // a case of the same file that was not asked for
        const node = this.cases.get(item.id)!;
        const o = outcomeOf(parsed.value);
        report(item, o);
        if (o.kind === "passed") run.passed(item, o.durationMs);
        else if (o.kind === "errored") run.errored(item, this.located(new vscode.TestMessage(o.message), node), o.durationMs);
        else run.failed(item, this.located(vscode.TestMessage.diff(o.message, o.expected, o.actual), node), o.durationMs);
      },
    });
    // Whatever got no line: the run was stopped, or the CLI refused before any case (its one-line error).
    const refusal = out.trim().split("\n").slice(-3).join(" ") || `casefile eval exited with ${code}`;
    for (const item of items) {
      if (outcomes.has(item.id)) continue;
      if (token?.isCancellationRequested) {
        run.skipped(item);
        report(item, { kind: "skipped" });
      } else {
        run.errored(item, this.located(new vscode.TestMessage(refusal), this.cases.get(item.id)!));
        report(item, { kind: "errored", durationMs: 0, message: refusal });
      }
    }
    run.end();
    return outcomes;
  }

  private located(message: vscode.TestMessage, node: EvalCaseNode): vscode.TestMessage {
    message.location = new vscode.Location(vscode.Uri.file(node.file), new vscode.Position(node.line, 0));
    // "Open Step in Run Inspector" on it: a button over the message in the peek (`testing/message/content`)
    // and in the Test Results' context menu (`testing/message/context`; package.json).
    message.contextValue = "casefile.evalCase";
    return message;
  }

  /**
   * "Open Step in Run Inspector" (casefile.openEvalCaseInInspector): from a failure's menus
   * (`{ test, message }`), a TestItem, or a case item's id. Opens the case file the case was
   * recorded in, at its agent step.
   */
  async openInInspector(arg: unknown): Promise<{ ok: true; message: string } | { ok: false; reason: string }> {
    await this.discover();
    const id =
      typeof arg === "string"
        ? arg
        : isTestItem(arg)
          ? arg.id
          : typeof arg === "object" && arg !== null && isTestItem((arg as { test?: unknown }).test)
            ? (arg as { test: vscode.TestItem }).test.id
            : undefined;
    const node = id !== undefined ? this.cases.get(id) : undefined;
    if (!node) return tell({ ok: false, reason: "Not an eval case of this workspace." });
    const { caseFile, runId, superstep } = node.provenance;
    if (!existsSync(caseFile))
      return tell({ ok: false, reason: `Eval case ${node.caseId} was recorded in ${caseFile}, which is not on this machine.` });
    return (await vscode.commands.executeCommand("casefile.openInspector", vscode.Uri.file(caseFile), runId, {
      superstep,
      executor: node.step,
    })) as { ok: true; message: string };
  }

  dispose(): void {
    clearTimeout(this.rebuildTimer);
    this.continuous.clear();
    for (const d of this.disposables) d.dispose();
    this.providerProfile?.dispose();
    this.recorded.dispose();
  }
}

function tell<T extends { ok: boolean; reason?: string }>(result: T): T {
  if (!result.ok && result.reason) void vscode.window.showErrorMessage(result.reason);
  return result;
}

function isTestItem(v: unknown): v is vscode.TestItem {
  return typeof v === "object" && v !== null && typeof (v as { id?: unknown }).id === "string" && "children" in v;
}

function withoutProvider(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const { CASEFILE_PROVIDER: _ignored, ...rest } = env;
  return rest;
}

/** The tree module (zod, yaml): loaded on first use, a bundle of its own (esbuild.mjs). */
let treeModule: Promise<Tree> | undefined;
function tree(): Promise<Tree> {
  return (treeModule ??= import("./evalTestTree.js"));
}
