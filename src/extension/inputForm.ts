import * as path from "node:path";
import * as vscode from "vscode";
import type { Json } from "../engine/records";
import { inputProblem, inputSkeleton } from "./debugInput";
import { fieldStart, fieldValue, formFields, keepInput, keptChoices, readKeptInputs, type FormField } from "./workflowInputs";

/**
 * The one input form for a new run: Run and Step (runCommands.ts) and F5 (debugConfig.ts) call
 * `askWorkflowInput`. A multi-step quick input built from the workflow's input JSON Schema: first
 * the inputs kept beside the workflow (named ones, the last one), "Fill in the form" and "Edit as
 * JSON"; the form asks each field in turn (enums and booleans as choices, text prefilled with the
 * last value or the default, the description as the prompt, checked as the person types); the
 * JSON editor is an untitled JSON document with the schema attached ($schema), for power users.
 * Nothing starts until the input passes; it is then kept as the last input.
 */

const FORM = "$(list-flat) Fill in the form";
const LAST_INPUT = "casefile.debug.lastInput";
const JSON_EDITOR = "$(json) Edit as JSON…";

export async function askWorkflowInput(
  extension: vscode.ExtensionContext,
  log: vscode.LogOutputChannel,
  workflow: vscode.Uri,
  title: string,
): Promise<Json | undefined> {
  const schema = await inputSchemaOf(extension, log, workflow);
  const { kept: fromFile, problem } = readKeptInputs(workflow.fsPath);
  // Before workflow.inputs.json, F5 kept the last input in workspaceState: still offered when the file has none.
  const earlier = extension.workspaceState.get<Record<string, Json>>(LAST_INPUT, {})[workflow.fsPath];
  const kept = fromFile.last === undefined && earlier !== undefined ? { ...fromFile, last: earlier } : fromFile;
  if (problem) log.warn(`input form: ${problem}`);
  const fields = formFields(schema);
  const choices = keptChoices(kept);
  type Item = vscode.QuickPickItem & { input?: Json; action?: "form" | "json" };
  const items: Item[] = [
    ...choices.map((c) => ({
      label: c.label,
      description: JSON.stringify(c.input),
      ...(c.last ? { detail: "last used" } : {}),
      input: c.input,
    })),
    ...(fields ? [{ label: FORM, action: "form" as const, description: "one field at a time, from the input schema" }] : []),
    { label: JSON_EDITOR, action: "json" as const, description: "the input as JSON, with the schema attached" },
  ];
  let picked: Item | undefined = items[0];
  if (items.length > 1) {
    picked = await vscode.window.showQuickPick(items, {
      title,
      placeHolder: choices.length ? "A kept input, or fill in the form" : "Fill in the form, or edit the input as JSON",
      ignoreFocusOut: true,
    });
  }
  if (!picked) return undefined;
  let input: Json | undefined;
  if (picked.action === "form") input = await fillForm(fields!, kept.last, title);
  else if (picked.action === "json") input = await editAsJson(workflow, schema, kept.last, title);
  else input = picked.input;
  if (input === undefined) return undefined;
  const wrong = inputProblem(JSON.stringify(input), schema);
  if (wrong) {
    void vscode.window.showErrorMessage(`Input for ${path.basename(workflow.fsPath)} refused: ${wrong}`);
    return undefined;
  }
  await extension.workspaceState.update(LAST_INPUT, { ...extension.workspaceState.get(LAST_INPUT, {}), [workflow.fsPath]: input });
  try {
    keepInput(workflow.fsPath, input);
  } catch (e) {
    log.warn(`input form: ${(e as Error).message}`);
  }
  return input;
}

/** Each field in turn; Escape at any step abandons the form (no run). */
async function fillForm(fields: FormField[], last: Json | undefined, title: string): Promise<Json | undefined> {
  const previous = (last && typeof last === "object" && !Array.isArray(last) ? last : {}) as Record<string, Json>;
  const out: Record<string, Json> = {};
  for (const [i, field] of fields.entries()) {
    const step = `${title} (${i + 1}/${fields.length}): ${field.key}${field.required ? "" : " (optional)"}`;
    if (field.kind === "choice" || field.kind === "boolean") {
      const options = (field.choices ?? []).map((c) => ({ label: String(c), value: c }));
      const start = previous[field.key] ?? field.default;
      options.sort(
        (a, b) => Number(JSON.stringify(b.value) === JSON.stringify(start)) - Number(JSON.stringify(a.value) === JSON.stringify(start)),
      );
      const none = { label: "(leave out)", value: undefined as Json | undefined };
      const pick = await vscode.window.showQuickPick([...options, ...(field.required ? [] : [none])], {
        title: step,
        placeHolder: field.description ?? field.key,
        ignoreFocusOut: true,
      });
      if (!pick) return undefined;
      if (pick.value !== undefined) out[field.key] = pick.value;
      continue;
    }
    const text = await vscode.window.showInputBox({
      title: step,
      prompt: field.description ?? `${field.key} (${field.kind})`,
      value: fieldStart(field, previous[field.key]),
      ignoreFocusOut: true,
      validateInput: (t) => {
        const v = fieldValue(field, t);
        return "problem" in v ? v.problem : undefined;
      },
    });
    if (text === undefined) return undefined;
    const v = fieldValue(field, text);
    if ("value" in v) out[field.key] = v.value;
  }
  return out;
}

/**
 * The raw editor: an untitled JSON document holding the input and `$schema` (a data URI of the
 * input schema, so the JSON language service completes and checks it); the person edits it and
 * picks "Use this input". The `$schema` key is taken off before the input is checked.
 */
async function editAsJson(
  workflow: vscode.Uri,
  schema: Record<string, unknown> | undefined,
  last: Json | undefined,
  title: string,
): Promise<Json | undefined> {
  const start = (last ?? inputSkeleton(schema)) as Json;
  const withSchema =
    schema && start && typeof start === "object" && !Array.isArray(start)
      ? {
          $schema: `data:application/json;base64,${Buffer.from(JSON.stringify({ ...schema, properties: { ...(schema.properties as object), $schema: { type: "string" } } })).toString("base64")}`,
          ...start,
        }
      : start;
  const doc = await vscode.workspace.openTextDocument({ language: "json", content: JSON.stringify(withSchema, null, 2) + "\n" });
  await vscode.window.showTextDocument(doc, { preview: true });
  for (;;) {
    const go = await vscode.window.showInformationMessage(
      `${title}: edit the input in the JSON editor, then use it.`,
      "Use this input",
      "Cancel",
    );
    if (go !== "Use this input") return undefined;
    let value: unknown;
    try {
      value = JSON.parse(doc.getText());
    } catch (e) {
      void vscode.window.showErrorMessage(`Not JSON: ${(e as Error).message}`);
      continue;
    }
    if (value && typeof value === "object" && !Array.isArray(value)) delete (value as Record<string, unknown>).$schema;
    const wrong = inputProblem(JSON.stringify(value), schema);
    if (wrong) {
      void vscode.window.showErrorMessage(`Input for ${path.basename(workflow.fsPath)}: ${wrong}`);
      continue;
    }
    return value as Json;
  }
}

/** The workflow's input schema, from the describe child process; undefined when it cannot say (then any JSON is taken). */
export async function inputSchemaOf(
  extension: vscode.ExtensionContext,
  log: vscode.LogOutputChannel,
  workflow: vscode.Uri,
): Promise<Record<string, unknown> | undefined> {
  try {
    const { describeInChild } = await import("../runner/describe.js");
    const described = await describeInChild(vscode.Uri.joinPath(extension.extensionUri, "dist", "describe.js").fsPath, workflow.fsPath, {
      timeoutMs: 20_000,
    });
    if (described.ok) return described.inputSchema;
    log.warn(`input form: ${workflow.fsPath} has problems: ${described.problems.map((p) => p.message).join("; ")}`);
  } catch (err) {
    log.warn(`input form: cannot read the input schema of ${workflow.fsPath}: ${String(err)}`);
  }
  return undefined;
}
