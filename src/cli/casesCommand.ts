import { CasefileError } from "../engine/errors";
import { PgQueue, isPostgresUrl } from "../pgstore/index";
import { CASES_FORMAT, CasesPageSchema, type CasesPage } from "../protocol/cases";
import { parseOptions, type Command } from "./args";

const MAX_LIMIT = 1000;

/**
 * `casefile cases --store URL`: one page of the store's cases (of the connection's tenant), with
 * where each stands, in creation order; `--status` keeps one status, `--after` takes the cursor the
 * page before printed. `--json` prints protocol/cases.ts's CasesPage, parsed before it is printed.
 */
export const cases: Command = async (args, io) => {
  const { values } = parseOptions(
    args,
    {
      store: { type: "string" },
      status: { type: "string" },
      after: { type: "string" },
      limit: { type: "string" },
      tenant: { type: "string" },
      json: { type: "boolean" },
    },
    0,
  );
  if (!values.store) throw new CasefileError("USAGE", "cases needs --store postgres://…");
  if (!isPostgresUrl(values.store)) throw new CasefileError("USAGE", "cases: --store takes a postgres:// URL");
  const limit = values.limit === undefined ? 50 : Number(values.limit);
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_LIMIT) {
    throw new CasefileError("USAGE", `--limit must be a whole number from 1 to ${MAX_LIMIT}, not "${values.limit}"`);
  }
  const queue = new PgQueue(values.store, values.tenant ?? io.env.CASEFILE_TENANT);
  let page: CasesPage;
  try {
    const got = queue.page({
      limit,
      ...(values.status ? { status: values.status } : {}),
      ...(values.after ? { after: values.after } : {}),
    });
    page = CasesPageSchema.parse({ v: CASES_FORMAT, tenant: queue.tenant, status: values.status ?? null, ...got });
  } finally {
    queue.close();
  }
  if (values.json) {
    io.out(JSON.stringify(page, null, 2));
    return 0;
  }
  const what = page.status ? `"${page.status}" cases` : "cases";
  if (page.cases.length === 0)
    io.out(values.after ? `no more ${what}` : `no ${what} in this store${page.tenant ? ` for tenant "${page.tenant}"` : ""}`);
  const width = Math.max(0, ...page.cases.map((c) => c.caseId.length));
  for (const c of page.cases) io.out(`${c.caseId.padEnd(width)}  ${c.status.padEnd(16)}  ${c.createdAt}`);
  if (page.next) io.out(`more: --after ${page.next}`);
  return 0;
};
