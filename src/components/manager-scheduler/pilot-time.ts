import type { Reason, TaskRecord } from '../../generated';
import { COMPONENTS } from '../../states/task-model';
import { reason } from '../shared/reasons';
import { sizeOf, type PilotRoom } from './pilot-room';

const ME = COMPONENTS.managerScheduler;

/**
 * E_NO_PILOT_TIME when every pilot that could hold the task is active and drains before it
 * could end (walltimeS from now); undefined while one has the time or may yet (not active).
 */
export function noTimeLeft(
  task: TaskRecord,
  rooms: readonly PilotRoom[],
  now: number,
): Reason | undefined {
  const d = task.description;
  if (d.walltimeS === undefined) return undefined;
  const { cores, gpus } = sizeOf(d);
  // asked of every task at admission: no array nor closure made unless it fails
  let fits = false;
  for (const p of rooms) {
    if (!p.fitsEver(cores, gpus)) {
      if (!p.reported) return undefined; // its size is a guess until its agent reports
      continue;
    }
    if (!p.active || p.hasTime(d.walltimeS, now)) return undefined;
    fits = true;
  }
  if (!fits) return undefined;
  const fit = rooms.filter((p) => p.fitsEver(cores, gpus));
  const left = fit.map((p) => `${p.uid}: ${Math.floor(p.secondsLeft(now) ?? 0)} s`).join('; ');
  return reason(
    'E_NO_PILOT_TIME',
    `task needs ${d.walltimeS} s (walltimeS) and no pilot that can hold it has that long before it drains (${left})`,
    ME,
    {
      walltimeS: d.walltimeS,
      pilots: fit.map((p) => ({ uid: p.uid, secondsLeft: p.secondsLeft(now) ?? null })),
    },
  );
}
