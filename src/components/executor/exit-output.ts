import type { TaskRecord } from '../../generated';
import type { ExitedEvent } from './effects';

/**
 * Output 'stream': the helper read the task's tails from its pipes (there are no files to read
 * them from), and says how many bytes its cap dropped and what a full disk cost it.
 */
export function takeStreamOutput(
  task: TaskRecord,
  output: NonNullable<ExitedEvent['output']>,
): void {
  task.stdout = output.stdout;
  task.stderr = output.stderr;
  if (output.dropped !== undefined) task.outputDropped = output.dropped;
  // a warning, not a failure: the task's own writes succeeded (into a pipe)
  if (output.lost !== undefined) task.outputLost = output.lost;
}
