/**
 * A framework agreement as the ERP keeps it: a long text. The workflow reads it whole (a fact) and
 * takes only the price schedule from it (an extract), which is all the agent is shown.
 */
function frameworkAgreement(supplier: string, id: string, prices: Record<string, number>, noticeDays: number): string {
  const clauses = [
    "Scope. The supplier delivers the goods listed in Schedule A to the buyer's sites on call-off orders.",
    "Orders. Each purchase order refers to this agreement and states quantities, site and delivery date.",
    "Delivery. Goods are delivered DAP to the buyer's site; risk passes on signed receipt.",
    "Quality. Goods meet the specification in Schedule B; damaged goods are replaced at the supplier's cost.",
    "Invoicing. One invoice per purchase order, quoting its number; invoices in EUR.",
    "Payment. Payment is due 30 days after receipt of a correct invoice.",
    "Liability. Each party's liability is limited to the value of the orders of the last twelve months.",
    "Term. This agreement runs for two years and renews for one year unless terminated with three months' notice.",
    "Law. The law of Germany applies; the courts of Hamburg have jurisdiction.",
  ];
  const schedule = Object.entries(prices).map(([sku, price]) => `| ${sku} | ${price.toFixed(2)} |`);
  return [
    `Framework supply agreement ${id} between Northwind Logistics GmbH (buyer) and ${supplier} (supplier).`,
    ...clauses.map((c, i) => `${i + 1}. ${c}`),
    `${clauses.length + 1}. Prices. The unit prices in Schedule A are fixed. A price change needs ${noticeDays} days' written notice and applies only to orders placed after the notice period.`,
    "Schedule A: unit prices (EUR, excl. VAT)",
    "| SKU | Unit price |",
    ...schedule,
    "Schedule B: specification. Pallets and crates to EN 13698-1, heat treated to ISPM 15.",
  ].join("\n");
}

/** The records the invoice example's ERP stand-in starts with. */
export const invoiceSeed = {
  invoices: {
    "INV-1001": {
      id: "INV-1001",
      supplier: "Acme Pallets",
      poNumber: "PO-7001",
      currency: "EUR",
      lines: [{ sku: "PAL-EUR", qty: 100, unitPrice: 10.9 }],
      total: 1090,
    },
    "INV-1002": {
      id: "INV-1002",
      supplier: "Borealis Crates",
      poNumber: "PO-7002",
      currency: "EUR",
      lines: [{ sku: "CRT-40", qty: 50, unitPrice: 20.4 }],
      total: 1020,
    },
  },
  "purchase-orders": {
    "PO-7001": {
      number: "PO-7001",
      supplier: "Acme Pallets",
      contract: "FA-2025-014",
      currency: "EUR",
      lines: [{ sku: "PAL-EUR", qty: 100, unitPrice: 10 }],
      total: 1000,
    },
    "PO-7002": {
      number: "PO-7002",
      supplier: "Borealis Crates",
      contract: "FA-2025-022",
      currency: "EUR",
      lines: [{ sku: "CRT-40", qty: 50, unitPrice: 20 }],
      total: 1000,
    },
  },
  contracts: {
    "FA-2025-014": {
      id: "FA-2025-014",
      supplier: "Acme Pallets",
      text: frameworkAgreement("Acme Pallets", "FA-2025-014", { "PAL-EUR": 10, "PAL-IND": 12.5 }, 60),
    },
    "FA-2025-022": {
      id: "FA-2025-022",
      supplier: "Borealis Crates",
      text: frameworkAgreement("Borealis Crates", "FA-2025-022", { "CRT-40": 20, "CRT-60": 26 }, 30),
    },
  },
};
