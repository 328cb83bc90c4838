/**
 * `npx tsx examples/supplier/demo.ts` (after `npm run build`): the supplier-onboarding example end
 * to end on the scripted model. It starts the ERP stand-in on loopback, onboards APP-0000 through
 * the real CLI (three effects, each written as an intent first), runs APP-0009 (a tax number the
 * registry does not know: the commit step rejects it and nothing is written to the ERP), and
 * prints the ERP's own log of writes.
 */
import { execFile } from "node:child_process";
import { mkdirSync, rmSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { startErp } from "../erp/server";
import { supplierSeed } from "./erpSeed";

const root = path.resolve(__dirname, "../..");
const cli = path.join(root, "bin", "casefile.js");
const outDir = path.join(root, "examples", "supplier", "cases");

async function casefile(args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [cli, ...args], { env, encoding: "utf8" });
    return stdout + stderr;
  } catch (e) {
    const err = e as { code?: number; stdout?: string; stderr?: string };
    return `(exit ${err.code})\n${err.stdout ?? ""}${err.stderr ?? ""}`;
  }
}

async function main(): Promise<void> {
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(outDir, { recursive: true });
  const erp = await startErp({ dataDir: path.join(outDir, ".erp"), seed: supplierSeed(10) });
  const env = { ...process.env, ERP_URL: erp.url };
  try {
    for (const app of ["APP-0000", "APP-0009"]) {
      const file = path.join(outDir, `${app}.casefile`);
      console.log(
        `$ casefile run examples/supplier/workflow.ts --case-file ${path.relative(root, file)} --input '{"applicationId":"${app}"}'`,
      );
      process.stdout.write(
        await casefile(
          ["run", path.join(root, "examples/supplier/workflow.ts"), "--case-file", file, "--input", JSON.stringify({ applicationId: app })],
          env,
        ),
      );
      console.log(`\n$ casefile inspect ${path.relative(root, file)}`);
      process.stdout.write(await casefile(["inspect", file], env));
      console.log();
    }
    console.log("The ERP's own log of writes (one per effect):");
    for (const w of erp.snapshot().log ?? [])
      console.log(`  ${w.method} ${w.collection}/${w.id} -> v${w.version}  (Idempotency-Key ${w.idempotencyKey})`);
  } finally {
    await erp.close();
  }
}

main().catch((e: Error) => {
  console.error(e.message);
  process.exitCode = 1;
});
