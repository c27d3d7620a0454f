import type { StageEffects } from '../shared/transition';

/** Tasks go on to the ManagerInputStager, each with `pilot` set. */
export type ManagerSchedulerEffects = StageEffects;
