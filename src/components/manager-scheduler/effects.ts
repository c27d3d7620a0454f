import type { StageEffects } from '../shared/transition';

/** Tasks go on to the ManagerInputStager, each with `pilot` set. */
export interface ManagerSchedulerEffects extends StageEffects {
  /**
   * Only final states are notified (the simulator without a Profile, which records nothing
   * else): the core moves tasks through TMGR_SCHEDULING and TMGR_STAGING_INPUT_PENDING without
   * making their notifications. Unset in a run: every transition is notified.
   */
  readonly finalOnly?: boolean;
}
