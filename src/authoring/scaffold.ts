/**
 * "Casefile: New Workflow": the template a new workflow file starts from, and the tsconfig.json
 * that makes `casefile` and `zod` type-check with no npm install. Plain functions (no vscode):
 * the command in src/extension/authoring.ts writes what these return; the tests type-check it.
 *
 * The extension ships the runtime's declarations in dist/types/ (build/types.mjs): `casefile`
 * is src/engine/index.ts's declarations, `zod` is zod's own. The tsconfig maps both names there
 * with `paths`; an existing tsconfig.json keeps everything else it says.
 */

/** A workflow file in the invoice example's shape: load facts, compute, propose, commit by rules, ask a person. */
export function workflowTemplate(name: string): string {
  return `/**
 * ${name}: load facts, compute, let an agent propose, commit by rules, ask a person when in doubt.
 * Run it with the Run / Step CodeLens above defineWorkflow; see its graph with Graph.
 * Input: { id, amount, limit }.
 */
import { agent, code, commit, defineWorkflow, edge, fact, loader, request, z, type StateOf } from "casefile";

const LIMIT_PCT = 5;

const Item = z.object({ id: z.string(), amount: z.number(), limit: z.number() });
const Proposal = z.object({
  action: z.enum(["approve", "reject", "escalate"]),
  reason: z.string().min(1),
  facts: z.array(z.string()),
});

const state = {
  item: fact(Item),
  excess: z.object({ amount: z.number(), pct: z.number() }),
  decision: z.object({ action: z.string(), verdict: z.string(), reason: z.string() }),
  review: z.object({ decision: z.string(), comment: z.string().optional() }),
};
type State = StateOf<typeof state>;

export default defineWorkflow({
  name: ${JSON.stringify(name)},
  version: 1,
  state,
  input: Item,
  start: "load",
  executors: {
    load: loader<State>({
      owns: ["item"],
      description: "Records the item as a fact, with where it came from",
      run(ctx) {
        const item = Item.parse(ctx.message);
        ctx.fact("item", item, { source: "input", sourceVersion: "1" });
        return "loaded";
      },
    }),

    measure: code<State>({
      reads: ["item"],
      owns: ["excess"],
      description: "Computes how far the amount exceeds the limit",
      run(ctx) {
        const item = ctx.state.item!.value;
        const amount = Math.round((item.amount - item.limit) * 100) / 100;
        const pct = item.limit ? Math.round((amount / item.limit) * 1000) / 10 : 0;
        ctx.write("excess", { amount, pct });
        return { amount, pct };
      },
    }),

    propose: agent<State>({
      reads: ["item", "excess"],
      description: "Proposes what to do",
      proposal: Proposal,
      model: { model: "gpt-4o-mini", params: { temperature: 0 } },
      budget: { soft: 1500, hard: 4000 },
      context: (s) => [
        {
          role: "system",
          content: 'Choose approve, reject or escalate. Cite the facts you relied on. Answer JSON: {"action", "reason", "facts"}.',
        },
        { role: "user", content: \`Item: \${JSON.stringify(s.item!.value)}. Excess: \${s.excess!.pct}%.\` },
      ],
    }),

    decide: commit<State>({
      reads: ["excess"],
      owns: ["decision"],
      description: "Applies the limit rule to the proposal",
      rules: {
        withinLimit: ({ proposal, state: s }) =>
          proposal.action !== "approve" || s.excess!.pct <= LIMIT_PCT
            ? { ok: true, message: "within the limit" }
            : { ok: false, message: \`\${s.excess!.pct}% exceeds the \${LIMIT_PCT}% limit\` },
      },
      apply(outcome, ctx) {
        const action = outcome.verdict === "accepted" ? String(outcome.proposal!.action) : "escalate";
        ctx.write("decision", { action, verdict: outcome.verdict, reason: outcome.reason });
        return { verdict: outcome.verdict, action };
      },
    }),

    review: request<State>({
      reads: ["item", "decision"],
      owns: ["review"],
      description: "A person reviews an escalated item",
      prompt: (s) => ({ title: \`Review \${s.item!.value.id}\`, detail: s.decision!.reason, options: ["approve", "reject"] }),
      onAnswer(answer, ctx) {
        ctx.write("review", { decision: answer.decision, comment: answer.comment });
        ctx.yield({ id: ctx.state.item!.value.id, outcome: \`\${answer.decision} by reviewer\` });
      },
    }),

    settle: code<State>({
      reads: ["item", "decision"],
      description: "Records the automatic outcome",
      run(ctx) {
        ctx.yield({ id: ctx.state.item!.value.id, outcome: ctx.state.decision!.action });
      },
    }),
  },
  edges: [
    edge("load", "measure"),
    edge("measure", "propose"),
    edge("propose", "decide"),
    edge("decide", "settle", { when: (m) => (m as { verdict: string }).verdict === "accepted", label: "accepted" }),
    edge("decide", "review", { when: (m) => (m as { verdict: string }).verdict !== "accepted", label: "escalated" }),
  ],
});
`;
}

/** A file name for a workflow name: lower-case words joined by dashes, `.workflow.ts`. */
export function workflowFileName(name: string): string {
  const base =
    name
      .trim()
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, "-")
      .replace(/^-+|-+$/g, "") || "workflow";
  return `${base}.ts`;
}

/**
 * The tsconfig.json for a workflow folder: `paths` for "casefile" and "zod" pointing at the
 * extension's declarations (absolute paths, `typesDir` = the extension's dist/types). An existing
 * tsconfig (JSON with comments and trailing commas allowed) keeps all else; returns the new text.
 */
export function mergeTsconfig(existing: string | undefined, typesDir: string): string {
  const config = (existing ? parseJsonc(existing) : {}) as { compilerOptions?: Record<string, unknown>; [k: string]: unknown };
  const posix = typesDir.replace(/\\/g, "/");
  const options = { ...(config.compilerOptions ?? {}) };
  const defaults: Record<string, unknown> = {
    target: "ES2022",
    module: "ESNext",
    moduleResolution: "Bundler",
    lib: ["ES2022", "DOM"],
    strict: true,
    skipLibCheck: true,
    noEmit: true,
    types: [],
  };
  for (const [k, v] of Object.entries(defaults)) if (!(k in options)) options[k] = v;
  options.paths = {
    ...((options.paths as Record<string, string[]> | undefined) ?? {}),
    casefile: [`${posix}/casefile/engine/index.d.ts`],
    zod: [`${posix}/zod/index.d.ts`],
  };
  return JSON.stringify({ ...config, compilerOptions: options }, null, 2) + "\n";
}

/** JSON with // and /* comments and trailing commas, as tsconfig.json allows. */
export function parseJsonc(text: string): unknown {
  let out = "";
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c === '"') {
      const end = stringEnd(text, i);
      out += text.slice(i, end);
      i = end;
    } else if (c === "/" && text[i + 1] === "/") {
      while (i < text.length && text[i] !== "\n") i++;
    } else if (c === "/" && text[i + 1] === "*") {
      const end = text.indexOf("*/", i + 2);
      i = end < 0 ? text.length : end + 2;
    } else {
      out += c;
      i++;
    }
  }
  return JSON.parse(out.replace(/,(\s*[}\]])/g, "$1"));
}

function stringEnd(text: string, start: number): number {
  let i = start + 1;
  while (i < text.length && text[i] !== '"') i += text[i] === "\\" ? 2 : 1;
  return i + 1;
}
