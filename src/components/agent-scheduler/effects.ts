import type { StageEffects } from '../shared/transition';

/** The AgentScheduler only hands tasks on and notifies; slots come back as onReleased events. */
export type AgentSchedulerEffects = StageEffects;
