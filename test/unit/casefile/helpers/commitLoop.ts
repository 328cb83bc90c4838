/**
 * Child process for the durability test: opens the case file given as argv[2] and commits in a
 * loop until it is killed, printing each commit's number on stdout once `commit` has returned.
 * argv[3] is the compaction threshold, kept small so that kills land in compactions as well.
 * Commits continue from whatever the file already holds, so the test can kill it several times.
 */
import { SqlJsStore } from "../../../../src/casefile/sqlJsStore";

async function main(): Promise<void> {
  const [file, compactAt] = process.argv.slice(2);
  const store = await SqlJsStore.open(file!, { create: true, compactAtBytes: Number(compactAt) });
  let i = store.listEvents().length;
  process.stdout.write(`ready ${i}\n`);
  const pad = "x".repeat(700);
  for (;;) {
    i++;
    store.commit({
      values: [{ run: "r", key: "counter", version: i, value: { i, pad } }],
      events: [{ runId: "r", superstep: i, type: "checkpoint", at: new Date().toISOString(), data: { i } }],
    });
    // stdout to a pipe is synchronous on Linux: once this returns the parent can read the line.
    process.stdout.write(`${i}\n`);
  }
}

main().catch((e: unknown) => {
  process.stderr.write(String((e as Error).stack ?? e) + "\n");
  process.exit(1);
});
