/**
 * The batch validation every CaseStore shares lives beside the store port in the engine
 * (src/engine/storeBatch.ts), so that the stores outside this folder (src/pgstore/) accept and
 * refuse exactly the same batches without importing the case file. Re-exported for this folder.
 */
export * from "../engine/storeBatch";
