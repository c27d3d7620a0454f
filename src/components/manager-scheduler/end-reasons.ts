import type { Reason } from '../../generated';
import { COMPONENTS } from '../../states/task-model';
import { reason } from '../shared/reasons';
import type { Unmet } from './dependencies';

const ME = COMPONENTS.managerScheduler;

/** Why the ManagerScheduler ends a task whose dependency can never hold (E_DEPENDENCY). */
export function unmetReason(u: Unmet): Reason {
  const how = u.ended === 'DONE' ? 'ended DONE' : `ended ${u.ended}`;
  return reason(
    'E_DEPENDENCY',
    `dependency ${u.dependency.task} ${how}, so its condition '${u.dependency.on}' can never hold`,
    ME,
    { dependency: u.dependency.task, on: u.dependency.on, ended: u.ended },
  );
}

/** Every pilot a task could go to has ended (`gone`: their final states). */
export function noPilotLeft(
  endedAdded: ReadonlySet<string>,
  gone: ReadonlyMap<string, string>,
): Reason {
  const ended = [...endedAdded].map((uid) => `${uid} (${gone.get(uid)})`);
  return reason(
    'E_NO_PILOT',
    `every pilot the task could go to has ended: ${ended.join(', ')}; add a live pilot to run such tasks`,
    ME,
    { pilots: [...endedAdded] },
  );
}

export function pilotCanceled(pilot: string): Reason {
  const why = `pinned pilot '${pilot}' was canceled before the task could run there`;
  return reason('E_CANCELED', why, ME, { pilot });
}
