/**
 * Supplier onboarding: the effects example.
 *
 * A loader reads the supplier's application and documents from the ERP (a fact, with its ETag);
 * a second loader checks the tax number against the tax registry; an agent step proposes
 * whether to onboard and on which payment terms, given the business rules in force; the commit
 * step checks the tax registration and the terms policy. An accepted case then has three
 * effects on the ERP, each written as an intent first: create the supplier, then (together)
 * request the bank details and set the payment terms. Each effect re-reads the record it relies
 * on before acting, sends its idempotency key, and the payment terms are a conditional write
 * (If-Match on the supplier's version).
 *
 * Input: { applicationId, erpUrl? }. The ERP's address defaults to $ERP_URL.
 */
import {
  agent,
  code,
  commit,
  defineWorkflow,
  edge,
  effect,
  fact,
  loader,
  PreconditionFailedError,
  z,
  type LiveRecord,
  type StateOf,
} from "casefile";

const TERMS_ALLOWED = [14, 30, 45, 60];

const Application = z.object({
  /** Set on the fact (the id it was read under); the ERP record itself does not carry it. */
  applicationId: z.string().optional(),
  legalName: z.string(),
  taxNumber: z.string(),
  country: z.string(),
  address: z.string(),
  contactEmail: z.string(),
  requestedTermsDays: z.number().int(),
  documents: z.array(z.object({ kind: z.string(), text: z.string() })),
});
const TaxRegistration = z.object({
  taxNumber: z.string(),
  status: z.enum(["active", "inactive", "not_found"]),
  name: z.string().optional(),
});
const Proposal = z.object({
  action: z.enum(["onboard", "reject", "escalate"]),
  reason: z.string().min(1),
  facts: z.array(z.string()),
  paymentTermsDays: z.number().int(),
});
const Decision = z.object({
  verdict: z.enum(["accepted", "rejected", "escalated"]),
  reason: z.string(),
  paymentTermsDays: z.number().int().optional(),
});
const Ref = z.object({ id: z.string(), version: z.string() });

const state = {
  application: fact(Application),
  taxCheck: fact(TaxRegistration),
  decision: Decision,
  supplier: Ref,
  bankRequest: Ref,
  paymentTerms: Ref,
};
type State = StateOf<typeof state>;
type Input = { applicationId: string; erpUrl?: string };

function erpBase(input: Input): string {
  const base = input.erpUrl ?? process.env.ERP_URL;
  if (!base) throw new Error("no ERP address: pass erpUrl in the input or set ERP_URL");
  return base;
}

/** The ERP's base address travels in the application fact's source, so every later step finds it. */
function baseOf(s: State): string {
  return s.application!.provenance.source.replace(/\/applications\/.*$/, "");
}

interface ErpRecord {
  id: string;
  version: number;
  data: Record<string, unknown>;
}

async function erp(
  base: string,
  method: string,
  path: string,
  opts: { body?: unknown; key?: string; ifMatch?: string } = {},
): Promise<{ status: number; body: unknown; etag: string }> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (opts.key) headers["idempotency-key"] = opts.key;
  if (opts.ifMatch) headers["if-match"] = opts.ifMatch;
  const init = { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) };
  let res: Response;
  try {
    res = await fetch(`${base}${path}`, init);
  } catch (e) {
    // A connection the server closed while idle fails before the request is sent. One retry is
    // safe for every call here: reads change nothing, and every write carries its idempotency key.
    try {
      res = await fetch(`${base}${path}`, init);
    } catch (again) {
      const cause = (again as { cause?: { message?: string } }).cause?.message ?? (e as Error).message;
      throw new Error(`ERP ${method} ${path} unreachable: ${cause}`);
    }
  }
  return { status: res.status, body: await res.json(), etag: res.headers.get("etag") ?? "none" };
}

async function readRecord(base: string, path: string): Promise<{ rec: ErpRecord; etag: string }> {
  const r = await erp(base, "GET", path);
  if (r.status !== 200) throw new Error(`ERP GET ${path} answered ${r.status}: ${JSON.stringify(r.body)}`);
  return { rec: r.body as ErpRecord, etag: r.etag };
}

/** A create or update answered: the reference kept in the intent is the record's id and version. */
function referenceOf(r: { status: number; body: unknown }, what: string): { id: string; version: string } {
  if (r.status !== 200 && r.status !== 201) throw new Error(`ERP ${what} answered ${r.status}: ${JSON.stringify(r.body)}`);
  const rec = r.body as ErpRecord;
  return { id: rec.id, version: `"v${rec.version}"` };
}

/** Looks an idempotency key up in the ERP: what the first request with it was answered, or null. */
async function lookUpKey(base: string, key: string): Promise<{ id: string; version: string } | null> {
  const r = await erp(base, "GET", `/idempotency/${encodeURIComponent(key)}`);
  if (r.status === 404) return null;
  return referenceOf(r, `idempotency lookup of ${key}`);
}

/** The application as it is now, parsed like the fact so that the two compare field by field. */
async function liveApplication(s: State): Promise<LiveRecord> {
  const { rec, etag } = await readRecord(baseOf(s), `/applications/${encodeURIComponent(s.application!.value.applicationId!)}`);
  return { version: etag, record: Application.parse(rec.data) };
}

export default defineWorkflow({
  name: "supplier-onboarding",
  version: 1,
  state,
  input: z.object({
    applicationId: z.string().min(1).describe("The supplier application to onboard, e.g. APP-0000"),
    erpUrl: z.string().url().optional().describe("The ERP's address; left out, $ERP_URL (the ERP stand-in task sets it)"),
  }),
  // One case file per case: cases/APP-0000.casefile beside this file.
  caseId: (input: { applicationId: string }) => input.applicationId,
  start: "readDocuments",
  executors: {
    readDocuments: loader<State>({
      owns: ["application"],
      description: "Reads the supplier's application and documents from the ERP",
      async run(ctx) {
        const input = ctx.message as Input;
        const base = erpBase(input);
        const path = `/applications/${encodeURIComponent(input.applicationId)}`;
        const { rec, etag } = await readRecord(base, path);
        ctx.fact(
          "application",
          { ...Application.parse(rec.data), applicationId: input.applicationId },
          { source: `${base}${path}`, sourceVersion: etag },
        );
        return "read";
      },
    }),

    checkTaxNumber: loader<State>({
      reads: ["application"],
      owns: ["taxCheck"],
      description: "Looks the tax number up in the tax registry",
      async run(ctx) {
        const base = baseOf(ctx.state);
        const taxNumber = ctx.state.application!.value.taxNumber;
        const path = `/tax-registry/${encodeURIComponent(taxNumber)}`;
        const r = await erp(base, "GET", path);
        if (r.status === 404) {
          // An unknown number is a fact too: the registry said so, at this moment.
          ctx.fact("taxCheck", { taxNumber, status: "not_found" }, { source: `${base}${path}`, sourceVersion: "404" });
        } else if (r.status === 200) {
          const data = (r.body as ErpRecord).data;
          ctx.fact("taxCheck", TaxRegistration.parse({ ...data, taxNumber }), { source: `${base}${path}`, sourceVersion: r.etag });
        } else throw new Error(`tax registry answered ${r.status} for ${taxNumber}`);
        return "checked";
      },
    }),

    review: agent<State>({
      reads: ["application", "taxCheck"],
      description: "Proposes whether to onboard the supplier, and on which payment terms",
      proposal: Proposal,
      model: { model: "gpt-4o-mini", params: { temperature: 0 } },
      budget: { soft: 2000, hard: 6000 },
      context: (s, _message, rules) => [
        {
          role: "system",
          content:
            "You review supplier onboarding applications. Choose one action: onboard, reject or escalate, and the payment terms in days. " +
            'Cite the facts you relied on by name. Answer JSON: {"action", "reason", "facts", "paymentTermsDays"}.' +
            (rules.length
              ? "\nBusiness rules in force:\n" +
                rules.map((r) => `- ${r.statement} (${JSON.stringify(r.value)}; confirmed by ${r.confirmedBy})`).join("\n")
              : ""),
        },
        {
          role: "user",
          content: [
            `Fact "application" (source ${s.application!.provenance.source}, version ${s.application!.provenance.sourceVersion}):`,
            JSON.stringify(s.application!.value),
            `Fact "taxCheck" (source ${s.taxCheck!.provenance.source}, version ${s.taxCheck!.provenance.sourceVersion}):`,
            JSON.stringify(s.taxCheck!.value),
          ].join("\n"),
        },
      ],
    }),

    decide: commit<State>({
      reads: ["application", "taxCheck"],
      owns: ["decision"],
      description: "Checks the tax registration and the payment-terms policy",
      rules: {
        taxNumberRegistered: ({ proposal, state: s }) => {
          if (proposal.action !== "onboard") return { ok: true, message: "not an onboarding" };
          const t = s.taxCheck!.value;
          if (t.status !== "active")
            return { ok: false, message: `tax number ${t.taxNumber} is ${t.status} in the registry`, onFail: "reject" };
          return t.name === s.application!.value.legalName
            ? { ok: true, message: `tax number ${t.taxNumber} is registered to ${t.name}` }
            : { ok: false, message: `tax number ${t.taxNumber} is registered to "${t.name}", not "${s.application!.value.legalName}"` };
        },
        termsWithinPolicy: ({ proposal }) =>
          TERMS_ALLOWED.includes(proposal.paymentTermsDays as number)
            ? { ok: true, message: `${String(proposal.paymentTermsDays)} days is an allowed term` }
            : { ok: false, message: `${String(proposal.paymentTermsDays)} days is not one of ${TERMS_ALLOWED.join(", ")}` },
      },
      apply(outcome, ctx) {
        const terms = outcome.proposal?.paymentTermsDays as number | undefined;
        ctx.write("decision", { verdict: outcome.verdict, reason: outcome.reason, paymentTermsDays: terms });
        return { verdict: outcome.verdict };
      },
    }),

    createSupplier: effect<State>({
      reads: ["application", "decision"],
      owns: ["supplier"],
      description: "Creates the supplier in the ERP",
      intent: (s) => {
        const a = s.application!.value;
        return {
          action: "create supplier",
          target: "erp:suppliers",
          payload: {
            legalName: a.legalName,
            taxNumber: a.taxNumber,
            country: a.country,
            address: a.address,
            applicationId: a.applicationId ?? null,
            erp: baseOf(s),
          },
          // The supplier is created under this name and tax number: if either changed, the
          // registry check and the decision were about someone else.
          reliesOn: { legalName: a.legalName, taxNumber: a.taxNumber, country: a.country },
          basis: { version: s.application!.provenance.sourceVersion, record: withoutId(a) },
        };
      },
      check: (_intent, ctx) => liveApplication(ctx.state),
      async act(intent) {
        // A create has no version to match; the idempotency key makes a repeat return the first supplier.
        const { erp: base, ...supplier } = intent.payload as Record<string, unknown>;
        return referenceOf(await erp(String(base), "POST", "/suppliers", { body: supplier, key: intent.key }), "create supplier");
      },
      reconcile: (intent) => lookUpKey(baseFromPayload(intent.payload), intent.key),
      done(reference, ctx) {
        ctx.write("supplier", Ref.parse(reference));
        return "created";
      },
    }),

    requestBankDetails: effect<State>({
      reads: ["application", "supplier"],
      owns: ["bankRequest"],
      description: "Asks the supplier for its bank details",
      intent: (s) => {
        const a = s.application!.value;
        return {
          action: "request bank details",
          target: "erp:bank-requests",
          payload: { supplierId: s.supplier!.id, email: a.contactEmail, erp: baseOf(s) },
          reliesOn: { contactEmail: a.contactEmail },
          basis: { version: s.application!.provenance.sourceVersion, record: withoutId(a) },
        };
      },
      check: (_intent, ctx) => liveApplication(ctx.state),
      async act(intent, ctx) {
        const p = intent.payload as { supplierId: string; email: string };
        return referenceOf(
          await erp(baseOf(ctx.state), "POST", "/bank-requests", { body: { supplierId: p.supplierId, email: p.email }, key: intent.key }),
          "bank request",
        );
      },
      reconcile: (intent) => lookUpKey((intent.payload as { erp: string }).erp, intent.key),
      done(reference, ctx) {
        ctx.write("bankRequest", Ref.parse(reference));
        return "requested";
      },
    }),

    setPaymentTerms: effect<State>({
      reads: ["application", "supplier", "decision"],
      owns: ["paymentTerms"],
      description: "Sets the supplier's payment terms (a conditional write on its version)",
      intent: (s) => {
        const a = s.application!.value;
        return {
          action: "set payment terms",
          target: `erp:suppliers/${s.supplier!.id}`,
          payload: { supplierId: s.supplier!.id, paymentTermsDays: s.decision!.paymentTermsDays ?? 30, erp: baseOf(s) },
          // Terms are agreed with this legal entity: a supplier record renamed or re-registered
          // since it was created is not the one the decision was about.
          reliesOn: { legalName: a.legalName, taxNumber: a.taxNumber },
        };
      },
      async check(intent, ctx) {
        const { rec, etag } = await readRecord(
          baseOf(ctx.state),
          `/suppliers/${encodeURIComponent((intent.payload as { supplierId: string }).supplierId)}`,
        );
        return { version: etag, record: rec.data as LiveRecord["record"] };
      },
      async act(intent, ctx) {
        const p = intent.payload as { supplierId: string; paymentTermsDays: number };
        const r = await erp(baseOf(ctx.state), "PATCH", `/suppliers/${encodeURIComponent(p.supplierId)}`, {
          body: { paymentTermsDays: p.paymentTermsDays },
          key: intent.key,
          ifMatch: intent.expectedVersion,
        });
        if (r.status === 412) {
          const current = (r.body as { current?: ErpRecord }).current;
          throw new PreconditionFailedError(
            `supplier ${p.supplierId} changed after the check`,
            current ? { version: `"v${current.version}"`, record: current.data as LiveRecord["record"] } : undefined,
          );
        }
        return referenceOf(r, "set payment terms");
      },
      reconcile: (intent) => lookUpKey((intent.payload as { erp: string }).erp, intent.key),
      done(reference, ctx) {
        ctx.write("paymentTerms", Ref.parse(reference));
        return "terms set";
      },
    }),

    finish: code<State>({
      reads: ["application", "supplier", "bankRequest", "paymentTerms"],
      description: "Records the onboarding",
      run(ctx) {
        const s = ctx.state;
        ctx.yield({
          application: s.application!.value.applicationId ?? null,
          outcome: "onboarded",
          supplier: s.supplier!.id,
          bankRequest: s.bankRequest!.id,
          terms: s.paymentTerms!.version,
        });
      },
    }),

    close: code<State>({
      reads: ["application", "decision"],
      description: "Records an application that was not onboarded",
      run(ctx) {
        ctx.yield({
          application: ctx.state.application!.value.applicationId ?? null,
          outcome: `not onboarded (${ctx.state.decision!.verdict})`,
          reason: ctx.state.decision!.reason,
        });
      },
    }),
  },
  edges: [
    edge("readDocuments", "checkTaxNumber"),
    edge("checkTaxNumber", "review"),
    edge("review", "decide"),
    edge("decide", "createSupplier", { when: (m) => (m as { verdict: string }).verdict === "accepted", label: "accepted" }),
    edge("decide", "close", { when: (m) => (m as { verdict: string }).verdict !== "accepted", label: "not accepted" }),
    edge("createSupplier", ["requestBankDetails", "setPaymentTerms"]),
    edge(["requestBankDetails", "setPaymentTerms"], "finish"),
  ],
});

/** The application's own fields: the fact adds the id it was read under, which the ERP record lacks. */
function withoutId(a: z.infer<typeof Application> & { applicationId?: string }): LiveRecord["record"] {
  const { applicationId: _id, ...rest } = a;
  return rest;
}

function baseFromPayload(payload: unknown): string {
  const p = payload as { erp?: string };
  if (!p.erp) throw new Error("intent payload carries no ERP address");
  return p.erp;
}
