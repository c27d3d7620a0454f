import type { Notification } from '../states/notification';
import { COMPONENTS } from '../states/task-model';

const STARTS = [
  'NEW',
  'PMGR_LAUNCHING_PENDING',
  'PMGR_LAUNCHING',
  'PMGR_ACTIVE_PENDING',
  'PMGR_ACTIVE',
] as const;

/**
 * A simulated pilot's notifications for its Profile: it is active from the start (no queue,
 * no agent start-up), and, given `final`, ends at `ts` (its drain starts then too).
 */
export function pilotNotes(uid: string, ts: number, final?: 'DONE'): Notification[] {
  const note = (state: Notification['state'], component: string): Notification => ({
    kind: 'pilot',
    uid,
    attempt: 1,
    state,
    ts,
    component,
  });
  if (final !== undefined) {
    const n = note(final, COMPONENTS.pilotLauncher);
    n.detail = { drainStarted: ts };
    return [n];
  }
  const out = STARTS.map((s, i) =>
    note(s, i === 0 ? COMPONENTS.pilotManager : COMPONENTS.pilotLauncher),
  );
  out[out.length - 1]!.detail = { jobStarted: ts };
  return out;
}
