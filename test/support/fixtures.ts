import type { PilotRecord } from '../../src/components/pilot-launcher/pilot-record';
import type { Notification, TaskDescription, TaskRecord } from '../../src/generated';
import type { PilotState } from '../../src/states/pilot-model';
import type { TaskState } from '../../src/states/task-model';

export type TaskOverrides = Partial<Omit<TaskRecord, 'state' | 'description'>> & {
  description?: Partial<TaskDescription>;
};

/**
 * A task record as a component receives it: `taskIn('AGENT_SCHEDULING_PENDING', { uid: 't2',
 * description: { coresPerRank: 4 } })`. The description is merged over `/bin/true`.
 */
export function taskIn(state: TaskState, overrides: TaskOverrides = {}): TaskRecord {
  const { description, ...rest } = overrides;
  return {
    uid: 't1',
    attempt: 1,
    session: 's1',
    ...rest,
    state,
    description: { executable: '/bin/true', ...description },
  };
}

/** A pilot record as the PilotLauncher receives it (4 cores, no GPUs unless overridden). */
export function pilotIn(
  state: PilotState,
  overrides: Partial<Omit<PilotRecord, 'state'>> = {},
): PilotRecord {
  return {
    uid: 'p1',
    session: 's1',
    description: { resource: 'local' },
    cores: 4,
    gpus: 0,
    sandbox: '/sandbox/p1',
    ...overrides,
    state,
  };
}

/** One line per notify call, as the recorders write it: `notify t1 A, t2 B`. */
export function notifyLine(ns: readonly Notification[]): string {
  return `notify ${ns.map((n) => `${n.uid} ${n.state}`).join(', ')}`;
}

/** One line per task hand-over: `<verb> t1, t2`. */
export function uidsLine(verb: string, tasks: readonly { uid: string }[]): string {
  return `${verb} ${tasks.map((t) => t.uid).join(', ')}`;
}
