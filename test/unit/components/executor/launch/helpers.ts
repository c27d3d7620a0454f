import type { BuildLaunchOptions, Launch } from '../../../../../src/components/executor/launch';
import { buildLaunch } from '../../../../../src/components/executor/launch';
import type { TaskDescription, TaskRecord } from '../../../../../src/generated';

export type Slot = NonNullable<TaskRecord['slots']>[number];

export const OPTS: BuildLaunchOptions = {
  mpirun: '/usr/bin/mpirun',
  asRoot: false,
  workDir: '/sb/t1',
};

/** Task t1 in AGENT_EXECUTING_PENDING running /bin/app with awkward arguments. */
export function task(desc: Partial<TaskDescription>, slots?: Slot[]): TaskRecord {
  const t: TaskRecord = {
    uid: 't1',
    attempt: 1,
    state: 'AGENT_EXECUTING_PENDING',
    session: 'sess.1',
    pilot: 'pilot.1',
    sandbox: '/sb/t1',
    description: { executable: '/bin/app', arguments: ['a b', "it's"], ...desc },
  };
  if (slots !== undefined) t.slots = slots;
  return t;
}

export function slot(node: string, cores: number[], gpus: number[] = []): Slot {
  return { node, cores, gpus };
}

export function launched(t: TaskRecord, opts: BuildLaunchOptions = OPTS): Launch {
  const r = buildLaunch(t, opts);
  if (!r.ok) throw new Error(`unexpected failure: ${r.reason.message}`);
  return r.launch;
}

/** The launcher's options before the wrapped command, as written. */
export function launcherOptions(l: Launch): string[] {
  return l.args.slice(0, l.args.indexOf('/bin/sh'));
}

export const BASE_ENV = {
  PF_TASK_ID: 't1',
  PF_PILOT_ID: 'pilot.1',
  PF_SESSION_ID: 'sess.1',
  PF_TASK_SANDBOX: '/sb/t1',
  PF_TASK_ATTEMPT: '1',
};
