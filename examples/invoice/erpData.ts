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
      currency: "EUR",
      lines: [{ sku: "PAL-EUR", qty: 100, unitPrice: 10 }],
      total: 1000,
    },
    "PO-7002": {
      number: "PO-7002",
      supplier: "Borealis Crates",
      currency: "EUR",
      lines: [{ sku: "CRT-40", qty: 50, unitPrice: 20 }],
      total: 1000,
    },
  },
};
