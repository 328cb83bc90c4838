/**
 * The describe child process (dist/describe.js): bundles and builds one workflow file, reports its
 * graph or its problems to the parent (one IPC message, src/protocol/describe.ts), and exits.
 * Usage (by the extension host): fork(dist/describe.js, [workflowPath]).
 */
import { describeWorkflow } from "./describe";

async function main(): Promise<void> {
  const file = process.argv[2];
  if (!process.send || !file) {
    process.stderr.write("describe: must be forked with a workflow path and an IPC channel\n");
    process.exit(2);
  }
  const described = await describeWorkflow(file);
  process.send(described, () => process.disconnect());
}

void main();
