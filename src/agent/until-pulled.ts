import type { UpdateWorker } from '../updater/update-worker';

/** Notifications (and refused messages) the workers have pulled from the updates queue. */
function pulled(workers: readonly UpdateWorker[]): number {
  return workers.reduce((n, w) => n + w.stats().received + w.stats().invalid, 0);
}

/**
 * Calls `reached` once the UpdateWorkers together have pulled `count` notifications, on their
 * onPulled events (no polling). Returns the cancel, for a caller that stops waiting first.
 */
export function untilPulled(
  workers: readonly UpdateWorker[],
  count: number,
  reached: () => void,
): () => void {
  if (pulled(workers) >= count) {
    reached();
    return () => undefined;
  }
  const check = (): void => {
    if (pulled(workers) < count) return;
    cancel();
    reached();
  };
  const offs = workers.map((w) => w.onPulled(check));
  const cancel = (): void => {
    for (const off of offs) off();
  };
  return cancel;
}
