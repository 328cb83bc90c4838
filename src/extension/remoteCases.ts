import { existsSync, mkdirSync, rmSync } from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import { runCli } from "./cliProcess";

/**
 * Remote cases: the Postgres stores named in the `casefile.stores` setting, listed in the Runs
 * view under "Remote cases" (store, then status, then a page of cases at a time), each case
 * openable read-only in the Run Inspector (a copy pulled into the extension's storage) and
 * pullable into the workspace, where forks and replays are local. Every read goes through the
 * bundled CLI (`casefile cases`, `casefile pull`): the extension host holds no database
 * connection. A store's password lives in SecretStorage ("Casefile: Set Store Password") and
 * reaches the CLI as PGPASSWORD, never in settings, arguments or the log.
 */

export interface StoreSetting {
  name: string;
  url: string;
}

/** A remote node of the Runs view (caseViews.ts draws them). */
export type RemoteNode =
  | { kind: "remoteRoot" }
  | { kind: "remoteStore"; store: string }
  | { kind: "remoteStatus"; store: string; status: string }
  | { kind: "remoteCase"; store: string; caseId: string; status: string; createdAt: string }
  | { kind: "remoteMore"; store: string; status: string; after: string }
  | { kind: "remoteProblem"; message: string };

/** The statuses a store's cases are listed under, the ones a person acts on first. */
export const REMOTE_STATUSES = ["waiting", "failed", "needs_replanning", "running", "queued", "stopped", "completed", "new"] as const;

export const PAGE_SIZE = 50;

const secretKey = (store: string): string => `casefile.store.${store}`;

/** `casefile.stores` as written, each entry checked; a bad entry is a sentence naming it. */
export function readStores(): { stores: StoreSetting[]; problems: string[] } {
  const raw = vscode.workspace.getConfiguration("casefile").get<unknown>("stores") ?? [];
  const stores: StoreSetting[] = [];
  const problems: string[] = [];
  if (!Array.isArray(raw)) return { stores, problems: ["casefile.stores is not a list of { name, url }"] };
  raw.forEach((s: unknown, i) => {
    const e = s as { name?: unknown; url?: unknown } | null;
    const where = `casefile.stores[${i}]`;
    if (!e || typeof e.name !== "string" || e.name === "" || typeof e.url !== "string") {
      problems.push(`${where}: needs a name and a url`);
      return;
    }
    if (!/^postgres(ql)?:\/\//i.test(e.url)) {
      problems.push(`${where} "${e.name}": the url must be postgres://…`);
      return;
    }
    let password = "";
    try {
      password = new URL(e.url).password;
    } catch {
      problems.push(`${where} "${e.name}": the url does not parse`);
      return;
    }
    if (password) {
      problems.push(`${where} "${e.name}": take the password out of the url; set it with "Casefile: Set Store Password"`);
      return;
    }
    if (stores.some((x) => x.name === e.name)) problems.push(`${where}: a second store named "${e.name}"`);
    else stores.push({ name: e.name, url: e.url });
  });
  return { stores, problems };
}

function store(name: string): StoreSetting | undefined {
  return readStores().stores.find((s) => s.name === name);
}

/** The CLI on a store, its password from SecretStorage as PGPASSWORD. */
async function cliOnStore(extension: vscode.ExtensionContext, s: StoreSetting, args: string[]) {
  const password = await extension.secrets.get(secretKey(s.name));
  const cwd = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? extension.globalStorageUri.fsPath;
  return runCli(extension, [...args, "--store", s.url], cwd, { env: password ? { ...process.env, PGPASSWORD: password } : process.env });
}

/** The CLI's one-line refusal, without the `casefile: ` prefix. */
const refusal = (out: string): string =>
  out
    .trim()
    .split("\n")
    .pop()!
    .replace(/^casefile: /, "");

/** One page of a store's cases of one status, as Runs view nodes (a "More" node when there are more). */
export async function fetchPage(
  extension: vscode.ExtensionContext,
  storeName: string,
  status: string,
  after?: string,
): Promise<RemoteNode[]> {
  const s = store(storeName);
  if (!s) return [{ kind: "remoteProblem", message: `no store "${storeName}" in casefile.stores` }];
  const args = ["cases", "--status", status, "--limit", String(PAGE_SIZE), "--json", ...(after ? ["--after", after] : [])];
  const r = await cliOnStore(extension, s, args);
  if (r.code !== 0) return [{ kind: "remoteProblem", message: `${s.name}: ${refusal(r.out)}` }];
  const { CasesPageSchema } = await import("../protocol/cases.js");
  const parsed = CasesPageSchema.safeParse(JSON.parse(r.stdout));
  if (!parsed.success) return [{ kind: "remoteProblem", message: `${s.name}: the CLI's page of cases did not parse` }];
  const nodes: RemoteNode[] = parsed.data.cases.map((c) => ({
    kind: "remoteCase",
    store: s.name,
    caseId: c.caseId,
    status: c.status,
    createdAt: c.createdAt,
  }));
  if (parsed.data.next) nodes.push({ kind: "remoteMore", store: s.name, status, after: parsed.data.next });
  return nodes;
}

export type RemoteResult = { ok: true; message: string; file: string } | { ok: false; reason: string };

/**
 * Copies one case of a store into `file` with `casefile pull` (read-only on the store). Called
 * by "Open Read-Only" (into the extension's storage, replacing an earlier copy) and "Pull into
 * Workspace" (never over a file that is there).
 */
async function pull(extension: vscode.ExtensionContext, node: RemoteNode, file: string): Promise<RemoteResult> {
  if (node.kind !== "remoteCase") return { ok: false, reason: "Choose a case under Remote cases." };
  const s = store(node.store);
  if (!s) return { ok: false, reason: `No store "${node.store}" in casefile.stores.` };
  mkdirSync(path.dirname(file), { recursive: true });
  const r = await cliOnStore(extension, s, ["pull", "--case", node.caseId, "--out", file]);
  if (r.code !== 0) return { ok: false, reason: `${s.name}: ${refusal(r.out)}` };
  return { ok: true, message: `Pulled case ${node.caseId} from ${s.name} into ${file}.`, file };
}

/** "Open Read-Only": a fresh copy in the extension's storage, opened in the Run Inspector. */
export async function openRemoteCase(extension: vscode.ExtensionContext, node: RemoteNode): Promise<RemoteResult> {
  if (node.kind !== "remoteCase") return { ok: false, reason: "Choose a case under Remote cases." };
  const file = path.join(extension.globalStorageUri.fsPath, "remote", node.store, `${node.caseId}.casefile`);
  for (const f of [file, `${file}.journal`, `${file}.lock`]) rmSync(f, { force: true });
  const r = await pull(extension, node, file);
  if (r.ok) await vscode.commands.executeCommand("casefile.openInspector", vscode.Uri.file(file));
  return r;
}

/** "Pull into Workspace": cases/<case id>.casefile in the first workspace folder, then opened. */
export async function pullRemoteCase(extension: vscode.ExtensionContext, node: RemoteNode): Promise<RemoteResult> {
  if (node.kind !== "remoteCase") return { ok: false, reason: "Choose a case under Remote cases." };
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  if (!folder) return { ok: false, reason: "Open a folder to pull a case into." };
  const file = path.join(folder, "cases", `${node.caseId}.casefile`);
  if (existsSync(file)) return { ok: false, reason: `${file} exists: pulling never replaces a case file.` };
  const r = await pull(extension, node, file);
  if (r.ok) await vscode.commands.executeCommand("casefile.openInspector", vscode.Uri.file(file));
  return r;
}

/** "Casefile: Set Store Password": kept in SecretStorage under the store's name. */
export async function setStorePassword(
  extension: vscode.ExtensionContext,
  name?: unknown,
  password?: unknown,
): Promise<{ ok: true; message: string } | { ok: false; reason: string }> {
  const names = readStores().stores.map((s) => s.name);
  if (names.length === 0) return { ok: false, reason: "casefile.stores names no store." };
  const chosen = typeof name === "string" ? name : await vscode.window.showQuickPick(names, { title: "Password for which store?" });
  if (!chosen) return { ok: false, reason: "No store chosen." };
  if (!names.includes(chosen)) return { ok: false, reason: `No store "${chosen}" in casefile.stores.` };
  const value =
    typeof password === "string"
      ? password
      : await vscode.window.showInputBox({ title: `Password for store ${chosen}`, password: true, ignoreFocusOut: true });
  if (!value) return { ok: false, reason: "No password given." };
  await extension.secrets.store(secretKey(chosen), value);
  return { ok: true, message: `The password of store ${chosen} is in the editor's secret storage.` };
}
