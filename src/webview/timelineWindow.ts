/**
 * Which timeline rows exist in the DOM: those in view plus an overscan on each side, so a scroll
 * of a few rows never shows a gap. Pure, so the arithmetic is tested without a browser.
 */
export const ROW_HEIGHT = 30;
export const OVERSCAN = 8;

export function visibleRange(scrollTop: number, viewportHeight: number, count: number): { first: number; last: number } {
  const first = Math.max(0, Math.floor(scrollTop / ROW_HEIGHT) - OVERSCAN);
  const last = Math.min(count, Math.ceil((scrollTop + viewportHeight) / ROW_HEIGHT) + OVERSCAN);
  return { first, last: Math.max(first, last) };
}
