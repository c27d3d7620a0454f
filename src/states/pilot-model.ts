import type { PilotState } from '../generated';
import { FINALS, FINAL_STATES, isFinalState, linearModel } from './model';

export type { PilotState } from '../generated';
import { COMPONENTS } from './task-model';

export const PILOT_STATES = [
  'NEW',
  'PMGR_LAUNCHING_PENDING',
  'PMGR_LAUNCHING',
  'PMGR_ACTIVE_PENDING',
  'PMGR_ACTIVE',
  'DONE',
  'FAILED',
  'CANCELED',
] as const satisfies readonly PilotState[];
export const FINAL_PILOT_STATES = FINAL_STATES satisfies readonly PilotState[];
/** DONE, FAILED or CANCELED: a pilot's last word. */
export type FinalPilotState = (typeof FINAL_PILOT_STATES)[number];

/** True for DONE, FAILED and CANCELED. */
export function isFinalPilotState(state: PilotState): state is FinalPilotState {
  return isFinalState(state);
}

/** The launcher holds a pilot from PMGR_LAUNCHING_PENDING on: it alone sees the job's life. */
export const PILOT_MODEL = linearModel<PilotState>(
  'pilot',
  [
    { state: 'NEW', holder: COMPONENTS.pilotManager },
    { state: 'PMGR_LAUNCHING_PENDING', holder: COMPONENTS.pilotLauncher },
    { state: 'PMGR_LAUNCHING', holder: COMPONENTS.pilotLauncher },
    { state: 'PMGR_ACTIVE_PENDING', holder: COMPONENTS.pilotLauncher },
    { state: 'PMGR_ACTIVE', holder: COMPONENTS.pilotLauncher },
  ],
  FINALS,
);
