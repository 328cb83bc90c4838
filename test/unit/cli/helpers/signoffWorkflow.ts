/**
 * The source of a one-step workflow whose request asks a person to sign off 2 pallets and
 * writes the decision: what the CLI tests of answering (answered once, who is acting) run.
 * A version above 1 carries a migration from version 1 that keeps the state as it is.
 */
export function signoffWorkflow(version = 1): string {
  return `import { defineWorkflow, request, z } from "casefile";
export default defineWorkflow({
  name: "shipment",
  version: ${version},
  state: { signoff: z.string() },
  start: "approve",
  executors: {
    approve: request({
      owns: ["signoff"],
      prompt: () => ({ title: "Sign off 2 pallets", options: ["approve", "reject"] }),
      onAnswer: (answer, ctx) => ctx.write("signoff", answer.decision),
    }),
  },
  edges: [],
  ${version > 1 ? "migrations: { 2: (s) => s }," : ""}
});
`;
}
