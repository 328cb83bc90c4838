import { mkdtempSync, rmSync } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { startErp } from "../../../examples/erp/server";
import type { ErpOptions, ErpServer } from "../../../examples/erp/server";

/**
 * The ERP stand-in for a describe block: started on loopback in this process (the extension host)
 * before its tests, with its data in a temporary folder, and stopped after. The runner inherits the
 * extension host's environment, and the example workflows read ERP_URL from it.
 */
export function useErp(seed: ErpOptions["seed"]): () => ErpServer {
  let erp: ErpServer | undefined;
  let dir: string | undefined;
  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "casefile-e2e-erp-"));
    erp = await startErp({ dataDir: dir, seed });
    process.env.ERP_URL = erp.url;
  });
  after(async () => {
    delete process.env.ERP_URL;
    await erp?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
  return () => {
    if (!erp) throw new Error("the ERP stand-in is not running (useErp starts it in a before hook)");
    return erp;
  };
}
