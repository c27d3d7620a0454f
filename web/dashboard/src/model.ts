// The task state model, from the project's own data (src/states): the same order and finals
// the server reconstructs histories by.
import { FINAL_TASK_STATES, TASK_STATES, type TaskState } from '../../../src/states/task-model';

export { TASK_STATES, type TaskState };

const RANK = new Map<string, number>(TASK_STATES.map((st, i) => [st, i]));
const FINAL = new Set<string>(FINAL_TASK_STATES);

export function isFinal(state: string): boolean {
  return FINAL.has(state);
}

/**
 * Whether a notification (state, attempt) moves a task shown at (state, attempt) on: a newer
 * attempt, or a later state of the same one that is not after a final state. Notifications
 * arrive out of order; an older one is ignored, as the server's tracker ignores it.
 */
export function movesOn(
  shown: { state: string; attempt: number },
  n: { state: string; attempt: number },
): boolean {
  if (n.attempt !== shown.attempt) return n.attempt > shown.attempt;
  if (isFinal(shown.state)) return false;
  return (RANK.get(n.state) ?? -1) > (RANK.get(shown.state) ?? -1);
}

/** States before the task's own command runs, the one it runs in, and the ends: for the counts. */
export function phaseOf(
  state: string,
): 'pending' | 'running' | 'done' | 'failed' | 'canceled' | 'finishing' {
  if (state === 'DONE') return 'done';
  if (state === 'FAILED') return 'failed';
  if (state === 'CANCELED') return 'canceled';
  const r = RANK.get(state) ?? 0;
  const exec = RANK.get('AGENT_EXECUTING')!;
  return r < exec ? 'pending' : r === exec ? 'running' : 'finishing';
}
