/**
 * `npm run demo`: the invoice example end to end on the embedded default (the scripted model,
 * no key, no server to start by hand). It starts the ERP stand-in on loopback, runs two invoices
 * through the real CLI (a 9% variance that the tolerance rule escalates to a person, and a 2%
 * one that is approved), answers the waiting review as a person would, and prints where each
 * case file is and what `casefile inspect` shows of it.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { mkdirSync, rmSync } from "node:fs";
import path from "node:path";
import { startErp } from "../erp/server";
import { invoiceSeed } from "./erpData";

const root = path.resolve(__dirname, "../..");
const cli = path.join(root, "bin", "casefile.js");
const outDir = path.join(root, "examples", "invoice", "cases");

/** Runs the real CLI in a child process (asynchronously: the ERP answers from this process). */
async function casefile(args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [cli, ...args], { env, encoding: "utf8" });
    return stdout + stderr;
  } catch (e) {
    const err = e as { status?: number; stdout?: string; stderr?: string };
    throw new Error(`casefile ${args[0]} exited ${err.status}:\n${err.stdout ?? ""}${err.stderr ?? ""}`);
  }
}

async function main(): Promise<void> {
  mkdirSync(outDir, { recursive: true });
  // The ERP stand-in starts from the seed every time: data left by an earlier demo may predate it.
  rmSync(path.join(outDir, ".erp"), { recursive: true, force: true });
  const erp = await startErp({ dataDir: path.join(outDir, ".erp"), seed: invoiceSeed });
  const env = { ...process.env, ERP_URL: erp.url };
  console.log(`ERP stand-in listening on ${erp.url}\n`);
  try {
    for (const invoiceId of ["INV-1001", "INV-1002"]) {
      const file = path.join(outDir, `${invoiceId}.casefile`);
      rmSync(file, { force: true });
      rmSync(`${file}.journal`, { force: true });
      console.log(
        `$ casefile run examples/invoice/workflow.ts --case-file ${path.relative(root, file)} --input '{"invoiceId":"${invoiceId}"}'`,
      );
      process.stdout.write(
        await casefile(
          ["run", path.join(root, "examples/invoice/workflow.ts"), "--case-file", file, "--input", JSON.stringify({ invoiceId })],
          env,
        ),
      );

      const inspected = JSON.parse(await casefile(["inspect", file, "--json"], env)) as { runs: { waiting: { id: string }[] }[] };
      const waiting = inspected.runs[0]?.waiting[0];
      if (waiting) {
        const answer = JSON.stringify({ decision: "reject", comment: "Price rise not agreed; ask for a credit note." });
        console.log(`\n$ casefile respond ${path.relative(root, file)} --request ${waiting.id} --answer '${answer}'`);
        process.stdout.write(await casefile(["respond", file, "--request", waiting.id, "--answer", answer], env));
      }
      console.log(`\n$ casefile inspect ${path.relative(root, file)}`);
      process.stdout.write(await casefile(["inspect", file], env));
      console.log("\n");
    }
    console.log(
      `Case files are in ${outDir}. Open one in VS Code with the Casefile extension, or run \`node bin/casefile.js inspect <file> --json\`.`,
    );
  } finally {
    await erp.close();
  }
}

main().catch((e: Error) => {
  console.error(e.message);
  process.exitCode = 1;
});
