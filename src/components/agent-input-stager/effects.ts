import type { TaskRecord } from '../../generated';
import type { StagingStep } from '../shared/staging-paths';
import type { StageEffects } from '../shared/transition';

export interface AgentInputStagerEffects extends StageEffects {
  /** Creates each task's sandbox (task.json in it with agent.taskJson); results come back through onStaged. */
  stage(tasks: TaskRecord[]): void;
  /**
   * Performs each task's input steps in order, stopping at the first failure; results come
   * back through onInputStaged, per task as each is done.
   */
  stageInput(work: { uid: string; steps: StagingStep[] }[]): void;
}
