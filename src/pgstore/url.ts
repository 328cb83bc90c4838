/**
 * A store URL as the CLI and the runner name it, without loading the Postgres store: a run on a case
 * file asks whether --store names Postgres and labels it, and must not pay for node-postgres's
 * connection thread to do so (issue 16, cold start).
 */

/** Whether a --store value names a Postgres store. */
export function isPostgresUrl(s: string): boolean {
  return /^postgres(ql)?:\/\//i.test(s);
}

/** The URL as a person may see it: the password replaced. */
export function redact(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    return u.toString();
  } catch {
    return "(a store URL that does not parse)";
  }
}
