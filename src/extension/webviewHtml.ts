import { randomBytes } from "node:crypto";
import * as vscode from "vscode";

/**
 * The page every Casefile webview starts from: CSP `default-src 'none'`, scripts only with a
 * fresh crypto-random nonce, styles, fonts and images only from the extension's media folder
 * (the panels set `localResourceRoots` to it); base.css, shared by the panels, before the panel's
 * own stylesheet. Called by each panel when it is created.
 */
export function webviewHtml(
  webview: vscode.Webview,
  media: vscode.Uri,
  page: { title: string; script: string; stylesheet: string; loading: string },
): string {
  const nonce = randomBytes(16).toString("base64");
  const asset = (name: string): string => webview.asWebviewUri(vscode.Uri.joinPath(media, name)).toString();
  const csp = [
    "default-src 'none'",
    `style-src ${webview.cspSource}`,
    `font-src ${webview.cspSource}`,
    `img-src ${webview.cspSource}`,
    `script-src 'nonce-${nonce}'`,
  ].join("; ");
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${asset("codicon.css")}">
<link rel="stylesheet" href="${asset("base.css")}">
<link rel="stylesheet" href="${asset(page.stylesheet)}">
<title>${page.title}</title>
</head>
<body>
<div id="app" class="app"><p class="loading">${page.loading}</p></div>
<script nonce="${nonce}" src="${asset(page.script)}"></script>
</body>
</html>`;
}
