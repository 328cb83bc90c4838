/**
 * Milliseconds on a monotonic clock, for how long a step took. process.hrtime rather than
 * performance.now(): the `performance` global loads node:perf_hooks on first use, ~4 ms of a
 * short command's start (measured on `casefile run` of the invoice example, nothing cached).
 */
export function monotonicMs(): number {
  const [s, ns] = process.hrtime();
  return s * 1e3 + ns / 1e6;
}
