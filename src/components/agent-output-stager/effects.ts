import type { TaskRecord } from '../../generated';
import type { StageEffects } from '../shared/transition';

export interface AgentOutputStagerEffects extends StageEffects {
  /** Reads the tails of each task's stdout and stderr; results come back through onCollected. */
  collect(tasks: TaskRecord[]): void;
}
