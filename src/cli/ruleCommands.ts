import { existsSync, rmSync } from "node:fs";
import path from "node:path";
import { journalPath, lockPath, openCaseFile } from "../casefile/index";
import { openRuleBookFile } from "../runner/ruleBook";
import { SHORT_WRITER_LOCK_WAIT_MS } from "../runner/storeLocation";
import { CasefileError } from "../engine/errors";
import type { Json, RuleRecord } from "../engine/records";
import {
  addRule,
  checkNewRule,
  confirmRule,
  deleteRule,
  editRule,
  parseExpiry,
  ruleHistory,
  ruleState,
  type RuleChanges,
} from "../engine/rules";
import { actingUser, jsonOption, parseOptions, type Command, type Io } from "./args";
import { RULES_USAGE } from "./rulesUsage";

/**
 * `casefile rules <rule book> list|add|confirm|edit|delete|history ...`
 *
 * The rule book is a case file holding business rules (see src/engine/rules.ts for why one
 * shared book rather than rules per case file); `run` and `resume` read it from --rules,
 * $CASEFILE_RULES or `rules.casefile` beside the workflow. Every change is written with an audit
 * event naming who made it (--by, else $USER) and the rule before and after.
 */
export { RULES_USAGE };

export const rules: Command = async (args, io) => {
  const [book, sub, ...rest] = args;
  if (!book || !sub) throw new CasefileError("USAGE", `rules needs a rule book and a subcommand:\n${RULES_USAGE}`);
  const handler = SUBCOMMANDS[sub];
  if (!handler) throw new CasefileError("USAGE", `unknown rules subcommand "${sub}"; use one of ${Object.keys(SUBCOMMANDS).join(", ")}`);
  return handler(path.resolve(book), rest, io);
};

type Sub = (book: string, args: string[], io: Io) => Promise<number>;

const SUBCOMMANDS: Record<string, Sub> = {
  async list(book, args, io) {
    const { values } = parseOptions(args, { all: { type: "boolean" }, json: { type: "boolean" } }, 0);
    const store = await openRuleBookFile(book, { readOnly: true });
    try {
      const now = new Date().toISOString();
      const listed = store.listRules(values.all === true).map((r) => ({ ...r, state: ruleState(r, now) }));
      if (values.json) io.out(JSON.stringify({ ruleBook: book, rules: listed }, null, 2));
      else if (listed.length === 0) io.out(`no rules in ${book}`);
      else for (const r of listed) io.out(formatRule(r, r.state));
      return 0;
    } finally {
      store.close();
    }
  },

  async add(book, args, io) {
    const { values } = parseOptions(
      args,
      {
        statement: { type: "string" },
        value: { type: "string" },
        "source-case": { type: "string" },
        expires: { type: "string" },
        by: { type: "string" },
      },
      0,
    );
    if (!values.statement) throw new CasefileError("USAGE", "rules add needs --statement TEXT");
    // Checked before the book is opened: a refused rule must not create (or touch) a book.
    const input = checkNewRule({
      statement: values.statement,
      value: jsonOption(values.value, "value") ?? null,
      proposedBy: who(values.by, io),
      ...(values["source-case"] ? { sourceCase: values["source-case"] } : {}),
      ...(values.expires !== undefined ? { expiresAt: values.expires } : {}),
    });
    return withBook(book, true, (store) => {
      const rule = addRule(store, input);
      io.out(`added ${rule.id} (proposed: it enters no context until confirmed)`);
    });
  },

  async confirm(book, args, io) {
    const { values, positionals } = parseOptions(args, { by: { type: "string" }, "self-confirm": { type: "boolean" } }, 1);
    const id = ruleId(positionals, "confirm");
    const by = who(values.by, io);
    return withBook(book, false, (store) => {
      const rule = confirmRule(store, id, by, undefined, { selfConfirm: values["self-confirm"] === true });
      io.out(
        `confirmed ${rule.id} by ${rule.confirmedBy} at ${rule.confirmedAt}` +
          (rule.proposedBy === by ? " (self-confirmed: recorded in its history)" : ""),
      );
    });
  },

  async edit(book, args, io) {
    const { values, positionals } = parseOptions(
      args,
      {
        statement: { type: "string" },
        value: { type: "string" },
        expires: { type: "string" },
        by: { type: "string" },
      },
      1,
    );
    const id = ruleId(positionals, "edit");
    const changes: RuleChanges = {};
    if (values.statement !== undefined) changes.statement = values.statement;
    if (values.value !== undefined) changes.value = jsonOption(values.value, "value") as Json;
    if (values.expires !== undefined) changes.expiresAt = values.expires === "never" ? null : parseExpiry(values.expires);
    if (Object.keys(changes).length === 0) throw new CasefileError("USAGE", "rules edit needs --statement, --value or --expires");
    const by = who(values.by, io);
    return withBook(book, false, (store) => {
      const rule = editRule(store, id, changes, by);
      io.out(`edited ${rule.id}` + (rule.confirmedBy ? "" : " (its meaning changed: confirm it again before it enters a context)"));
    });
  },

  async delete(book, args, io) {
    const { values, positionals } = parseOptions(args, { by: { type: "string" } }, 1);
    const id = ruleId(positionals, "delete");
    const by = who(values.by, io);
    return withBook(book, false, (store) => {
      deleteRule(store, id, by);
      io.out(`deleted ${id} (kept in the book's history)`);
    });
  },

  async history(book, args, io) {
    const { values, positionals } = parseOptions(args, { json: { type: "boolean" } }, 1);
    const store = await openRuleBookFile(book, { readOnly: true });
    try {
      const id = positionals[0];
      const events = ruleHistory(store, id);
      if (id !== undefined && events.length === 0 && !store.listRules(true).some((r) => r.id === id)) {
        throw new CasefileError("UNKNOWN_RULE", `no rule "${id}" in ${book}`, { rule: id });
      }
      if (values.json) io.out(JSON.stringify({ ruleBook: book, events }, null, 2));
      else
        for (const e of events) {
          const d = e.data as { op: string; rule: string; by: string; selfConfirmed?: boolean; before?: unknown; after?: unknown };
          const changes = d.op === "edited" ? changedFields(d.before, d.after) : "";
          io.out(`${e.at}  ${d.rule}  ${d.op} by ${d.by}${d.selfConfirmed ? " (self-confirmed)" : ""}${changes ? `: ${changes}` : ""}`);
        }
      return 0;
    } finally {
      store.close();
    }
  },
};

/**
 * Opens the book as its writer (its lock keeps two editors from interleaving; the second waits
 * for the first, up to SHORT_WRITER_LOCK_WAIT_MS) and always closes it. A book this call
 * created is removed again (with its journal) when the change is refused: a refusal leaves
 * nothing behind.
 */
async function withBook(book: string, create: boolean, change: (store: Awaited<ReturnType<typeof openCaseFile>>) => void): Promise<number> {
  const created = create && !existsSync(book);
  const opts = { waitForLockMs: SHORT_WRITER_LOCK_WAIT_MS };
  const store = create ? await openCaseFile(book, { ...opts, create }) : await openRuleBookFile(book, opts);
  try {
    change(store);
  } catch (e) {
    store.close();
    if (created) for (const f of [book, journalPath(book), lockPath(book)]) rmSync(f, { force: true });
    throw e;
  }
  store.close();
  return 0;
}

function ruleId(positionals: string[], sub: string): string {
  const id = positionals[0];
  if (!id) throw new CasefileError("USAGE", `rules ${sub} needs a RULE_ID (see rules list)`);
  return id;
}

/** Who makes a change (args.ts's actingUser); an audit event without a name is refused. */
function who(by: string | undefined, io: Io): string {
  const name = actingUser(by, io);
  if (!name) throw new CasefileError("USAGE", "say who makes this change with --by NAME");
  return name;
}

function formatRule(r: RuleRecord, state: string): string {
  const lines = [`${r.id}  [${state.replace("_", " ")}]  ${r.statement}`];
  if (r.value !== null) lines.push(`    value: ${JSON.stringify(r.value)}`);
  lines.push(
    `    proposed by ${r.proposedBy}${r.sourceCase ? ` (case ${r.sourceCase})` : ""}` +
      (r.confirmedBy ? `; confirmed by ${r.confirmedBy} at ${r.confirmedAt}` : "; not confirmed") +
      (r.expiresAt ? `; expires ${r.expiresAt}` : ""),
  );
  return lines.join("\n");
}

/** What an edit changed, for `history`: each of the fields a person sets, before -> after. */
function changedFields(before: unknown, after: unknown): string {
  const b = (before ?? {}) as Record<string, unknown>;
  const a = (after ?? {}) as Record<string, unknown>;
  const shown = (v: unknown) => (v === undefined ? "never" : JSON.stringify(v));
  const out: string[] = [];
  for (const field of ["statement", "value", "expiresAt"] as const) {
    if (JSON.stringify(b[field]) !== JSON.stringify(a[field])) out.push(`${field} ${shown(b[field])} -> ${shown(a[field])}`);
  }
  if (b.confirmedBy !== undefined && a.confirmedBy === undefined) out.push(`confirmation by ${String(b.confirmedBy)} withdrawn`);
  return out.join("; ");
}
