/**
 * The ERP stand-in for the examples, as a long-running process: `npx tsx erp/serve.ts` from
 * examples/ (the background task "ERP stand-in" in examples/.vscode/tasks.json, which the
 * examples' launch configurations start first). It holds the records of both examples (the
 * invoice example's invoices, orders and agreements; the supplier example's applications and tax
 * registry), starts from them every time, and listens on loopback until stopped.
 *
 *   --port N (or ERP_PORT): the port; when neither is given, any free port.
 *
 * Once listening it writes `ERP_URL=<address>` to examples/.erp/erp.env: the examples' launch
 * configurations read it (`envFile`), and so does the Workflows view's Run (launchTask.ts), so
 * the address reaches the workflow through its environment and no port is fixed anywhere. The
 * task's problem matcher knows the server is ready when it prints "ERP stand-in listening on".
 */
import { rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import { invoiceSeed } from "../invoice/erpData";
import { supplierSeed } from "../supplier/erpSeed";
import { startErp } from "./server";

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { port: { type: "string" } } });
  const raw = values.port ?? process.env.ERP_PORT ?? "0";
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--port ${raw}: not a port number`);
  const dataDir = path.join(__dirname, "..", ".erp");
  rmSync(dataDir, { recursive: true, force: true });
  console.log("ERP stand-in starting");
  const erp = await startErp({ port, dataDir, seed: { ...invoiceSeed, ...supplierSeed(10) } });
  // Written after listening, so a reader that sees the file can connect.
  writeFileSync(path.join(dataDir, "erp.env"), `ERP_URL=${erp.url}\n`);
  console.log(`ERP stand-in listening on ${erp.url}`);
  const stop = (): void => void erp.close().then(() => process.exit(0));
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
}

main().catch((e: Error) => {
  // One line the task's problem matcher reads as an error (a port in use, a bad --port).
  console.error(`ERP stand-in failed: erp/serve.ts: ${e.message}`);
  process.exitCode = 1;
});
