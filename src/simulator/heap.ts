import { setFlagsFromString } from 'node:v8';

/**
 * How far V8 lets the old generation grow past what survived its last full collection while a
 * simulation runs: 50%. V8's own choice, on a machine with a few GiB or more, is up to 300% when
 * the old generation fills fast, and a simulation fills it fast: most of its garbage is per-task
 * state that lives through a task's wait in the AgentScheduler and its run (so it is promoted,
 * then dies), ~2.6 KB per task, against a live heap of 200 to 280 MiB at 1,000,000 tasks. With
 * V8's choice the heap grew to 1.25 GiB before it collected; with 50% it peaked at 594 MiB (739
 * committed), for 15 more full collections, mostly concurrent marking; 75% gave 660 MiB and a
 * peak RSS that varied more run to run (docs/performance.md).
 */
export const SIM_HEAP_GROWING_PERCENT = 50;

/** Whether node was started with its own heap growth, which then wins (NODE_OPTIONS refuses it). */
function ownGrowth(): boolean {
  return process.execArgv.some((a) => /^--heap[-_]growing[-_]percent\b/.test(a));
}

/**
 * Runs `fn` with the heap growth of SIM_HEAP_GROWING_PERCENT, then gives V8 back its own choice
 * (0: dynamic). V8 reads the flag each time it sets the next collection's limit, so setting it
 * now takes effect at once. A process started with its own --heap-growing-percent keeps it.
 */
export function withSimulationHeap<T>(fn: () => T): T {
  if (ownGrowth()) return fn();
  setFlagsFromString(`--heap-growing-percent=${SIM_HEAP_GROWING_PERCENT}`);
  try {
    return fn();
  } finally {
    setFlagsFromString('--heap-growing-percent=0');
  }
}
