import { linearModel } from './model';
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
] as const;
export type PilotState = (typeof PILOT_STATES)[number];

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
  { success: 'DONE', failed: 'FAILED', canceled: 'CANCELED' },
);
