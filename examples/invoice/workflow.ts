/**
 * Invoice variance: the worked example of the design.
 *
 * A loader reads the invoice, its purchase order and the supplier's framework agreement from the
 * ERP (facts, with their ETags); the agreement is a long text, so the agent is shown only its
 * price schedule, an extract the engine takes from it and takes again whenever the agreement's
 * version changes. Code computes the variance; an agent step proposes approve_variance,
 * request_credit_note or escalate, citing the facts (and the extract) it relied on; the commit
 * step applies the tolerance rule, so an
 * "approve" for a 9% variance becomes an escalation with the reason; an escalated case waits
 * for a person's review.
 *
 * Input: { invoiceId, erpUrl? }. The ERP's address defaults to $ERP_URL.
 */
import http from "node:http";
import https from "node:https";
import { agent, code, commit, defineWorkflow, edge, extract, extractProvenance, fact, loader, request, z, type StateOf } from "casefile";

const TOLERANCE_PCT = 5;

const Invoice = z.object({
  id: z.string(),
  supplier: z.string(),
  poNumber: z.string(),
  currency: z.string(),
  lines: z.array(z.object({ sku: z.string(), qty: z.number(), unitPrice: z.number() })),
  total: z.number(),
});
const PurchaseOrder = z.object({
  number: z.string(),
  supplier: z.string(),
  /** The framework agreement the order is placed under. */
  contract: z.string(),
  currency: z.string(),
  lines: z.array(z.object({ sku: z.string(), qty: z.number(), unitPrice: z.number() })),
  total: z.number(),
});
const Contract = z.object({ id: z.string(), supplier: z.string(), text: z.string() });
const PriceTerms = z.object({
  unitPrices: z.record(z.string(), z.number()),
  priceChangeNoticeDays: z.number().int(),
});

/** Takes Schedule A (the unit price table) and the price-change clause from an agreement's text. */
function priceTermsOf(contract: z.infer<typeof Contract>): z.infer<typeof PriceTerms> {
  const schedule = contract.text.split(/^Schedule A\b.*$/m)[1];
  if (schedule === undefined) throw new Error(`agreement ${contract.id} has no Schedule A`);
  const unitPrices: Record<string, number> = {};
  for (const m of schedule.matchAll(/^\| ([A-Z][\w-]*) \| ([\d.]+) \|$/gm)) unitPrices[m[1]!] = Number(m[2]);
  const notice = /price change needs (\d+) days/i.exec(contract.text);
  if (!notice) throw new Error(`agreement ${contract.id} has no price-change clause`);
  return { unitPrices, priceChangeNoticeDays: Number(notice[1]) };
}

const Proposal = z.object({
  action: z.enum(["approve_variance", "request_credit_note", "escalate"]),
  reason: z.string().min(1),
  facts: z.array(z.string()),
});
const Decision = z.object({
  action: z.enum(["approve_variance", "request_credit_note", "escalate"]),
  verdict: z.enum(["accepted", "rejected", "escalated"]),
  reason: z.string(),
  decidedBy: z.string(),
});

const state = {
  invoice: fact(Invoice),
  po: fact(PurchaseOrder),
  contract: fact(Contract),
  priceTerms: extract(PriceTerms, {
    from: "contract",
    description: "Schedule A and the price-change clause of the framework agreement",
    run: (doc: z.infer<typeof Contract>) => priceTermsOf(doc),
  }),
  variance: z.object({ amount: z.number(), pct: z.number() }),
  decision: Decision,
  review: z.object({ decision: z.string(), comment: z.string().optional() }),
};
type State = StateOf<typeof state>;

/**
 * Reads one record from the ERP: its JSON body and its ETag (the fact's source version). With
 * node:http(s) rather than fetch: Node 20 loads fetch's implementation (undici) on first use,
 * ~50 ms of CPU, which in a run this short is a good part of the whole.
 */
function getFact(base: string, path: string): Promise<{ body: { data: unknown }; etag: string }> {
  const url = `${base}${path}`;
  return new Promise((resolve, reject) => {
    (url.startsWith("https:") ? https : http)
      .get(url, (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => (text += chunk));
        res.on("end", () => {
          const status = res.statusCode ?? 0;
          if (status < 200 || status >= 300) reject(new Error(`ERP ${path} answered ${status}`));
          else resolve({ body: JSON.parse(text) as { data: unknown }, etag: String(res.headers.etag ?? "none") });
        });
      })
      .on("error", reject);
  });
}

export default defineWorkflow({
  name: "invoice-variance",
  version: 1,
  state,
  input: z.object({
    invoiceId: z.string().min(1).describe("The invoice to check against its purchase order, e.g. INV-1001"),
    erpUrl: z.string().url().optional().describe("The ERP's address; left out, $ERP_URL (the ERP stand-in task sets it)"),
  }),
  // One case file per case: cases/INV-1001.casefile beside this file.
  caseId: (input: { invoiceId: string }) => input.invoiceId,
  start: "load",
  executors: {
    load: loader<State>({
      owns: ["invoice", "po", "contract"],
      description: "Reads the invoice, its PO and the supplier's framework agreement from the ERP",
      async run(ctx) {
        const input = ctx.message as { invoiceId: string; erpUrl?: string };
        const base = input.erpUrl ?? process.env.ERP_URL;
        if (!base) throw new Error("no ERP address: pass erpUrl in the input or set ERP_URL");
        const inv = await getFact(base, `/invoices/${encodeURIComponent(input.invoiceId)}`);
        const invoice = Invoice.parse(inv.body.data);
        ctx.fact("invoice", invoice, { source: `${base}/invoices/${invoice.id}`, sourceVersion: inv.etag });
        const po = await getFact(base, `/purchase-orders/${encodeURIComponent(invoice.poNumber)}`);
        const order = PurchaseOrder.parse(po.body.data);
        ctx.fact("po", order, {
          source: `${base}/purchase-orders/${invoice.poNumber}`,
          sourceVersion: po.etag,
        });
        const contract = await getFact(base, `/contracts/${encodeURIComponent(order.contract)}`);
        ctx.fact("contract", Contract.parse(contract.body.data), {
          source: `${base}/contracts/${order.contract}`,
          sourceVersion: contract.etag,
        });
        return "loaded";
      },
    }),

    variance: code<State>({
      reads: ["invoice", "po"],
      owns: ["variance"],
      description: "Computes the variance between invoice and PO",
      run(ctx) {
        const inv = ctx.state.invoice!.value;
        const po = ctx.state.po!.value;
        const amount = Math.round((inv.total - po.total) * 100) / 100;
        const pct = Math.round((amount / po.total) * 1000) / 10;
        ctx.write("variance", { amount, pct });
        return { amount, pct };
      },
    }),

    propose: agent<State>({
      reads: ["invoice", "po", "variance", "priceTerms"],
      description: "Proposes what to do about the variance",
      proposal: Proposal,
      model: { model: "gpt-4o-mini", params: { temperature: 0 } },
      budget: { soft: 1500, hard: 4000 },
      context: (s) => [
        {
          role: "system",
          content:
            "You review supplier invoices that do not match their purchase order. Choose one action: " +
            "approve_variance, request_credit_note or escalate. Cite the facts you relied on by name. " +
            'Answer JSON: {"action", "reason", "facts"}.',
        },
        {
          role: "user",
          content: [
            `Fact "invoice" (source ${s.invoice!.provenance.source}, version ${s.invoice!.provenance.sourceVersion}):`,
            JSON.stringify(s.invoice!.value),
            `Fact "po" (source ${s.po!.provenance.source}, version ${s.po!.provenance.sourceVersion}):`,
            JSON.stringify(s.po!.value),
            `Extract "priceTerms" of agreement ${s.po!.value.contract} (${extractProvenance(s.priceTerms!).source}):`,
            JSON.stringify(s.priceTerms!.value),
            `Variance: ${s.variance!.amount} ${s.invoice!.value.currency} (${s.variance!.pct}% of the PO).`,
            "Decide: what should happen to this invoice?",
          ].join("\n"),
        },
      ],
    }),

    decide: commit<State>({
      reads: ["variance"],
      owns: ["decision"],
      description: "Applies the tolerance rule to the proposal",
      rules: {
        withinTolerance: ({ proposal, state: s }) => {
          if (proposal.action !== "approve_variance") return { ok: true, message: "not an approval" };
          const pct = Math.abs(s.variance!.pct);
          return pct <= TOLERANCE_PCT
            ? { ok: true, message: `variance ${pct}% is within the ${TOLERANCE_PCT}% tolerance` }
            : { ok: false, message: `variance ${pct}% exceeds the ${TOLERANCE_PCT}% tolerance for approval` };
        },
      },
      apply(outcome, ctx) {
        const action = outcome.verdict === "accepted" ? (outcome.proposal!.action as State["decision"] & string) : "escalate";
        ctx.write("decision", { action: action as "escalate", verdict: outcome.verdict, reason: outcome.reason, decidedBy: "rules" });
        return { verdict: outcome.verdict, action };
      },
    }),

    review: request<State>({
      reads: ["invoice", "variance", "decision"],
      owns: ["review"],
      description: "A person reviews an escalated invoice",
      prompt: (s) => ({
        title: `Review invoice ${s.invoice!.value.id}: variance ${s.variance!.pct}%`,
        detail: s.decision!.reason,
        options: ["approve", "reject"],
      }),
      onAnswer(answer, ctx) {
        ctx.write("review", { decision: answer.decision, comment: answer.comment });
        ctx.yield({ invoice: ctx.state.invoice!.value.id, outcome: `${answer.decision} by reviewer` });
      },
    }),

    settle: code<State>({
      reads: ["invoice", "decision"],
      description: "Records the automatic outcome",
      run(ctx) {
        ctx.yield({ invoice: ctx.state.invoice!.value.id, outcome: ctx.state.decision!.action });
      },
    }),
  },
  edges: [
    edge("load", "variance"),
    edge("variance", "propose"),
    edge("propose", "decide"),
    edge("decide", "settle", { when: (m) => (m as { verdict: string }).verdict === "accepted", label: "accepted" }),
    edge("decide", "review", { when: (m) => (m as { verdict: string }).verdict !== "accepted", label: "escalated" }),
  ],
});
