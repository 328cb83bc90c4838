import { existsSync, readFileSync } from "node:fs";
import * as path from "node:path";

/**
 * The `--vscode-*` variables VS Code injects into a webview, for the four built-in themes a
 * newcomer meets, built from the real theme files shipped with the code-server the e2e suite runs
 * (extensions/theme-defaults/themes/*.json, following `include`). A colour a theme file does not
 * set takes the colour registry's default for the theme's kind, transcribed below from the same
 * build (out/vs/code/browser/workbench/workbench.js, and the git extension's package.json); a
 * default that is null for a kind is left out, as VS Code leaves the variable unset and the
 * stylesheet's fallback applies. Called by webviewHost when it writes a page.
 */

export type Theme = "light" | "dark" | "hc" | "hc-light";
export const THEMES: readonly Theme[] = ["light", "dark", "hc", "hc-light"];
export const THEME_NAMES: Record<Theme, string> = {
  light: "Light Modern",
  dark: "Dark Modern",
  hc: "High Contrast",
  "hc-light": "High Contrast Light",
};

const THEME_FILES: Record<Theme, string> = {
  light: "light_modern.json",
  dark: "dark_modern.json",
  hc: "hc_black.json",
  "hc-light": "hc_light.json",
};

const THEMES_DIR = path.resolve(
  __dirname,
  "../../.vscode-test/code-server/node_modules/code-server/lib/vscode/extensions/theme-defaults/themes",
);

type Kind = Theme;
type Default = string | null | Partial<Record<Kind, string | null>>;
const k = (light: string | null, dark: string | null, hc: string | null, hcLight: string | null): Default => ({
  light,
  dark,
  hc,
  "hc-light": hcLight,
});

/** Registry defaults (VS Code 1.139) of the colours our stylesheets read and some theme leaves unset. */
const REGISTRY: Record<string, Default> = {
  foreground: k("#616161", "#CCCCCC", "#FFFFFF", "#292929"),
  descriptionForeground: k("#717171", "#CCCCCCB3", "#FFFFFFB3", "#292929B3"),
  errorForeground: k("#A1260D", "#F48771", "#F48771", "#B5200D"),
  focusBorder: k("#0090F1", "#007FD4", "#F38518", "#006BBD"),
  contrastBorder: k(null, null, "#6FC3DF", "#0F4A85"),
  contrastActiveBorder: k(null, null, "#F38518", "#006BBD"),
  "textLink.foreground": k("#006AB1", "#3794FF", "#21A6FF", "#0F4A85"),
  "textCodeBlock.background": k("#dcdcdc66", "#0a0a0a66", "#000000", "#F2F2F2"),
  "editor.background": k("#FFFFFF", "#1E1E1E", "#000000", "#FFFFFF"),
  "editorWidget.background": k("#F3F3F3", "#252526", "#0C141F", "#FFFFFF"),
  "editorLineNumber.foreground": k("#237893", "#858585", "#FFFFFF", "#292929"),
  "editorInfo.foreground": k("#0063d3", "#59a4f9", "#59a4f9", "#0063d3"),
  "editorWarning.foreground": k("#BF8803", "#CCA700", "#FFD370", "#895503"),
  "editorError.foreground": k("#E51400", "#F14C4C", "#F48771", "#B5200D"),
  "testing.iconPassed": k("#73c991", "#73c991", "#73c991", "#007100"),
  // = list.errorForeground, null in both high-contrast kinds.
  "testing.iconFailed": k("#B01011", "#F88070", null, null),
  "charts.foreground": k("#616161", "#CCCCCC", "#FFFFFF", "#292929"),
  "charts.blue": k("#0063d3", "#59a4f9", "#59a4f9", "#0063d3"),
  "charts.red": k("#E51400", "#F14C4C", "#F48771", "#B5200D"),
  "charts.yellow": k("#BF8803", "#CCA700", "#FFD370", "#895503"),
  "charts.orange": k("#d18616", "#d18616", "#AB5A00", "#0F4A85"),
  "charts.green": k("#388A34", "#89D185", "#89D185", "#374e06"),
  "charts.purple": k("#652D90", "#B180D7", "#B180D7", "#652D90"),
  "gitDecoration.addedResourceForeground": k("#587c0c", "#81b88b", "#a1e3ad", "#374e06"),
  "gitDecoration.modifiedResourceForeground": k("#895503", "#E2C08D", "#E2C08D", "#895503"),
  "gitDecoration.deletedResourceForeground": k("#ad0707", "#c74e39", "#c74e39", "#ad0707"),
  "diffEditor.insertedTextBackground": k("#9ccc2c40", "#9ccc2c33", null, null),
  "diffEditor.removedTextBackground": k("#ff000033", "#ff000033", null, null),
  "diffEditor.insertedTextBorder": k(null, null, "#33ff2eff", "#374E06"),
  "diffEditor.removedTextBorder": k(null, null, "#FF008F", "#AD0707"),
  "inputValidation.infoBackground": k("#D6ECF2", "#063B49", "#000000", "#FFFFFF"),
  "inputValidation.warningBackground": k("#F6F5D2", "#352A05", "#000000", "#FFFFFF"),
  "inputValidation.errorBackground": k("#F2DEDE", "#5A1D1D", "#000000", "#FFFFFF"),
  "list.hoverBackground": k("#F0F0F0", "#2A2D2E", "#FFFFFF1A", "#0F4A851A"),
  "list.activeSelectionBackground": k("#0060C0", "#04395E", null, "#0F4A851A"),
  "list.activeSelectionForeground": k("#FFFFFF", "#FFFFFF", null, null),
  "panel.border": k("#80808059", "#80808059", "#6FC3DF", "#0F4A85"),
  "panelTitle.activeBorder": k("#005FB8", "#0078D4", "#6FC3DF", "#B5200D"),
  "progressBar.background": k("#0E70C0", "#0E70C0", "#6FC3DF", "#0F4A85"),
  "tab.activeForeground": k("#333333", "#FFFFFF", "#FFFFFF", "#292929"),
  "tab.inactiveForeground": k("#333333B3", "#FFFFFF80", "#FFFFFF", "#292929"),
  "sideBarSectionHeader.foreground": k("#616161", "#CCCCCC", "#FFFFFF", "#292929"),
  "badge.background": k("#C4C4C4", "#4D4D4D", "#000000", "#0F4A85"),
  "badge.foreground": k("#333333", "#FFFFFF", "#FFFFFF", "#FFFFFF"),
  "button.background": k("#007ACC", "#0E639C", "#000000", "#0F4A85"),
  "button.foreground": "#FFFFFF",
  "button.hoverBackground": k("#0062A3", "#1177BB", "#000000", "#0F4A85"),
  "button.border": k(null, null, "#6FC3DF", "#0F4A85"),
  "button.secondaryBackground": k("#5F6A79", "#3A3D41", null, "#FFFFFF"),
  "button.secondaryForeground": k("#616161", "#CCCCCC", "#FFFFFF", "#292929"),
  "button.secondaryHoverBackground": k("#4C5561", "#45494E", null, null),
  "dropdown.background": k("#FFFFFF", "#3C3C3C", "#000000", "#FFFFFF"),
  "dropdown.foreground": k("#616161", "#F0F0F0", "#FFFFFF", "#292929"),
  "dropdown.border": k("#CECECE", "#3C3C3C", "#6FC3DF", "#0F4A85"),
  "debugToolBar.background": k("#F3F3F3", "#333333", "#000000", "#FFFFFF"),
};

function themeColors(file: string): Record<string, string> {
  const json = JSON.parse(readFileSync(path.join(THEMES_DIR, file), "utf8")) as { include?: string; colors?: Record<string, string> };
  const base = json.include ? themeColors(json.include) : {};
  return { ...base, ...(json.colors ?? {}) };
}

/** The body of a stylesheet setting `:root`'s variables as VS Code does for `theme`. */
export function themeCss(theme: Theme): string {
  if (!existsSync(THEMES_DIR)) {
    throw new Error(`themes: no theme files at ${THEMES_DIR} (the e2e suite's code-server download puts them there)`);
  }
  const colors: Record<string, string> = {};
  for (const [id, d] of Object.entries(REGISTRY)) {
    const v = typeof d === "string" || d === null ? d : (d[theme] ?? null);
    if (v) colors[id] = v;
  }
  Object.assign(colors, themeColors(THEME_FILES[theme]));
  const lines = Object.entries(colors).map(([id, v]) => `  --vscode-${id.replace(/\./g, "-")}: ${v};`);
  return `/* ${THEME_NAMES[theme]}: generated by test/webview/themes.ts from ${THEME_FILES[theme]} */
:root {
  --vscode-font-family: system-ui, "Ubuntu", "Droid Sans", sans-serif;
  --vscode-font-size: 13px;
  --vscode-font-weight: normal;
  --vscode-editor-font-family: "Droid Sans Mono", "monospace", monospace;
  --vscode-editor-font-size: 12px;
${lines.join("\n")}
}
`;
}

/** The classes VS Code puts on a webview's body for `theme`. */
export function bodyClass(theme: Theme): string {
  switch (theme) {
    case "light":
      return "vscode-light";
    case "dark":
      return "vscode-dark";
    case "hc":
      return "vscode-high-contrast";
    case "hc-light":
      return "vscode-high-contrast vscode-high-contrast-light";
  }
}
