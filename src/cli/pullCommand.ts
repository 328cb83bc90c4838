import { CasefileError } from "../engine/errors";
import { isPostgresUrl } from "../pgstore/index";
import { pullCase } from "../runner/pull";
import { parseOptions, type Command } from "./args";

/** `casefile pull --store URL --case ID --out F.casefile`: one case of a store into a local case file (runner/pull.ts). */
export const pull: Command = async (args, io) => {
  const { values } = parseOptions(
    args,
    { store: { type: "string" }, case: { type: "string" }, out: { type: "string" }, tenant: { type: "string" } },
    0,
  );
  if (!values.store || !values.case || !values.out)
    throw new CasefileError("USAGE", "pull needs --store URL, --case ID and --out F.casefile");
  if (!isPostgresUrl(values.store)) throw new CasefileError("USAGE", "pull: --store takes a postgres:// URL");
  const r = await pullCase(values.store, values.case, values.out, { tenant: values.tenant ?? io.env.CASEFILE_TENANT });
  io.out(`pulled case ${values.case}: ${r.runs} run(s), ${r.checkpoints} checkpoint(s), ${r.events} event(s)`);
  io.out(`case file: ${r.file}`);
  return 0;
};
