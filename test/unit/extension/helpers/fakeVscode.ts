import Module from "node:module";

/**
 * The few pieces of VS Code's API a WebviewChannel touches (createWebviewPanel, Uri.joinPath,
 * ViewColumn), so that the host side of the webview boundary runs in plain Node. It stands in for
 * the editor, which is not ours; everything of ours (the channel, the protocol's parse) is real.
 * `install()` makes `import * as vscode from "vscode"` resolve to it.
 */

export interface FakePanel {
  /** Delivers `data` as if the page had posted it (VS Code's onDidReceiveMessage). */
  fromPage(data: unknown): Promise<void>;
  posted: unknown[];
}

type Listener = (data: unknown) => unknown;
export const panels: FakePanel[] = [];

const uri = (path: string) => ({ path, toString: () => `vscode-webview://fake${path}` });

const fake = {
  ViewColumn: { One: 1, Two: 2, Beside: -2 },
  Uri: {
    file: (p: string) => uri(p),
    joinPath: (base: { path: string }, ...parts: string[]) => uri([base.path, ...parts].join("/")),
  },
  window: {
    createWebviewPanel() {
      let onMessage: Listener | undefined;
      const posted: unknown[] = [];
      const disposable = { dispose() {} };
      const panel = {
        visible: true,
        iconPath: undefined as unknown,
        webview: {
          html: "",
          cspSource: "vscode-webview://fake",
          asWebviewUri: (u: { path: string }) => uri(u.path),
          onDidReceiveMessage: (l: Listener) => ((onMessage = l), disposable),
          postMessage: async (m: unknown) => (posted.push(m), true),
        },
        onDidDispose: () => disposable,
        onDidChangeViewState: () => disposable,
        dispose() {},
      };
      panels.push({
        posted,
        fromPage: async (data) => {
          await onMessage?.(data);
          // The channel's receive is async behind a `void`: let it settle.
          await new Promise((r) => setImmediate(r));
        },
      });
      return panel;
    },
  },
};

let installed = false;
export function install(): void {
  if (installed) return;
  installed = true;
  const m = Module as unknown as { _load: (request: string, ...rest: unknown[]) => unknown };
  const load = m._load;
  m._load = function (request: string, ...rest: unknown[]) {
    if (request === "vscode") return fake;
    return load.call(this, request, ...rest);
  };
}
