import type { TaskRecord } from '../../generated';
import type { StageEffects } from '../shared/transition';

export interface AgentInputStagerEffects extends StageEffects {
  /** Creates each task's sandbox (with task.json); results come back through onStaged. */
  stage(tasks: TaskRecord[]): void;
}
