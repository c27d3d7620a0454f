import type { TaskRecord } from '../../generated';
import type { ReadyQueue } from './ready-queue';

/**
 * Takes out the tasks a service's attempt (`attempt` or earlier) let go that have not left the
 * ManagerScheduler yet (queued for a pilot, or parked): they must wait for it again (letting
 * them go again gives them the new endpoint). A rare event, so a walk of the queues is fine.
 */
export function takeReleasedBy(
  service: string,
  attempt: number,
  ready: ReadyQueue,
  parked: Map<string, TaskRecord[]>,
  parkedSince: Map<string, number>,
): TaskRecord[] {
  const by = (t: TaskRecord): boolean => (t.readyOf?.[service] ?? Infinity) <= attempt;
  const taken: TaskRecord[] = [];
  if (ready.size > 0) ready.visit((t) => (by(t) ? (taken.push(t), 'take') : 'keep'));
  for (const [pilot, list] of parked) {
    const keep = list.filter((t) => !by(t) || (taken.push(t), parkedSince.delete(t.uid), false));
    if (keep.length === 0) parked.delete(pilot);
    else parked.set(pilot, keep);
  }
  return taken;
}
