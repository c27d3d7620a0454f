// What the page measures of itself, for the browser tests and `npm run bench -- dashboard`:
// read from `window.pilotfishDashboard` (times in ms).

export interface PagePerf {
  /** performance.now() when the tasks view first showed rows, since the page was loaded. */
  tasksPaintedMs?: number;
  /** For each row repainted by an event: from the notification's own time to the repaint. */
  updatesMs: number[];
  /** For each row repainted by an event: from the event's arrival in the page to the repaint. */
  repaintMs: number[];
}

declare global {
  interface Window {
    pilotfishDashboard: PagePerf;
  }
}

export const perf: PagePerf = (window.pilotfishDashboard = { updatesMs: [], repaintMs: [] });

/** Calls `fn` once what was just changed has been painted (the frame after the next one). */
export function afterPaint(fn: () => void): void {
  requestAnimationFrame(() => requestAnimationFrame(fn));
}
