/**
 * The synopsis of `casefile rules`, one line per subcommand: ruleCommands.ts prints it in its
 * usage errors and main.ts's COMMANDS table (`--help`) shows it. A module of its own so that
 * `--help` loads no rule-book code.
 */
export const RULES_USAGE = `  casefile rules <rule book> list [--all] [--json]
  casefile rules <rule book> add --statement TEXT [--value JSON] [--source-case ID] [--expires DATE|DATETIME] [--by NAME]
  casefile rules <rule book> confirm RULE_ID [--by NAME] [--self-confirm]
  casefile rules <rule book> edit RULE_ID [--statement TEXT] [--value JSON] [--expires DATE|DATETIME|never] [--by NAME]
  casefile rules <rule book> delete RULE_ID [--by NAME]
  casefile rules <rule book> history [RULE_ID] [--json]`;
