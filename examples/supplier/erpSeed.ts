/**
 * The records the supplier example's ERP stand-in starts with: applications with their
 * documents, and the tax registry. `supplierSeed(n)` makes n applications for the kill test;
 * every tenth one carries a tax number the registry does not know, so the commit step rejects
 * it and no effect may happen for it.
 */
type Seed = Record<string, Record<string, Record<string, unknown>>>;

export function applicationId(i: number): string {
  return `APP-${String(i).padStart(4, "0")}`;
}

export function hasUnknownTaxNumber(i: number): boolean {
  return i % 10 === 9;
}

export function supplierSeed(n: number): Seed {
  const applications: Seed[string] = {};
  const registry: Seed[string] = {};
  for (let i = 0; i < n; i++) {
    const legalName = `Supplier ${i} GmbH`;
    const taxNumber = `DE${String(100000000 + i * 7919).slice(0, 9)}`;
    applications[applicationId(i)] = {
      legalName,
      taxNumber,
      country: "DE",
      address: `Hafenstrasse ${i + 1}, 20457 Hamburg`,
      contactEmail: `ap${i}@supplier${i}.example`,
      requestedTermsDays: 30,
      documents: [
        { kind: "registration", text: `Handelsregister extract: ${legalName}, registered office Hamburg, VAT ID ${taxNumber}.` },
        { kind: "letter", text: `We would like to supply pallets and crates; our standard terms are 30 days net.` },
      ],
    };
    if (!hasUnknownTaxNumber(i)) registry[taxNumber] = { name: legalName, status: "active" };
  }
  return { applications, "tax-registry": registry };
}
