import { z } from "zod";
import { agent, commit, edge, effect, fact, loader, type PlannedEffect, type StepContext } from "../../../../src/engine/executors";
import type { ModelProvider } from "../../../../src/engine/model";
import { defineWorkflow } from "../../../../src/engine/workflow";

/**
 * The refund case of the branch-effect tests (forkEffects.test.ts): a loader reads the claim, a
 * model proposes an amount, a commit step accepts it, and an effect posts the refund to the ERP
 * stand-in on loopback, which answers a repeated idempotency key with the first refund.
 */

const Proposal = z.object({ action: z.literal("refund"), amount: z.number(), reason: z.string(), facts: z.array(z.string()) });

/** The model's answer: what a live call (or a replay in live mode) proposes. Changed by the tests. */
export const model = { amount: 60 };
export const provider: ModelProvider = {
  name: "test-model",
  complete: async () => ({
    text: JSON.stringify({ action: "refund", amount: model.amount, reason: "damaged on arrival", facts: ["claim"] }),
  }),
};

/** What the ERP's idempotency lookup does: counted, and down when a test says so. */
export const lookups = { count: 0, down: false };

/**
 * `reconcile: false` leaves the effect without a lookup by key (a target that cannot say whether it
 * acted); `whileResolving` runs inside act when a resume resolves an open intent (ctx.from "resume").
 */
export function refundWorkflow(erpUrl: () => string, opts: { reconcile?: boolean; whileResolving?: (ctx: StepContext) => void } = {}) {
  return defineWorkflow({
    name: "refunds",
    version: 1,
    state: {
      claim: fact(z.object({ id: z.string(), amount: z.number() })),
      decision: z.object({ amount: z.number() }),
      refund: z.object({ id: z.string(), amount: z.number() }),
    },
    start: "load",
    executors: {
      load: loader({
        owns: ["claim"],
        run(ctx) {
          ctx.fact("claim", { id: "C-7", amount: 80 }, { source: "crm:claims/C-7", sourceVersion: '"v1"' });
          return "loaded";
        },
      }),
      propose: agent({
        reads: ["claim"],
        proposal: Proposal,
        model: { model: "test" },
        context: (s) => [{ role: "user", content: `Claim ${JSON.stringify(s.claim.value)}: how much to refund?` }],
      }),
      decide: commit({
        reads: ["claim"],
        owns: ["decision"],
        rules: { withinClaim: ({ proposal, state }) => Number(proposal.amount) <= state.claim.value.amount },
        apply(outcome, ctx) {
          if (outcome.verdict === "accepted") ctx.write("decision", { amount: Number(outcome.proposal!.amount) });
          return "decided";
        },
      }),
      refund: effect({
        reads: ["decision", "claim"],
        owns: ["refund"],
        intent: (s) => ({
          action: "refund",
          target: "erp:refunds",
          payload: { claim: s.claim.value.id, amount: s.decision.amount, currency: "EUR" },
          reliesOn: { claimAmount: s.claim.value.amount },
        }),
        async act(intent, ctx) {
          if (ctx.from === "resume") opts.whileResolving?.(ctx);
          const res = await fetch(`${erpUrl()}/refunds`, {
            method: "POST",
            headers: { "content-type": "application/json", "idempotency-key": intent.key },
            body: JSON.stringify(intent.payload),
          });
          const rec = (await res.json()) as { id: string; data: { amount: number } };
          return { id: rec.id, amount: rec.data.amount };
        },
        ...(opts.reconcile === false
          ? {}
          : {
              async reconcile(intent: PlannedEffect) {
                lookups.count++;
                if (lookups.down) throw new Error("ERP idempotency lookup unavailable (503)");
                const res = await fetch(`${erpUrl()}/idempotency/${encodeURIComponent(intent.key)}`);
                if (res.status === 404) return null;
                const rec = (await res.json()) as { id: string; data: { amount: number } };
                return { id: rec.id, amount: rec.data.amount };
              },
            }),
        done(reference, ctx) {
          ctx.write("refund", reference as { id: string; amount: number });
        },
      }),
    },
    edges: [edge("load", "propose"), edge("propose", "decide"), edge("decide", "refund")],
  });
}
