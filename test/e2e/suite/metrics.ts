/**
 * Measurements a test wants printed by the harness (activation time...). Test files are bundled
 * separately from the suite index, so they meet on globalThis rather than in a module.
 */
const KEY = "__casefileE2eMetrics";

export function recordMetric(name: string, value: string): void {
  const g = globalThis as Record<string, unknown>;
  const metrics = (g[KEY] ??= {}) as Record<string, string>;
  metrics[name] = value;
}

export function takeMetrics(): Record<string, string> {
  const g = globalThis as Record<string, unknown>;
  const metrics = (g[KEY] ?? {}) as Record<string, string>;
  delete g[KEY];
  return metrics;
}
