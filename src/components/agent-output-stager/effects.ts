import type { TaskRecord } from '../../generated';
import type { StagingStep } from '../shared/staging-paths';
import type { StageEffects } from '../shared/transition';

export interface AgentOutputStagerEffects extends StageEffects {
  /** Reads the tails of each task's stdout and stderr; results come back through onCollected. */
  collect(tasks: TaskRecord[]): void;
  /**
   * Performs every output step of each task, whatever fails; results come back through
   * onOutputStaged, per task as each is done.
   */
  stageOutput(work: { uid: string; steps: StagingStep[] }[]): void;
  /** Removes each directory, in the background, if it is empty (a task's own); else leaves it. */
  removeIfEmpty(dirs: string[]): void;
}
